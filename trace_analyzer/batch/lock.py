"""One batch at a time on a table: a lock file beside it, naming the batch that holds it.

Two batches on one table would each read the old table, analyse their own runs and write the
old rows plus theirs: the last write wins, half the runs are lost, and both exit 0. So a batch
takes ``<table>.lock`` before it reads the table and keeps it until it has written the table
for the last time; a second batch on the same table refuses at once with one line naming the
holder (it does not wait: a batch may run for hours, and a CI job that hangs silently is worse
than one that says why it stopped). Reading the table (``traceana trend``) takes no lock: the
table is only ever replaced whole.

The lock is a lease. The file is created with ``O_CREAT | O_EXCL`` (exactly one batch can
create it) and names its holder as JSON: pid, host, start time, and on Linux the boot id, the
pid namespace and the process's start time in clock ticks (``/proc/<pid>/stat`` field 22), which
tell the holder apart from a later process given the same pid. The holder keeps an ``flock``
on it, which the kernel releases however the holder dies, and a daemon thread refreshes its
modification time every ``HEARTBEAT_S`` (the heartbeat) while the batch runs. A lock whose
``flock`` is free is stale when:

- its holder ran on this machine (the same boot id and pid namespace): the pid is dead, or it
  now belongs to a process that started at another time (a reused pid). A holder that still
  runs keeps its lock however long it has not beaten (a batch stopped with SIGSTOP resumes);
- its holder's pid cannot be checked from here (another host, another boot, another pid
  namespace, or a lock without a start time: non-Linux, an earlier traceana): it has had no
  heartbeat for ``STALE_S`` (20 missed beats). An ``flock`` across hosts is not to be trusted
  (NFS mounted ``nolock`` keeps it on each client), so the heartbeat decides there. Its age is
  read against this host's clock: hosts that share a table keep their clocks minutes apart at
  most. A lock without a start time on this machine is stale at once where the ``flock`` is
  real (its holder held it, so a free one means the holder is gone).

Whether ``flock`` does anything on the lock's file system is tried, not assumed: holding it on
one open file description, a second description of the same file takes it too only where it
is a no-op (some FUSE mounts) or unsupported. There two batches may find one stale lock at
once, so a batch that took one over waits ``_SETTLE_S`` and reads the lock back: if another
batch's holder is written there, that batch has it. A stale lock is taken over with a note
saying why. The lock is removed on every way out of the batch that Python sees (the end, an
error, Ctrl-C, SIGTERM, which ``traceana batch`` turns into an exception), its heartbeat
stopped first.

Why hand-made and not ``filelock`` (issue 33; tried with filelock 4.3.2): its ``UnixFileLock``
takes an ``flock`` on whatever file is there and knows nothing of what it holds, so every rule
above (holder, start time, heartbeat, the no-op test) stays here either way. The version built
on it was no shorter (238 lines of code against 233, before any fix) and broke three things: it
cannot say whether this batch created the file, so where ``flock`` is a no-op the first batch
on a table refused itself; it raises ``ENOLCK`` (NFS with no lock daemon), which this code
treats as a no-op ``flock``; and it creates a missing folder. Before the fix of
tox-dev/filelock#591 (reported on 3.29.7) it also opened the file with ``O_TRUNC`` before its
``flock``, so a refused batch erased the holder's name. Its ``SoftFileLease`` writes a record
of its own (not the JSON that earlier traceana locks hold), takes over a holder that still runs
once its heartbeat is old (a batch stopped with SIGSTOP), and counts a lease's age from when
this process first saw it, so a dead host's lock would be taken over only after a 10-minute
wait. tests/batch/test_batch_lock.py and test_batch_lease.py pin each of these.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from trace_analyzer.errors import InputError

HEARTBEAT_S = 30.0  # how often the holder refreshes the lock's modification time
STALE_S = 600.0  # a lock not refreshed for this long (20 beats) has no holder, if unchecked
# A lock file with no holder written in it yet is a batch between creating the file and
# writing its pid (microseconds); after this long it is one that died there.
STARTING_S = 10.0
_SETTLE_S = 0.2  # where flock is a no-op: how long a takeover waits to see it stayed ours
_ATTEMPTS = 5  # a lock that keeps being released and retaken under us: give up, say so
_CREATE = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC


class _Verdict(NamedTuple):
    """What a lock found in place is: stale (its flock is ours then) or held, and why."""

    stale: bool
    why: str
    noop: bool = False  # flock does nothing on its file system


def lock_path(table: Path) -> Path:
    """Return the lock file of the batch table ``table``: ``<table>.lock`` beside it."""
    return table.with_name(table.name + ".lock")


@contextlib.contextmanager
def table_lock(
    table: Path, *, heartbeat_s: float = HEARTBEAT_S, stale_s: float = STALE_S
) -> Iterator[list[str]]:
    """Hold the lock of ``table`` for the body, beating every ``heartbeat_s``; yield the
    notes taking it gave (a stale lock taken over). Another batch holding it is an
    InputError in one line; a lock unchecked for ``stale_s`` seconds has no holder.

    A folder where no lock can be created (read-only, missing) is no lock: no batch can
    write the table there either, and writing the table says why when it must.
    """
    path = lock_path(table)
    notes: list[str] = []
    fd = _acquire(path, table, notes, stale_s)
    stop = _heartbeat(fd, heartbeat_s) if fd is not None else None
    try:
        yield notes
    finally:
        if fd is not None and stop is not None:
            stop()  # before the lock goes: no beat touches a closed descriptor
            _release(path, fd)


def _heartbeat(fd: int, every_s: float) -> Callable[[], None]:
    """Refresh the modification time of the lock open at ``fd`` every ``every_s`` seconds
    from a daemon thread; return the function that stops it and waits for it to end."""
    done = threading.Event()

    def beat() -> None:
        # Signals are the main thread's: one sent while the batch is stopped (SIGSTOP, then
        # SIGINT) goes to whichever thread wakes first, and in this one it would wait for a
        # blocked main thread to notice it.
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        while not done.wait(every_s):
            with contextlib.suppress(OSError):  # a beat missed; the next may land
                os.utime(fd)

    thread = threading.Thread(target=beat, name="traceana-lock-heartbeat", daemon=True)
    thread.start()

    def stop() -> None:
        done.set()
        thread.join()

    return stop


def _acquire(path: Path, table: Path, notes: list[str], stale_s: float) -> int | None:
    """Return the descriptor of the lock file, now ours, with our holder written in it."""
    for _ in range(_ATTEMPTS):
        try:
            fd = os.open(path, _CREATE, 0o666)
        except FileExistsError:
            taken = _take_stale(path, table, notes, stale_s)
            if taken is None:
                continue  # released, or taken by another batch, meanwhile: try again
            return taken
        except OSError:
            return None
        try:  # (the lock is ours, just made: removed if it cannot be written, not left to
            # make the next batch wait for a holder that never comes, as on a full disk)
            # blocks only while another batch looks at the file it found just created
            _flock(fd, fcntl.LOCK_EX)
            _write_holder(fd)
        except BaseException:
            _release(path, fd)
            raise
        return fd
    raise InputError(table, f"cannot take the lock {path}: it keeps changing; rerun the batch")


def _take_stale(path: Path, table: Path, notes: list[str], stale_s: float) -> int | None:
    """Return the descriptor of a stale lock at ``path``, now ours; None when it went away
    or another batch took it meanwhile; raise an InputError when a batch holds it."""
    try:
        fd = os.open(path, _OPEN)
    except FileNotFoundError:
        return None
    except OSError as e:  # a link, a folder: not a lock traceana wrote
        raise InputError(
            table, f"{path} is not a traceana lock ({e.strerror}); remove it and rerun"
        ) from e
    try:
        holder = _holder(fd)
        verdict = _verdict(path, fd, holder, stale_s)
        if not verdict.stale:
            raise InputError(table, _in_use(path, holder, verdict.why))
        if not _same_file(path, fd) or not _kept(fd, verdict.noop):
            os.close(fd)  # released and removed before we locked it, or another took it
            return None
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    notes.append(
        f"{path}: took over the lock of a batch that no longer runs ({_who(holder)}: {verdict.why})"
    )
    return fd


def _kept(fd: int, noop: bool) -> bool:
    """Write our holder into the stale lock at ``fd``; return whether it stays ours. Where
    flock is a no-op another batch may be taking the same lock over: the last to write has
    it, so wait for a write of theirs to land and read the lock back."""
    mine = _write_holder(fd)
    if not noop:
        return True  # our flock keeps every other batch out
    time.sleep(_SETTLE_S)
    return _holder(fd) == mine


def _verdict(path: Path, fd: int, holder: dict[str, Any] | None, stale_s: float) -> _Verdict:
    """Judge the lock open at ``fd`` (module docstring): stale, and its flock ours, or held."""
    if not _flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB):
        return _Verdict(False, f"last heartbeat {_ago(_age(fd))} ago")  # its holder runs
    age = _age(fd)
    if holder is None:  # no pid written yet: starting, unless it has been a while
        return _Verdict(age > STARTING_S, f"nothing written for {_ago(age)}")
    noop = _flock_is_noop(path, fd)
    pid = holder["pid"]
    if _local(holder):
        if not _alive(pid):
            return _Verdict(True, f"pid {pid} no longer runs", noop)
        recorded, now = holder.get("start_ticks"), _start_ticks(pid)
        if isinstance(recorded, int) and now is not None:
            if now != recorded:
                return _Verdict(True, f"pid {pid} is now another process", noop)
            return _Verdict(False, f"pid {pid} runs; last heartbeat {_ago(age)} ago", noop)
        if not noop:
            return _Verdict(True, f"pid {pid} is another process now: its flock is free")
    if age > stale_s:
        return _Verdict(True, f"no heartbeat for {_ago(age)} from {holder['host']}", noop)
    return _Verdict(
        False, f"last heartbeat {_ago(age)} ago; taken over after {_ago(stale_s)} without one"
    )


def _flock(fd: int, how: int) -> bool:
    """Take the flock of ``fd``; return False when another open file description holds it.
    A file system that does not support flock at all is taken as one where it is a no-op."""
    try:
        fcntl.flock(fd, how)
    except BlockingIOError:
        return False
    except OSError:  # ENOLCK, EOPNOTSUPP: no flock here; _flock_is_noop says so too
        return True
    return True


def _flock_is_noop(path: Path, fd: int) -> bool:
    """Return whether flock does nothing on the file system of ``path``, whose flock we hold
    at ``fd``: a second open file description of the same file is refused it where it is
    real, even within one process, and given it where it is a no-op (or unsupported)."""
    try:
        other = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not _same_file(path, fd) or os.fstat(other).st_ino != os.fstat(fd).st_ino:
            return False  # replaced meanwhile: nothing learnt, and the flock is taken as real
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError:
            return True
        return True
    finally:
        os.close(other)


def _local(holder: dict[str, Any]) -> bool:
    """Return whether the holder's pid can be checked from here: the same kernel (boot id)
    and pid namespace; for a lock that names no boot id (non-Linux, an earlier traceana),
    the same host name."""
    boot, mine = holder.get("boot_id"), _boot_id()
    if isinstance(boot, str) and mine is not None:
        return boot == mine and holder.get("pid_ns") == _pid_ns()
    return bool(holder["host"] == socket.gethostname())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process (or a pid we cannot check): assume it runs
    return True


def _start_ticks(pid: int) -> int | None:
    """Return when process ``pid`` started, in clock ticks since boot (Linux: field 22 of
    ``/proc/<pid>/stat``, counted after the command name, which may hold spaces and ``)``);
    None where there is no such file."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        return int(fields[19])  # fields 3 onwards follow the name: 22 is the 20th of them
    except (OSError, IndexError, ValueError):
        return None


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _pid_ns() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _age(fd: int) -> float:
    """Seconds since the lock open at ``fd`` was last written or beaten (never below 0)."""
    return max(0.0, time.time() - os.fstat(fd).st_mtime)


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _same_file(path: Path, fd: int) -> bool:
    """Return whether ``path`` is still the file open at ``fd``."""
    try:
        st, held = os.stat(path, follow_symlinks=False), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


