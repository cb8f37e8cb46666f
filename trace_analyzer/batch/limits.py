"""What one run's analysis may use in a worker process: time (``--timeout``) and memory
(``--worker-memory``).

The memory cap is ``RLIMIT_DATA``, which a worker sets on itself once it has imported polars
and traceana, before it says it is ready. ``RLIMIT_DATA`` (Linux 4.7 and later) counts the
process's private writable memory: its heap and every anonymous ``mmap``, which is where
jemalloc (polars' allocator) and Python put their data. ``RLIMIT_AS`` is no measure here: it
counts the address space, shared libraries and untouched reservations included, so polars'
reservations alone put a worker that holds 224 MiB at 1.25 GB of it (docs/reliability.md,
"Batch under faults"). An allocation past the cap fails: in Python as a ``MemoryError``, inside
polars as an abort of the process (SIGABRT) or a panic (``PanicException``); each is the run's
failed row saying "out of memory (over --worker-memory ...)", and that worker is replaced.

A capped worker also sets ``RUST_BACKTRACE=0`` for itself: with backtraces on, a polars
thread that panics on a failed allocation then fails to allocate the backtrace, and in 4 of 8
tries the process hung instead of ending (docs/reliability.md).
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass

from trace_analyzer.errors import UsageError

# The units a cap is written back in, the first that divides it exactly: as the user wrote it
# (2GiB is "2 GiB", 2G is "2 GB"), else in the largest decimal unit that fits.
_EXACT = [
    (2**40, "TiB"),
    (2**30, "GiB"),
    (2**20, "MiB"),
    (10**12, "TB"),
    (10**9, "GB"),
    (10**6, "MB"),
    (2**10, "KiB"),
    (10**3, "kB"),
]
_DECIMAL = [(10**12, "TB"), (10**9, "GB"), (10**6, "MB"), (10**3, "kB")]
OUT_OF_MEMORY = "out of memory (over --worker-memory "  # how every such error begins


@dataclass(frozen=True)
class Limits:
    """The limits of one run's analysis: ``timeout`` seconds from the worker's READY on, and
    ``memory`` bytes of the worker process's data (None: no limit). Picklable, so that a Dask
    task carries them to the cluster's worker."""

    timeout: float | None = None
    memory: int | None = None

    def __bool__(self) -> bool:
        return self.timeout is not None or self.memory is not None


def require_memory_cap() -> None:
    """Refuse ``--worker-memory`` where processes cannot cap their memory: without
    RLIMIT_DATA (Windows), and off Linux, where RLIMIT_DATA may leave ``mmap`` uncounted
    (macOS, the BSDs: jemalloc's memory would pass by it). A cap that is silently not applied
    would be worse than none asked for."""
    try:
        import resource
    except ImportError:
        resource = None  # type: ignore[assignment]
    if resource is None or not hasattr(resource, "RLIMIT_DATA") or sys.platform != "linux":
        raise UsageError(
            "--worker-memory needs Linux's RLIMIT_DATA, which counts every mapping of a "
            f"process's memory; this platform ({sys.platform}) cannot cap a worker so; leave it "
            "out"
        )


def quiet_panics() -> None:
    """Turn Rust's panic backtraces off in this process (a capped worker, before it imports
    polars): printing one allocates, which under the cap can hang the process (above)."""
    os.environ["RUST_BACKTRACE"] = "0"


def cap_memory(nbytes: int) -> None:
    """Cap this process's data memory at ``nbytes`` (a worker, before it analyses a run).

    Only the soft limit is set; one above the hard limit is held at the hard limit, the most
    an unprivileged process may set.
    """
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = nbytes if hard == resource.RLIM_INFINITY else min(nbytes, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def size_text(nbytes: int) -> str:
    """Return a byte count as a person reads it: ``2 GiB``, ``300 MB``, ``1.5 GB``."""
    for unit, name in _EXACT:
        if nbytes >= unit and nbytes % unit == 0:
            return f"{nbytes // unit} {name}"
    for unit, name in _DECIMAL:
        if nbytes >= unit:
            return f"{nbytes / unit:.3g} {name}"
    return f"{nbytes} bytes"


def out_of_memory(nbytes: int, abort: bool = False) -> str:
    """The error of a run that went past ``--worker-memory``: its analysis raised a
    MemoryError, or (``abort``) its worker died by SIGABRT, which is how polars ends a process
    when an allocation fails. The run's row keeps no fingerprint, so the next batch (with a
    higher cap, perhaps) tries it again."""
    # an abort under the cap is most likely the cap; a corrupt input can abort polars too
    how = "; the worker process died by SIGABRT, which is most likely that" if abort else ""
    return f"{OUT_OF_MEMORY}{size_text(nbytes)}{how}); the next batch tries it again"


def failed_allocating(error: str | None) -> bool:
    """Whether a run's error is a failed allocation: Python's MemoryError, or a polars panic
    on one (``PanicException: Cannot allocate memory to hold CompactString``)."""
    text = error or ""
    if text.startswith("MemoryError"):
        return True
    return text.startswith("PanicException") and "alloc" in text.lower()


def is_out_of_memory(error: str | None) -> bool:
    """Whether a run's error is one of ``out_of_memory``'s."""
    return (error or "").startswith(OUT_OF_MEMORY)


def is_memory_abort(exitcode: int | None) -> bool:
    """Whether a worker's exit code is the abort of a failed allocation (SIGABRT)."""
    return exitcode == -signal.SIGABRT
