"""Archives read in memory: a .tar, .tar.gz/.tgz or .zip walked like a folder, never extracted.

``open_archive(path)`` lists the regular members of an archive (links, devices and other
non-regular members are skipped) and returns its root as a ``MemberPath``: the small part of
``pathlib.Path`` that discovery and the readers use (``name``, ``parent``, ``parents``,
``parts``, ``/``, ``joinpath``, ``relative_to``, ``read_bytes``, ``iterdir``, ``glob``,
``exists``, ``is_file``, ``is_dir``). A member prints as ``archive.tar.gz!/run/trace.json``.

The tar members traceana reads (those discovery would take by name: traces, Explorer tables,
capture.json) are read into memory when the archive is opened (a compressed tar cannot be read
at random); any other member (a checkpoint beside a trace) is skipped, never held, and read
only if asked for. Zip members are read when asked for. Either way the bytes inflated from one
archive are capped (``max_bytes``, limits.py), extended tar headers and sparse maps included
(tar_headers.py). Opened archives
are cached per process, keyed by path, size, modification time and cap, so a worker that
analyses several runs of one archive opens it once. A ``MemberPath`` pickles as (archive
path, member, cap), so runs found in one process can be analysed in another (a process pool,
a Dask worker) under the same cap.
"""

from __future__ import annotations

import fnmatch
import io
import lzma
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any, TypeAlias

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.limits import PARAM, effective, too_large
from trace_analyzer.inputs.tar_headers import (
    HEADER_LIMIT,
    STREAM,
    header_class,
    map_problem,
    stored_size,
)

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
SEP = "!/"


def is_archive(path: Path) -> bool:
    """Return True when ``path``'s name says it is an archive traceana reads."""
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


# What a corrupt archive raises while it is listed or read: zlib's and lzma's own errors
# included (a corrupt compressed stream).
CORRUPT = (OSError, EOFError, zipfile.BadZipFile, ValueError, zlib.error, lzma.LZMAError)


