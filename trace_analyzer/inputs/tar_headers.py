"""Tar headers read under limits: the TarInfo class an archive's members are listed with.

Python's tarfile reads some parts of a tar before anything can look at them: an extended
header (pax, GNU long name or link) is read whole, and a GNU sparse member's map (where its
data regions lie in the file) is built into a list of ``(offset, size)`` tuples as it is
found. A small compressed tar can hold a header of hundreds of MB, or a map of millions of
entries (a tuple of two ints takes about 120 bytes), which tarfile would hold, or spend
minutes building. ``header_class`` returns the subclass that checks each before it is read:

- an extended header larger than ``HEADER_LIMIT`` is refused; a smaller one counts against
  the archive's cap.
- a sparse map is read by traceana's own code for the two forms that keep it outside a
  header: old GNU (type ``S``: four entries in the header, then extension blocks of 21
  entries while a flag says more follow) and pax GNU sparse 1.0 (a count and that many
  numbers at the start of the member's data). A map of more than ``MAP_LIMIT`` bytes is not
  built (``map_problem`` says why); the archive refuses such a member if it would read it,
  and skips it otherwise.
  The pax forms 0.0 and 0.1 keep their map in the member's pax header, already bounded by
  ``HEADER_LIMIT``; tarfile builds those. A pax global header with GNU sparse keywords is
  refused: tarfile copies them into every later member's header, one map per member.
- every map built counts against the cap: the bytes it took in the stream, and
  ``ENTRY_BYTES`` for each entry held in memory.
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any, Protocol, cast

from trace_analyzer.errors import InputError

# The most an extended tar header (pax, GNU long name or link) may hold. Those of tar programs
# hold a name, times and a few attributes: a few KB at most.
HEADER_LIMIT = 2**20
# The most bytes a GNU sparse map may take in the stream: 43,000 data regions in the old GNU
# form, 130,000 or more in the 1.0 form. `tar --sparse` writes one entry per region of data
# between holes: a few for a core dump or a disk image with a file system on it.
MAP_LIMIT = 2**20
# What one map entry is counted as against the cap: a tuple of two ints and its place in the
# list, as measured in CPython (56 + 2 x 28 + 8 bytes, rounded up).
ENTRY_BYTES = 128
# The extended header types tarfile reads whole, and what a message calls them.
EXTENDED = {
    tarfile.XHDTYPE: "pax",
    tarfile.XGLTYPE: "pax global",
    tarfile.SOLARIS_XHDTYPE: "pax",
    tarfile.GNUTYPE_LONGNAME: "GNU long-name",
    tarfile.GNUTYPE_LONGLINK: "GNU long-link",
}
BLOCK = tarfile.BLOCKSIZE
STREAM = "of the tar stream"  # where an offset in a message counts from
_MORE = f"more than the {MAP_LIMIT:,} a map may hold"
_DIGITS = 20  # the longest number a 1.0 map holds: 2**64 has 20 digits
# tarfile's reader of a header's number field (octal, or GNU base-256): the one it parses
# sparse entries with, so a map reads here as it would there.
_nti = cast(Any, tarfile).nti


class Budget(Protocol):
    """What a header is checked against: the archive, its path and its cap."""

    path: Path

    def check_header(self, kind: str, size: int, offset: int) -> None: ...

    def count(self, size: int, what: str) -> None: ...


def map_problem(info: tarfile.TarInfo) -> str | None:
    """Return why a sparse member's map was not built (too large), or None."""
    problem: str | None = getattr(info, "map_problem", None)
    return problem


def stored_size(info: tarfile.TarInfo) -> int:
    """Return the bytes a member's data takes in the stream: what passing it inflates.

    A sparse member's ``size`` is the file's, holes included; only its data regions are
    stored, so a 1 GiB sparse file of 1 MB of data costs 1 MB to pass.
    """
    stored: int | None = getattr(info, "stored", None)  # set for a sparse member only
    return info.size if stored is None else stored