def _write_holder(fd: int) -> dict[str, Any]:
    """Write who holds the lock into it, and return that as ``_holder`` reads it back."""
    pid = os.getpid()
    data = {
        "pid": pid,
        "host": socket.gethostname(),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "boot_id": _boot_id(),
        "pid_ns": _pid_ns(),
        "start_ticks": _start_ticks(pid),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, orjson.dumps(data) + b"\n", 0)
    return data


def _holder(fd: int) -> dict[str, Any] | None:
    """Return the holder a lock file names (pid, host, started, the Linux process identity),
    or None if it names none."""
    try:
        doc = orjson.loads(os.pread(fd, 4096, 0))
    except (orjson.JSONDecodeError, OSError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("host"), str):
        return None
    pid = doc.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None  # 0 or -1 would name a process group to os.kill
    return doc


def _who(holder: dict[str, Any] | None) -> str:
    if holder is None:
        return "a batch that has not written its pid yet"
    since = f", since {holder['started']}" if isinstance(holder.get("started"), str) else ""
    return f"pid {holder['pid']} on {holder['host']}{since}"


def _in_use(path: Path, holder: dict[str, Any] | None, why: str) -> str:
    return (
        f"another traceana batch is writing this table ({_who(holder)}; {why}); wait for it "
        f"to finish, or remove {path} if it no longer runs"
    )


def _release(path: Path, fd: int) -> None:
    """Remove the lock (while it is still ours), then let go of its flock."""
    try:
        if _same_file(path, fd):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    finally:
        os.close(fd)


__all__ = ["HEARTBEAT_S", "STALE_S", "STARTING_S", "lock_path", "table_lock"]
