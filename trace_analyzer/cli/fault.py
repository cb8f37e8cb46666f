"""One line, exit 2, when native code ends the process (docs/reliability.md, "Aborts in
native code").

polars aborts the whole process when an allocation fails inside it (on a 55 MB trace under
``ulimit -v`` of 0.5-1.5 GB every failure was such an abort), and a fault in native code is a
signal; Python sees neither, so without this the user reads a Rust message or "Aborted (core
dumped)" and exit 134. (Where polars panics instead, Python sees a ``PanicException``, which
is no ``Exception``: ``panicked`` and ``out_of_memory`` let cli/common.py word it.)

``guard`` hands SIGABRT, SIGSEGV, SIGBUS, SIGILL and SIGFPE to a small C handler
(``_fault.c``) that writes the line kept here and exits 2; ``analysing`` keeps the line naming
the run being read. The handler is the console script's only (``cli.main``): the library,
tests running the CLI in-process and ``--debug`` keep the signals' own behaviour, and batch's
spawned workers start with it unset (a dead worker is their parent's to report). Without the
compiled module (a build without a C compiler) nothing changes: the process ends as before.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import ModuleType
from typing import Any

# What to do when memory ran out (cli/messages.py takes it from here: this module imports
# nothing heavy, since the console script installs it before any command is imported).
MEMORY_ADVICE = (
    "this process may use no more; free memory, raise its limit (ulimit -v), or name a "
    "smaller part of the run"
)
SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGABRT", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE")
)


def panicked(e: BaseException) -> bool:
    """True for a Rust panic that polars raised into Python (pyo3's ``PanicException``,
    which derives from BaseException, so ``except Exception`` passes it by)."""
    return type(e).__name__ == "PanicException"


def out_of_memory(e: BaseException) -> bool:
    """True for a failed allocation: Python's MemoryError, or a panic of polars that says
    so ("Cannot allocate memory to hold CompactString")."""
    return isinstance(e, MemoryError) or (panicked(e) and "allocat" in str(e).lower())


def _native() -> ModuleType | None:
    try:
        from trace_analyzer.cli import _fault  # type: ignore[attr-defined]
    except ImportError:  # built without a C compiler: the signals keep their own behaviour
        return None
    return _fault  # type: ignore[no-any-return]


_FAULT = None  # the compiled module once guard() has installed it


def line(what: str) -> bytes:
    """Return the line the handler writes while ``what`` (a path, shown as ``plain`` text
    shows it) is analysed."""
    text = (
        f"traceana: error: {what}: the process was aborted inside native code (polars "
        f"aborts so when memory runs out; else a fault there); {MEMORY_ADVICE}\n"
    )
    return text.encode("utf-8", "backslashreplace")


def guard() -> bool:
    """Install the handler for ``SIGNALS``; False when the compiled module is absent."""
    global _FAULT
    native = _native()
    if native is None:
        return False
    native.set_message(line("the input"))
    native.install(SIGNALS)
    _FAULT = native
    return True


def analysing(what: object) -> None:
    """Name ``what`` (the run being read or analysed) in the handler's line."""
    if _FAULT is not None:
        from trace_analyzer.render.safe import plain  # imported by then: no cost here

        _FAULT.set_message(line(plain(what)))


# What a thread whose start failed says, where Thread.start() would have waited for ever.
UNSTARTED = "a thread could not start: memory ran out as it started"


def _mark(started: threading.Event) -> None:
    """Set ``started``, trying again while memory runs out as it wakes the waiting thread
    (what the failed start-up held is let go meanwhile)."""
    for _ in range(1000):
        try:
            started.set()
            return
        except MemoryError:
            continue


def threads_that_cannot_start_say_so() -> bool:
    """Make a thread whose start-up fails raise ``MemoryError`` from ``Thread.start()``
    instead of leaving it waiting for ever; False where nothing needs it (CPython 3.13 on).

    Before 3.13, a new thread that fails while it sets itself up (memory running out under
    ``ulimit -v``: its lock cannot be allocated) ends before it marks itself started, and
    ``Thread.start()`` waits for that mark for ever: ``traceana gaps`` hung under some limits
    (docs/reliability.md, "Aborts in native code"). The thread's whole code (``_bootstrap``,
    its start-up too) is wrapped so that such a thread marks itself started anyway and says
    it did not run, and ``start()`` raises then; the mark is retried while setting it runs
    out of memory too.
    The console script's only (``cli.main``), as ``guard`` is."""
    if sys.version_info >= (3, 13) or getattr(threading.Thread, "_traceana_guarded", False):
        return False
    outer, start = threading.Thread._bootstrap, threading.Thread.start  # type: ignore[attr-defined]

    def bootstrap(self: Any) -> None:
        try:
            outer(self)  # the whole of the thread's own code, its start-up too
        except BaseException:
            if self._started.is_set():
                raise  # as before: a thread that ran
        finally:
            if not self._started.is_set():
                self._traceana_unstarted = True  # (a key set before: no allocation)
                _mark(self._started)

    def guarded_start(self: Any) -> None:
        self._traceana_unstarted = False
        start(self)
        if self._traceana_unstarted:
            raise MemoryError(UNSTARTED)

    threading.Thread._bootstrap = bootstrap  # type: ignore[attr-defined]
    threading.Thread.start = guarded_start  # type: ignore[method-assign]
    threading.Thread._traceana_guarded = True  # type: ignore[attr-defined]
    return True