def header_class(budget: Budget) -> type[tarfile.TarInfo]:
    """Return the TarInfo class tarfile builds ``budget``'s members with.

    ``_proc_member`` is tarfile's documented hook for a subclass: it is called with a header
    block parsed and nothing after it read, so an extended header's size is checked there
    before tarfile reads the header's content, and an old GNU sparse member is read there.
    The 1.0 sparse map is read by ``_proc_gnusparse_10``, which tarfile calls on the pax
    header that announces it (the same name and arguments in Python 3.11 to 3.13;
    tests/inputs/test_sparse_tar.py fails if a later one stops calling it).
    """

    class Member(tarfile.TarInfo):
        block = b""  # an old GNU sparse member's header block, read for its map
        map_problem: str | None = None  # why its sparse map was not built
        stored: int | None = None  # a sparse member's bytes in the stream (its data)

        @classmethod
        def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Member:
            info = super().frombuf(buf, encoding, errors)
            if info.type == tarfile.GNUTYPE_SPARSE:
                info.block = bytes(buf)
            return info

        def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
            kind = EXTENDED.get(self.type)
            if kind is not None:
                budget.check_header(kind, self.size, self.offset)
            if self.type == tarfile.GNUTYPE_SPARSE:
                member: Member = _old_gnu(self, tar, budget)
            else:
                member = super()._proc_member(tar)  # type: ignore[misc]
            if self.type == tarfile.XGLTYPE and any(
                k.startswith("GNU.sparse.") for k in tar.pax_headers
            ):
                raise InputError(
                    budget.path,
                    f"the pax global header at byte {self.offset:,} {STREAM} holds GNU "
                    "sparse keywords: tar programs write them in one member's header",
                )
            entries = cast(list[Any] | None, member.sparse)
            if entries is not None and member.stored is None:  # counted once, when built
                member.stored = tar.offset - member.offset_data
                where = f"the GNU sparse map at byte {member.offset:,} {STREAM}"
                budget.count(ENTRY_BYTES * len(entries), where)
            return member

        def _proc_gnusparse_10(self, next: Any, pax_headers: Any, tar: tarfile.TarFile) -> None:
            where = f"the GNU sparse map at byte {self.offset:,} {STREAM}"
            numbers, read, problem = _map_10(tar, next.size)
            budget.count(read, where)
            if problem is None:
                next.offset_data = cast(Any, tar.fileobj).tell()
            next.map_problem = problem
            next.sparse = list(zip(numbers[::2], numbers[1::2], strict=True))

    return Member


def _old_gnu(info: Any, tar: tarfile.TarFile, budget: Budget) -> Any:
    """Read an old GNU sparse member's map (tarfile's ``_proc_sparse``, bounded).

    Its extension blocks are a chain: where it ends is known only by reading each, so the
    blocks are always read to reach the member's data, and count against the cap as they
    are (in a plain tar too: they are read, not skipped); entries are kept from the first
    ``MAP_LIMIT`` bytes only. A longer map is not built, and ``map_problem`` says how long
    it was.
    """
    fileobj = cast(Any, tar.fileobj)
    where = f"the GNU sparse map at byte {info.offset:,} {STREAM}"
    header = info.block
    entries = _entries(header[386:482], 4, keep_empty=True)
    more, realsize = header[482], _nti(header[483:495])
    read = 0
    while more:
        buf = fileobj.read(BLOCK)
        if len(buf) < BLOCK:
            raise tarfile.ReadError("unexpected end of data")
        read += BLOCK
        budget.count(BLOCK, where)
        if read <= MAP_LIMIT:
            entries += _entries(buf, 21, keep_empty=False)
        more = buf[504]
    if read > MAP_LIMIT:
        info.map_problem = f"holds {read:,} bytes, {_MORE}"
        entries = []
    info.sparse = entries
    info.offset_data = fileobj.tell()
    tar.offset = info.offset_data + -(-info.size // BLOCK) * BLOCK
    info.size = realsize
    return info


def _entries(buf: bytes, count: int, *, keep_empty: bool) -> list[tuple[int, int]]:
    """Return the first ``count`` (offset, size) entries of 24 bytes in ``buf``, as tarfile
    reads them: those of the header all, those of an extension block when neither is 0."""
    out = []
    for i in range(count):
        try:
            offset, size = _nti(buf[24 * i : 24 * i + 12]), _nti(buf[24 * i + 12 : 24 * i + 24])
        except ValueError:
            break
        if keep_empty or (offset and size):
            out.append((offset, size))
    return out


def _map_10(tar: tarfile.TarFile, stored: int) -> tuple[list[int], int, str | None]:
    """Read a GNU sparse 1.0 map from the start of a member's ``stored`` bytes of data.

    Return its numbers, the bytes read, and None; or, for a map of more than ``MAP_LIMIT``
    bytes, no numbers and the problem, with the rest of the map left unread (tarfile finds
    the next member by the member's size, not by the map). The count on the first line says
    how many numbers follow, each on its own line: one that declares more than the limit can
    hold (two bytes a number at the least) is refused on that line. A map that runs past its
    member's data, or a line longer than any number, is a corrupt archive (ReadError).
    """
    fileobj = cast(Any, tar.fileobj)
    numbers: list[int] = []
    want: int | None = None  # how many numbers the count line declares
    tail = b""  # the part of a line read so far
    read = 0
    while want is None or len(numbers) < want:
        if read >= MAP_LIMIT:
            return [], read, f"is longer than the {MAP_LIMIT:,} bytes a map may hold"
        if read >= stored:
            raise tarfile.ReadError("a GNU sparse map runs past its member's data")
        buf = fileobj.read(BLOCK)
        if len(buf) < BLOCK:
            raise tarfile.ReadError("unexpected end of data")
        read += BLOCK
        *lines, tail = (tail + buf).split(b"\n")
        for line in lines:
            if want is None:
                want = 2 * int(line)
                if 2 * want > MAP_LIMIT:  # two bytes a number at the least
                    least = f"at least {2 * want:,} bytes"
                    return [], read, f"declares {want // 2:,} entries, {least}, {_MORE}"
            elif len(numbers) < want:
                numbers.append(int(line))
        if (want is None or len(numbers) < want) and len(tail) > _DIGITS:
            raise tarfile.ReadError("a GNU sparse map holds a line that is not a number")
    return numbers, read, None
