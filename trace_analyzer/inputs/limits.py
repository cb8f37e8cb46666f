"""How much a compressed input may inflate to: the guard against gzip, tar and zip bombs.

Archive members are read in memory and gzipped traces are decompressed as they are read, so
a small file could otherwise grow past the machine's memory or keep traceana busy for hours.
The cap counts the decompressed bytes of one compressed input (a ``.json.gz`` trace, or all
the members read from one archive); going past it is an InputError for that input (exit 2,
one line; in ``batch``, that run's error row). Plain files are not capped: their size is
already on disk.

The library reads no environment: the cap is the ``max_bytes`` argument of ``discover``,
``open_archive``, ``read_source`` and the readers (None: ``DEFAULT_MAX_BYTES``), and an
archive's members carry the cap it was opened with, into other processes too. The CLI sets
it from ``--max-bytes`` or the ``TRACEANA_MAX_BYTES`` variable (``ENV``); docs/reliability.md.
"""

from __future__ import annotations

DEFAULT_MAX_BYTES = 16 * 2**30  # 16 GiB: larger than any profile seen, smaller than a bomb
ENV = "TRACEANA_MAX_BYTES"  # read by the CLI (click's envvar), never by the library
PARAM = "max_bytes"  # the parameter an InputError of too_large names ({param})


def effective(max_bytes: int | None) -> int:
    """Return the cap in bytes that ``max_bytes`` asks for: the default when None."""
    return DEFAULT_MAX_BYTES if max_bytes is None else max_bytes


def too_large(what: str, cap: int) -> str:
    """Return the problem of an input past the cap, naming the parameter as ``{param}``.

    Raised as ``InputError(path, too_large(...), param=PARAM)``: the library's message says
    ``max_bytes``, the CLI's ``--max-bytes``.
    """
    return (
        f"{what} decompresses to more than {cap:,} bytes ({{param}}; "
        f"raise it if the input is genuine)"
    )
