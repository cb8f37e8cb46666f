"""Writing a file so that a reader sees the old one or the new one, never half of either.

The one atomic write of traceana: the analysis cache and the batch table both go through it.
The bytes go to ``.<name>.<pid>.tmp`` beside the target, then a rename replaces the target;
a process killed mid-write leaves only that temporary, which ``stale_temporaries`` finds by
its pid (a batch removes those of dead processes before it writes).
"""

from __future__ import annotations

import contextlib
import os
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
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


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