class Archive:
    """The regular members of one archive: their names, and their bytes when asked for.

    ``cap`` bounds the bytes read from it: a tar's members as they are read in, a zip
    member's declared size when it is asked for (zipfile reads no more than that), and the
    zip's members read so far, all told, as a tar's are.
    """

    def __init__(self, path: Path, *, max_bytes: int | None = None):
        self.path = Path(path)
        self.cap = effective(max_bytes)
        self.files: dict[str, int] = {}  # member -> size
        self._data: dict[str, bytes] = {}  # the members read when listed (tar)
        self._skipped: dict[str, tarfile.TarInfo] = {}  # the others, read only when asked
        self._refused: dict[str, str] = {}  # skipped members that cannot be read, and why
        self._total = 0  # bytes inflated so far, against the cap (tar; zip members as read)
        self._counted: set[str] = set()  # the zip members counted in it
        self._zip: zipfile.ZipFile | None = None
        # member -> the zip entry it is read by: the stored name may differ ("./x", "/x",
        # "a\\x"), and a later link of the same name must not shadow it
        self._entries: dict[str, zipfile.ZipInfo] = {}
        try:
            if self.path.name.lower().endswith(".zip"):
                self._list_zip()
            else:
                self._read_tar()
        except (*CORRUPT, tarfile.TarError) as e:
            raise InputError(
                self.path,
                f"not a readable archive ({type(e).__name__}: "
                f"{str(e).splitlines()[0] if str(e) else 'truncated?'})",
            ) from e
        self.dirs: set[str] = {""}
        for name in self.files:
            parts = name.split("/")[:-1]
            for i in range(len(parts)):
                self.dirs.add("/".join(parts[: i + 1]))

    def _list_zip(self) -> None:
        self._zip = zipfile.ZipFile(self.path)
        for info in self._zip.infolist():
            name = _clean(info.filename)
            mode = (info.external_attr >> 16) & 0o170000
            if name and not info.is_dir() and mode in (0, 0o100000):
                self.files[name] = info.file_size
                self._entries[name] = info

    def _read_tar(self) -> None:
        """List a tar's regular members, holding in memory only those traceana reads.

        The others (a checkpoint beside a trace) are skipped by seeking: in a plain tar their
        bytes are never touched; in a compressed one they are inflated to pass them, and so
        count against the cap, but never held. The header class (tar_headers.py) refuses an
        extended header (pax, GNU long name) that would outgrow what is left of the cap
        before tarfile reads it, and leaves a sparse map too large to build unbuilt: such a
        member refuses the archive if it is one traceana reads, else it is skipped and
        cannot be read. A sparse member passed counts its stored data, not its holes.
        """
        # discovery's rule of which files traceana reads, by name (imported here, not above:
        # discovery imports this module)
        from trace_analyzer.inputs.discover import read_when_found as wanted

        with tarfile.open(self.path, "r:*", tarinfo=header_class(self)) as tar:
            compressed = not isinstance(tar.fileobj, io.BufferedReader)
            for m in tar:
                name = _clean(m.name)
                if not name or not m.isreg():
                    continue
                keep = wanted(PurePosixPath(name).name)
                problem = map_problem(m)
                if problem is not None:  # a sparse map too large to build: not readable
                    problem = (
                        f"the GNU sparse map of {name} at byte {m.offset:,} {STREAM} {problem}"
                    )
                    if keep:
                        raise InputError(self.path, problem)
                if keep or compressed:  # held, or inflated to pass it: capped before either
                    self.count(m.size if keep else stored_size(m), "the archive's members")
                self.files[name] = m.size
                self._refused.pop(name, None)  # a later member of the same name wins
                if keep:
                    self._skipped.pop(name, None)
                    fh = tar.extractfile(m)
                    self._data[name] = fh.read() if fh else b""
                else:
                    self._data.pop(name, None)
                    self._skipped[name] = m
                    if problem is not None:
                        self._refused[name] = problem

    def count(self, size: int, what: str) -> None:
        """Add ``size`` bytes to what this archive inflates to; past the cap, an InputError."""
        self._total += size
        if self._total > self.cap:
            raise InputError(self.path, too_large(what, self.cap), param=PARAM)

    def check_header(self, kind: str, size: int, offset: int) -> None:
        """Refuse an extended header before tarfile reads it whole (``Member``).

        tarfile reads a pax or GNU long-name header into memory in one piece: a header of
        300 MB in a 300 KB .tar.gz would take a gigabyte. None is larger than HEADER_LIMIT in
        an archive made by a tar program, and each counts against the cap.
        """
        where = f"the {kind} header at byte {offset:,} of the tar stream"
        if size > HEADER_LIMIT:
            raise InputError(
                self.path,
                f"{where} holds {size:,} bytes, more than the {HEADER_LIMIT:,} a header may "
                "hold: not an archive a tar program wrote",
            )
        self.count(size, where)

    @property
    def root(self) -> MemberPath:
        return MemberPath(self, "")

    def read(self, member: str) -> bytes:
        if member not in self.files:
            raise FileNotFoundError(2, "no such member", f"{self.path}{SEP}{member}")
        if member in self._data:
            return self._data[member]
        if member in self._refused:
            raise InputError(self.path, self._refused[member])
        if self.files[member] > self.cap:  # zipfile reads no more than the size declared
            problem = too_large("the member", self.cap)
            raise InputError(f"{self.path}{SEP}{member}", problem, param=PARAM)
        if self._zip is not None and member not in self._counted:  # the archive's, all told
            if self._total + self.files[member] > self.cap:
                raise InputError(self.path, too_large("the archive", self.cap), param=PARAM)
            self._total += self.files[member]
            self._counted.add(member)
        try:
            if self._zip is None:
                return self._read_skipped(self._skipped[member])
            return self._zip.read(self._entries[member])
        except (*CORRUPT, tarfile.TarError, NotImplementedError, RuntimeError) as e:  # corrupt
            # data; an unsupported compression method (NotImplementedError); encrypted (zip)
            raise OSError(f"corrupt member {member}: {e}") from e

    def _read_skipped(self, info: tarfile.TarInfo) -> bytes:
        """Read a tar member not held in memory (a NEFF for ``batch --hash``): the archive is
        opened again and the member read by its offset, under the cap."""
        with tarfile.open(self.path, "r:*", tarinfo=header_class(self)) as tar:
            fh = tar.extractfile(info)
            return fh.read() if fh else b""


