"""One batch at a time on a table: a lock file beside it, naming the batch that holds it.

Two batches on one table would each read the old table, analyse their own runs and write the
old rows plus theirs: the last write wins, half the runs are lost, and both exit 0. So a batch
takes ``<table>.lock`` before it reads the table and keeps it until it has written the table
for the last time; a second batch on the same table refuses at once with one line naming the
holder (it does not wait: a batch may run for hours, and a CI job that hangs silently is worse
than one that says why it stopped). Reading the table (``traceana trend``) takes no lock: the
table is only ever replaced whole.

The lock file is created with ``O_CREAT | O_EXCL`` (exactly one batch can create it) and holds
the holder's pid, host and start time as JSON. The holder also keeps an ``flock`` on it, which
the kernel releases when the holder dies however it dies: a lock whose ``flock`` is free and
whose pid no longer runs on this host is stale (a batch SIGKILLed, or a power loss) and is
taken over, with a note. A lock held on another host is never taken over: its pid cannot be
checked from here. The lock is removed on every way out of the batch that Python sees
(the end, an error, Ctrl-C, SIGTERM, which ``traceana batch`` turns into an exception).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from trace_analyzer.errors import InputError

# A lock file with no holder written in it yet is a batch between creating the file and
# writing its pid (microseconds); after this long it is one that died there.
STARTING_S = 10.0
_ATTEMPTS = 5  # a lock that keeps being released and retaken under us: give up, say so
_CREATE = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def lock_path(table: Path) -> Path:
    """Return the lock file of the batch table ``table``: ``<table>.lock`` beside it."""
    return table.with_name(table.name + ".lock")


@contextlib.contextmanager
def table_lock(table: Path) -> Iterator[list[str]]:
    """Hold the lock of ``table`` for the body; yield the notes taking it gave (a stale
    lock taken over). Another batch holding it is an InputError in one line.

    A folder where no lock can be created (read-only, missing) is no lock: no batch can
    write the table there either, and writing the table says why when it must.
    """
    path = lock_path(table)
    notes: list[str] = []
    fd = _acquire(path, table, notes)
    try:
        yield notes
    finally:
        if fd is not None:
            _release(path, fd)


def _acquire(path: Path, table: Path, notes: list[str]) -> int | None:
    """Return the descriptor of the lock file, now ours, with our pid written in it."""
    for _ in range(_ATTEMPTS):
        try:
            fd = os.open(path, _CREATE, 0o666)
        except FileExistsError:
            taken = _take_stale(path, table, notes)
            if taken is None:
                continue  # released, or taken by another batch, meanwhile: try again
            fd = taken
        except OSError:
            return None
        else:
            # blocks only while another batch looks at the file it found just created
            fcntl.flock(fd, fcntl.LOCK_EX)
        _write_holder(fd)
        return fd
    raise InputError(table, f"cannot take the lock {path}: it keeps changing; rerun the batch")


def _take_stale(path: Path, table: Path, notes: list[str]) -> int | None:
    """Return the descriptor of a stale lock at ``path``, now ours; None when it went away
    meanwhile; raise an InputError when a batch holds it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:  # a link, a folder: not a lock traceana wrote
        raise InputError(
            table, f"{path} is not a traceana lock ({e.strerror}); remove it and rerun"
        ) from e
    try:
        holder = _holder(fd)
        if not _stale(fd, holder):
            raise InputError(table, _in_use(path, holder))
        if not _same_file(path, fd):  # released and removed before we locked it
            os.close(fd)
            return None
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    notes.append(f"{path}: took over the lock of a batch that no longer runs ({_who(holder)})")
    return fd


def _stale(fd: int, holder: dict[str, Any] | None) -> bool:
    """Return whether the lock open at ``fd`` belongs to no running batch (its flock is then
    ours). Only a lock of this host can be: the pid of another host cannot be checked."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # its holder runs
    if holder is None:  # no pid written yet: starting, unless it has been a while
        return time.time() - os.fstat(fd).st_mtime > STARTING_S
    return holder["host"] == socket.gethostname() and not _alive(holder["pid"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process (or a pid we cannot check): assume it runs
    return True


def _same_file(path: Path, fd: int) -> bool:
    """Return whether ``path`` is still the file open at ``fd``."""
    try:
        st, held = os.stat(path, follow_symlinks=False), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


def _write_holder(fd: int) -> None:
    started = datetime.now(UTC).isoformat(timespec="seconds")
    data = {"pid": os.getpid(), "host": socket.gethostname(), "started": started}
    os.ftruncate(fd, 0)
    os.pwrite(fd, orjson.dumps(data) + b"\n", 0)


def _holder(fd: int) -> dict[str, Any] | None:
    """Return the holder a lock file names (pid, host, started), or None if it names none."""
    try:
        doc = orjson.loads(os.pread(fd, 4096, 0))
    except (orjson.JSONDecodeError, OSError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("pid"), int):
        return None
    if not isinstance(doc.get("host"), str):
        return None
    return doc


def _who(holder: dict[str, Any] | None) -> str:
    if holder is None:
        return "a batch that has not written its pid yet"
    since = f", since {holder['started']}" if isinstance(holder.get("started"), str) else ""
    return f"pid {holder['pid']} on {holder['host']}{since}"


def _in_use(path: Path, holder: dict[str, Any] | None) -> str:
    return (
        f"another traceana batch is writing this table ({_who(holder)}); wait for it to "
        f"finish, or remove {path} if it no longer runs"
    )


def _release(path: Path, fd: int) -> None:
    """Remove the lock (while it is still ours), then let go of its flock."""
    try:
        if _same_file(path, fd):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    finally:
        os.close(fd)


__all__ = ["STARTING_S", "lock_path", "table_lock"]
