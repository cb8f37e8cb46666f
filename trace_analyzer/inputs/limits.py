"""How much an input may inflate to: the guard against gzip, tar, zip and Parquet bombs.

Archive members are read in memory and gzipped traces are decompressed as they are read, so
a small file could otherwise grow past the machine's memory or keep traceana busy for hours.
The cap counts the decompressed bytes of one compressed input (a ``.json.gz`` trace, all the
members and extended headers read from one archive, or the pages of one Parquet table that
its footer and page headers declare); going past it is an InputError for that input (exit 2,
one line; in ``batch``, that run's error row). Plain JSON files are not capped: their size is
already on disk. What is not a regular file (a FIFO, a device) is never opened
(``not_regular``): it would block a reader, or feed it without end.

The library reads no environment: the cap is the ``max_bytes`` argument of ``discover``,
``open_archive``, ``read_source`` and the readers (None: ``default_max_bytes()``), and an
archive's members carry the cap it was opened with, into other processes too. The CLI sets
it from ``--max-bytes`` or the ``TRACEANA_MAX_BYTES`` variable (``ENV``); docs/reliability.md.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Container, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_analyzer.errors import InputError

if TYPE_CHECKING:
    from trace_analyzer.inputs.archive import AnyPath

# The default cap: an eighth of the memory this process may use, at most 16 GiB (larger than
# any profile seen, smaller than a bomb). Reading a compressed Kineto trace peaks at 3.6x what
# it inflates to on the default path (4.7x on the polars path): under the default, at most
# about half the memory (docs/reliability.md, "A default cap that bounds memory").
CEILING = 16 * 2**30
MEMORY_SHARE = 8
FLOOR = 256 * 2**20  # however little memory is said to be there
ENV = "TRACEANA_MAX_BYTES"  # read by the CLI (click's envvar), never by the library
PARAM = "max_bytes"  # the parameter an InputError of too_large names ({param})


def effective(max_bytes: int | None) -> int:
    """Return the cap in bytes that ``max_bytes`` asks for: the default when None."""
    return default_max_bytes() if max_bytes is None else max_bytes


@functools.cache
def default_max_bytes() -> int:
    """Return the default cap: ``usable_memory() // MEMORY_SHARE``, between FLOOR and
    CEILING (CEILING where the memory is not known)."""
    memory = usable_memory()
    return CEILING if memory is None else max(FLOOR, min(CEILING, memory // MEMORY_SHARE))


def usable_memory() -> int | None:
    """Return the bytes of memory this process may use: the least of the machine's physical
    memory, its cgroup's limit (a container's) and its address-space limit; None where none
    is known."""
    known = []
    try:
        known.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    known += _cgroup_limits()
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            known.append(soft)
    except (ImportError, OSError, ValueError):
        pass
    return min(known) if known else None


def _cgroup_limits() -> list[int]:
    """The memory limits of this process's cgroup and those above it (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``), where Linux says them."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    limits = []
    for line in lines:
        _, controllers, path = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        if controllers == "":  # v2: "0::/path"
            base, name = Path("/sys/fs/cgroup"), "memory.max"
        elif "memory" in controllers.split(","):
            base, name = Path("/sys/fs/cgroup/memory"), "memory.limit_in_bytes"
        else:
            continue
        here = base / path.lstrip("/")
        for folder in [here, *here.parents]:
            try:
                text = (folder / name).read_text().strip()
            except OSError:
                text = ""
            if text.isdigit():
                limits.append(int(text))
            if folder == base:
                break
    return limits


def too_large(what: str, cap: int) -> str:
    """Return the problem of an input past the cap, naming the parameter as ``{param}``.

    Raised as ``InputError(path, too_large(...), param=PARAM)``: the library's message says
    ``max_bytes``, the CLI's ``--max-bytes``.
    """
    return (
        f"{what} decompresses to more than {cap:,} bytes ({{param}}; "
        f"raise it if the input is genuine)"
    )


# Parquet: a few KB of file can hold pages that inflate to gigabytes (one long string,
# compressed a thousandfold). The footer declares every column chunk's uncompressed size, and
# each page header its own; both are read here, from the Thrift compact encoding the format
# uses (parquet.apache.org/docs/file-format/metadata), before polars decodes a page.
PARQUET_MAGIC = b"PAR1"
_DEPTH = 24  # deeper nesting than any Parquet structure: a hostile footer


class Compact:
    """A reader of Thrift's compact protocol over ``buf`` from ``pos``: structs as dicts of
    field id -> value, lists as lists; IndexError or ValueError on a malformed buffer."""

    def __init__(self, buf: bytes | memoryview, pos: int = 0):
        self.buf = buf
        self.pos = pos

    def byte(self) -> int:
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = value = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 70:
                raise ValueError("a varint longer than 10 bytes")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def struct(self, depth: int = 0) -> dict[int, object]:
        if depth > _DEPTH:
            raise ValueError("nested too deep")
        fields: dict[int, object] = {}
        last = 0
        while (head := self.byte()) != 0:
            delta, kind = head >> 4, head & 0x0F
            last = last + delta if delta else self.zigzag()
            fields[last] = kind == 1 if kind in (1, 2) else self.value(kind, depth + 1)
        return fields

    def value(self, kind: int, depth: int) -> object:
        if kind in (1, 2, 3):  # a boolean in a list, or a byte
            return self.byte()
        if kind in (4, 5, 6):
            return self.zigzag()
        if kind == 7:  # a double: not needed
            self.pos += 8
            return None
        if kind == 8:
            n = self.varint()
            if self.pos + n > len(self.buf):
                raise IndexError("a string past the end")
            self.pos += n
            return bytes(self.buf[self.pos - n : self.pos])
        if kind in (9, 10):
            return self.items(depth)
        if kind == 11:  # a map: no Parquet structure traceana reads holds one
            n = self.varint()
            types = self.byte() if n else 0
            for _ in range(n):
                self.value(types >> 4, depth)
                self.value(types & 15, depth)
            return None
        if kind == 12:
            return self.struct(depth)
        raise ValueError(f"unknown Thrift type {kind}")

    def items(self, depth: int) -> list[object]:
        head = self.byte()
        n, kind = head >> 4, head & 0x0F
        if n == 15:
            n = self.varint()
        if n > len(self.buf) - self.pos:  # every element takes a byte at least
            raise IndexError("a list longer than the buffer")
        return [self.value(kind, depth + 1) for _ in range(n)]


