"""Writing a file so that a reader sees the old one or the new one, never half of either.

The one atomic write of traceana: every file a command writes goes through ``replace`` (a
command's output, its plots, an export, a graph, a summary) or ``write_atomic`` beneath it
(the batch table, the Parquet tables). The bytes go to ``.<name>.<pid>.tmp`` beside the
target, are synced to the disk, then a rename replaces the target: a full disk or a process
killed mid-write leaves the old file as it was and at most that temporary, which
``stale_temporaries`` finds by its pid (a batch removes those of dead processes before it
writes).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path


def temporary_for(target: Path) -> Path:
    """Return the temporary file this process writes ``target`` through."""
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


def write_atomic(target: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` to write a temporary beside ``target``, then rename it over it.

    Any exception (a full disk, a Ctrl-C) removes the temporary and propagates; ``target``
    is then as it was.
    """
    tmp = temporary_for(target)
    try:
        write(tmp)
        _sync(tmp)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _sync(path: Path) -> None:
    """Flush ``path``'s bytes to the disk (a rename after a crash then names whole bytes)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace(
    path: Path, data: bytes | Callable[[Path], object], *, through_links: bool = True
) -> None:
    """Write ``data`` (bytes, or a function that writes the file it is given) as the file
    ``path``, whole or not at all: a regular file (or a new one) is written beside itself,
    synced and renamed over (``write_atomic``), keeping the mode it had. ``through_links``:
    a symbolic link is followed to the file it names (the file the user named); else the link
    itself is replaced and what it names is left alone (a file written beside the one named,
    such as a report's plots). A file that cannot be written now is refused as before
    (PermissionError); anything else (``/dev/stdout``, ``/dev/null``) is written in place."""
    write = data if callable(data) else (lambda tmp: tmp.write_bytes(data))
    try:
        st = os.stat(path) if through_links else os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        write(path)
        return
    target = Path(os.path.realpath(path)) if through_links else path
    regular = st is not None and stat.S_ISREG(st.st_mode)
    if regular and not os.access(target, os.W_OK):
        raise PermissionError(13, os.strerror(13), str(path))

    def written(tmp: Path) -> None:
        write(tmp)
        if regular and st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))

    write_atomic(target, written)


def stale_temporaries(target: Path) -> list[Path]:
    """Return the temporaries of ``target`` left by processes that no longer run."""
    stale = []
    for tmp in target.parent.glob(f".{target.name}.*.tmp"):
        pid = tmp.name[len(target.name) + 2 : -4]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # that process is still running
        except ProcessLookupError:
            stale.append(tmp)
        except (PermissionError, OverflowError, OSError):
            continue
    return stale
