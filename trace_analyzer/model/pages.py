"""Large zeroed buffers for what the compiled parts write (the critical path's graph and its
replays): anonymous memory mapped for them, asking for huge pages where the system gives
them on request (Linux's transparent huge pages, "madvise"). A first write into fresh memory
faults once per page: 77 MB of 4 KiB pages costs some 20 ms more in faults than the same
memory in 2 MiB pages (docs/benchmarks.md). Elsewhere, or where mapping fails, a bytearray:
the same bytes, zeroed."""

from __future__ import annotations

import mmap

# Private anonymous memory (a shared mapping is shmem, whose huge pages follow another setting).
_FLAGS = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
_HUGE = getattr(mmap, "MADV_HUGEPAGE", None)
# Below this, a bytearray: a mapping's page rounding and system calls are not worth it.
SMALL = 1 << 20


def zeroed(nbytes: int) -> memoryview:
    """A writable buffer of ``nbytes`` zero bytes (module doc); it lives while a view of it
    does."""
    if nbytes < SMALL:
        return memoryview(bytearray(nbytes))
    try:
        mapped = mmap.mmap(-1, nbytes, flags=_FLAGS) if _FLAGS else mmap.mmap(-1, nbytes)
    except (OSError, ValueError, TypeError):
        return memoryview(bytearray(nbytes))
    if _HUGE is not None:
        try:
            mapped.madvise(_HUGE)
        except OSError:  # the kernel has no transparent huge pages: small ones, as ever
            pass
    return memoryview(mapped)