def field(struct: object, fid: int, kind: type, default: object = None) -> Any:
    """Return field ``fid`` of a parsed struct, of type ``kind``; ValueError for another."""
    if not isinstance(struct, dict):
        raise ValueError("a struct expected")
    value = struct.get(fid, default)
    if value is not default and not isinstance(value, kind):
        raise ValueError(f"field {fid} is not a {kind.__name__}")
    return value


def not_regular(f: Path) -> str | None:
    """Return what ``f`` is when it is not a regular file (after links), else None.

    A FIFO named ``trace.json`` would block its reader forever, and a link to ``/dev/zero``
    would feed it without end: discovery takes regular files only and says what it left.
    """
    try:
        mode = f.stat().st_mode
    except OSError as e:
        return "a broken link" if f.is_symlink() else f"not readable ({e.strerror or e})"
    if stat.S_ISREG(mode):
        return None
    what = next((w for test, w in _KINDS if test(mode)), "not a file")
    return f"a link to {what} ({os.path.realpath(f)})" if f.is_symlink() else what


_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def refuse_inflating_parquet(
    tables: Iterable[AnyPath], max_bytes: int | None, columns: Container[str]
) -> None:
    """Refuse, before polars reads them, Parquet tables whose ``columns`` inflate past the cap.

    Per table, each column chunk read counts the larger of the uncompressed size its footer
    declares and the sum of its pages' headers (a footer that understates its pages is
    caught); a footer or page header that cannot be parsed is an InputError too, since the
    size it would declare is unknown. Columns not read stay on disk and do not count.
    """
    from trace_analyzer.inputs.archive import MemberPath, cap_for  # it imports this module

    for path in tables:
        cap = cap_for(path, max_bytes)
        try:
            if isinstance(path, MemberPath):
                size = _parquet_inflation(memoryview(path.read_bytes()), columns, cap)
            else:
                with open(path, "rb") as f:
                    size = _parquet_inflation(_FileBytes(f), columns, cap)
        except (IndexError, ValueError) as e:
            problem = f"not a readable Parquet table (its footer: {e})"
            raise InputError(str(path), problem) from e
        except IsADirectoryError as e:
            raise InputError(str(path), "a folder named like a Parquet table, not one") from e
        except OSError as e:
            raise InputError(str(path), f"cannot read: {e.strerror or e}") from e
        if size > cap:
            raise InputError(str(path), too_large("the table", cap), param=PARAM)


class _FileBytes:
    """Slices of an open file, read when asked for: ``len`` and ``[a:b]`` as for bytes."""

    def __init__(self, f: Any):
        self.f = f
        self.size = os.fstat(f.fileno()).st_size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, s: slice) -> bytes:
        self.f.seek(s.start)
        data: bytes = self.f.read(s.stop - s.start)
        return data


def _parquet_inflation(buf: Any, columns: Container[str], cap: int) -> int:
    """Return what the chunks of ``columns`` in one Parquet file inflate to (stops past cap)."""
    size = len(buf)
    tail = bytes(buf[max(size - 8, 0) : size])
    if size < 12 or tail[4:] != PARQUET_MAGIC:
        raise ValueError("no Parquet footer at the end")
    length = int.from_bytes(tail[:4], "little")
    if length > size - 12:
        raise ValueError(f"a footer of {length:,} bytes in a file of {size:,}")
    meta = Compact(bytes(buf[size - 8 - length : size - 8])).struct()
    total: int = 0
    for group in field(meta, 4, list, []):
        for chunk in field(group, 1, list, []):
            md = field(chunk, 3, dict, {})
            names = field(md, 3, list, [])
            if not names or not isinstance(names[0], bytes):
                raise ValueError("a column chunk without its column")
            if names[0].decode("utf-8", "replace") not in columns:
                continue
            start = field(md, 11, int, 0) or field(md, 9, int, 0)
            pages = _pages(buf, start, field(md, 7, int, 0), cap - total)
            declared: int = field(md, 6, int, 0)
            total += max(declared, pages)
            if total > cap:
                return total
    return total


def _pages(buf: Any, start: int, length: int, left: int) -> int:
    """Return the uncompressed sizes of the page headers in ``length`` bytes from ``start``."""
    end = min(start + length, len(buf))
    total = 0
    pos = start
    while pos < end and total <= left:
        window = 256
        while True:  # a page header is small; one with statistics may take more
            c = Compact(bytes(buf[pos : min(pos + window, len(buf))]))
            try:
                header = c.struct()
                break
            except IndexError:
                if pos + window >= len(buf) or window >= 2**20:
                    raise
                window *= 16
        uncompressed, compressed = field(header, 2, int, 0), field(header, 3, int, 0)
        if uncompressed < 0 or compressed < 0:
            raise ValueError("a page of negative size")
        total += uncompressed
        pos += c.pos + compressed
    return total