def _clean(name: str) -> str:
    """Return a member name without ``./``, leading or trailing slashes; '' for unsafe ones."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    return "" if ".." in parts else "/".join(parts)


@lru_cache(maxsize=4)
def _cached(path: str, size: int, mtime_ns: int, cap: int) -> Archive:
    return Archive(Path(path), max_bytes=cap)


def open_archive(path: str | Path, *, max_bytes: int | None = None) -> Archive:
    """Return the archive at ``path``, opened once per process while it is unchanged.

    ``max_bytes`` caps the bytes read from it (None: limits.default_max_bytes()); the same
    archive opened under another cap is another entry of the cache.
    """
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise InputError(p, f"cannot read: {e.strerror or e}") from e
    return _cached(str(p), st.st_size, st.st_mtime_ns, effective(max_bytes))


def _member_path(archive: str, member: str, cap: int | None = None) -> MemberPath:
    """Unpickle a MemberPath: reopen (or reuse) its archive, under its cap, in this process."""
    return MemberPath(open_archive(archive, max_bytes=cap), member)


class MemberPath:
    """A file or folder inside an archive, with the Path methods traceana uses."""

    __slots__ = ("archive", "member")

    def __init__(self, archive: Archive, member: str):
        self.archive = archive
        self.member = member.strip("/")

    # identity
    def __str__(self) -> str:
        return f"{self.archive.path}{SEP}{self.member}"

    def __repr__(self) -> str:
        return f"MemberPath({str(self)!r})"

    def __reduce__(self) -> tuple[Any, tuple[str, str, int]]:
        return (_member_path, (str(self.archive.path), self.member, self.archive.cap))

    @property
    def max_bytes(self) -> int:
        """The cap its archive was opened with: what reading this member may inflate to."""
        return self.archive.cap

    def _key(self) -> tuple[str, str]:
        return (str(self.archive.path), self.member)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemberPath) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: MemberPath) -> bool:
        return self._key() < other._key()

    # pure path parts
    @property
    def _pure(self) -> PurePosixPath:
        return PurePosixPath(self.member or ".")

    @property
    def name(self) -> str:
        return self._pure.name if self.member else ""

    @property
    def suffix(self) -> str:
        return self._pure.suffix

    @property
    def stem(self) -> str:
        return self._pure.stem

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.member.split("/")) if self.member else ()

    @property
    def parent(self) -> MemberPath:
        return MemberPath(self.archive, self.member.rpartition("/")[0])

    @property
    def parents(self) -> list[MemberPath]:
        out: list[MemberPath] = []
        p = self
        while p.member:
            p = p.parent
            out.append(p)
        return out

    def joinpath(self, *names: str) -> MemberPath:
        parts = [self.member, *(str(n) for n in names)]
        return MemberPath(self.archive, "/".join(p.strip("/") for p in parts if p.strip("/")))

    def __truediv__(self, name: str) -> MemberPath:
        return self.joinpath(name)

    def relative_to(self, other: MemberPath) -> PurePosixPath:
        if other.archive.path != self.archive.path:
            raise ValueError(f"{self} is not in {other}")
        return self._pure.relative_to(other._pure)

    def resolve(self) -> MemberPath:
        return self

    # the file system of the archive
    def exists(self) -> bool:
        return self.is_file() or self.is_dir()

    def is_file(self) -> bool:
        return self.member in self.archive.files

    def is_dir(self) -> bool:
        return self.member in self.archive.dirs

    def read_bytes(self) -> bytes:
        return self.archive.read(self.member)

    def stat_size(self) -> int:
        return self.archive.files.get(self.member, 0)

    def iterdir(self) -> Iterator[MemberPath]:
        if not self.is_dir():
            raise NotADirectoryError(20, "not a folder", str(self))
        prefix = f"{self.member}/" if self.member else ""
        names = {
            n[len(prefix) :].split("/")[0]
            for n in (*self.archive.files, *self.archive.dirs)
            if n.startswith(prefix) and n != self.member and n[len(prefix) :]
        }
        return iter(sorted(self.joinpath(n) for n in names))

    def glob(self, pattern: str) -> Iterator[MemberPath]:
        """Return the children whose names match ``pattern`` (one level, as the readers use)."""
        return (
            iter([p for p in self.iterdir() if fnmatch.fnmatchcase(p.name, pattern)])
            if self.is_dir()
            else iter(())
        )

    def walk_files(self) -> Iterator[MemberPath]:
        """Yield every file below this folder, in path order (folder by folder, as os.walk)."""
        prefix = f"{self.member}/" if self.member else ""
        names = [n for n in self.archive.files if n.startswith(prefix)]
        for n in sorted(names, key=lambda n: (n.split("/")[:-1], n)):
            yield MemberPath(self.archive, n)


# A path discovery hands out: a file or folder on disk, or inside an archive.
AnyPath: TypeAlias = Path | MemberPath


def parquet_input(path: AnyPath) -> Path | io.BytesIO:
    """Return what ``pl.read_parquet`` should read: the path itself, or a member's bytes."""
    return io.BytesIO(path.read_bytes()) if isinstance(path, MemberPath) else path


def relative_parts(path: AnyPath, top: AnyPath) -> tuple[str, ...]:
    """Return the parts of ``path`` below ``top``: both on disk, or both in one archive."""
    if isinstance(path, MemberPath) and isinstance(top, MemberPath):
        return path.relative_to(top).parts
    if isinstance(path, Path) and isinstance(top, Path):
        return path.relative_to(top).parts
    raise ValueError(f"{path} is not in {top}")


def cap_for(path: AnyPath, max_bytes: int | None) -> int:
    """Return the cap on what reading ``path`` may inflate to.

    ``max_bytes`` when given; else, for an archive member, the cap its archive was opened
    with (so a run found under a cap is read under it, in any process); else the default.
    """
    if max_bytes is None and isinstance(path, MemberPath):
        return path.max_bytes
    return effective(max_bytes)
