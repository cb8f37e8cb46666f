"""A Kineto trace's compiled scan begun before polars is loaded (docs/architecture.md, "Work at
the grain it varies").

A command spends its first 0.15 s importing polars and the analyses, and the compiled scanner
(``_kscan``, which lets the interpreter go while it scans) needs neither: ``begin`` starts the
scan of the trace a command was given in a thread, while the main thread imports, and
``kineto_native.native_scan`` takes the scan made (``taken``) instead of making it again. Only
where nothing can differ from the scan made in line: a plain ``.json`` file (not gzip, not in
an archive) of at most ``AHEAD_BYTES``, unchanged since (its device, inode, size and times),
read with the native scan chosen (``TRACEANA_KINETO_SCAN``). A scan that fails gives its
error to the reader, as the scan in line would have met it. Imports no polars.

A run the cache then serves never takes its scan: the thread's work (at most a second of one
core, on the largest file taken) is lost, and the process exits without waiting for it.
"""

from __future__ import annotations

import os
import stat
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from trace_analyzer.readers.kineto_bytes import Reader, feed

AHEAD_BYTES = 256 << 20  # larger traces are scanned in line (the import is then a small part)
ENV = "TRACEANA_KINETO_SCAN"  # kineto_native.ENV: "native" or unset takes the compiled scan
Key = tuple[str, int, int, int, int, int]
_begun: dict[Key, Future[tuple[dict[str, Any], Any]]] = {}


def begin(path: Path) -> bool:
    """Begin the compiled scan of the Kineto trace ``path`` (or of the one trace of the folder
    ``path``) in a thread, where it is a file ``taken`` can give; whether one was begun."""
    try:
        if os.environ.get(ENV, "").strip().lower() not in ("", "native"):
            return False
        import trace_analyzer.readers._kscan as kscan  # type: ignore[import-not-found]
    except ImportError:  # built without a compiler: nothing to begin
        return False
    file = _the_trace(path)
    key = None if file is None else _key(file)
    if file is None or key is None or key in _begun or key[3] > AHEAD_BYTES:
        return False
    done: Future[tuple[dict[str, Any], Any]] = Future()

    def scan() -> None:
        try:
            scanner = kscan.Scanner()
            with open(file, "rb") as f:
                done.set_result((feed(Reader(f, file, None), scanner), scanner))
        except BaseException as e:  # the reader takes it as the scan in line's
            done.set_exception(e)

    _begun[key] = done
    threading.Thread(target=scan, name="traceana-scan-ahead", daemon=True).start()
    return True


def taken(path: Any) -> Future[tuple[dict[str, Any], Any]] | None:
    """``begin``'s scan of ``path``, once, if the file is the one scanned (else None): its
    result, the top-level keys and the ``_kscan.Scanner``, or the error the scan met, which
    the scan in line would meet too (the same bytes)."""
    key = _key(path) if _begun and isinstance(path, Path) else None
    return None if key is None else _begun.pop(key, None)


def forget() -> None:
    """Let go of the scans begun and not taken (their threads end on their own)."""
    _begun.clear()


def _the_trace(path: Path) -> Path | None:
    """``path`` if it is a ``.json`` file, or the one ``.json`` source of the folder ``path``
    as discovery finds it; else None."""
    try:
        if path.is_file():
            return path if path.name.endswith(".json") else None
        from trace_analyzer.inputs.discover import discover

        files = [s.path for run in discover(path) for s in run.sources]
    except Exception:  # noqa: BLE001 - a path discovery refuses: the command says why
        return None
    if len(files) != 1 or not isinstance(files[0], Path) or not files[0].name.endswith(".json"):
        return None
    return files[0]


def _key(path: Path) -> Key | None:
    """What ``path`` is now: its real path, device, inode, size, modification and change
    times (a regular file only), or None."""
    try:
        st = os.stat(path)
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
