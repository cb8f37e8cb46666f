"""How much a compressed input may inflate to: the guard against gzip, tar and zip bombs.

Archive members are read in memory and gzipped traces are decompressed as they are read, so
a small file could otherwise grow past the machine's memory or keep traceana busy for hours.
The cap counts the decompressed bytes of one compressed input (a ``.json.gz`` trace, or all
the members read from one archive); going past it is an InputError for that input (exit 2,
one line; in ``batch``, that run's error row). Plain files are not capped: their size is
already on disk. Set with ``--max-bytes`` or ``TRACEANA_MAX_BYTES`` (read here each time, so
batch workers inherit it); docs/reliability.md.
"""

from __future__ import annotations

import os

from trace_analyzer.units import parse_size

DEFAULT_MAX_BYTES = 16 * 2**30  # 16 GiB: larger than any profile seen, smaller than a bomb
ENV = "TRACEANA_MAX_BYTES"


def max_bytes() -> int:
    """Return the decompressed-size cap in bytes."""
    text = os.environ.get(ENV)
    return parse_size(text) if text else DEFAULT_MAX_BYTES


def too_large(what: str, cap: int) -> str:
    return (
        f"{what} decompresses to more than {cap:,} bytes (--max-bytes; "
        f"raise it if the input is genuine)"
    )
