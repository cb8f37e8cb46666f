"""The analysis cache's folder, read and written without following a symbolic link.

A profile folder may come from someone else (a tar that keeps links), and its
``.traceana-cache`` with it. So the folder is opened as a direct child of the folder the user
named, without following a link, and every file in it is opened relative to that descriptor
(``openat``), without following one either: nothing is read or written outside it, even when
a link appears between two calls. A cache folder the user named (``--cache-dir``) is opened
as named, links and all. A link met is ``Linked``, which the cache turns into a warning.

Tables are checked against the size and CRC-32 the meta recorded before polars sees them:
on a damaged Parquet file polars can abort the whole process, which no ``except`` catches.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from trace_analyzer.inputs.discover import CACHE_MARK, CACHEDIR_TAG

if TYPE_CHECKING:  # imported where a table is read: cli/answers.py reads none, before polars
    import polars as pl

TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This folder is traceana's analysis cache (docs/cache.md); it may be deleted.\n"
)


class Linked(Exception):
    """A path of the cache is a symbolic link: not followed, so the entry is a miss."""

    def __init__(self, path: Path, fd: int | None = None):
        target = _link_target(path.name, fd) if fd is not None else ""
        super().__init__(
            f"{path}: a symbolic link{target} where traceana keeps its analysis cache; "
            "not followed: nothing was read or written through it"
        )


class Damaged(OSError):
    """A cache file that is not what its meta recorded: a miss, like a missing one."""


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO must not block
_CREATE = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Folder:
    """An entry's cache folder, opened for one read or write of it.

    ``.traceana-cache`` is opened as a direct child of the folder the user named, without
    following a link (a cache folder the user named is opened as named). Every file is then
    opened relative to that descriptor, without following a link either, so that nothing
    is read or written outside the folder, even when a link appears between two calls.
    """

    def __init__(self, folder: Path, inside: Path | None, *, create: bool):
        self.folder, self.inside, self.create, self.fd = folder, inside, create, -1
        self.made = False  # whether traceana made the folder (else the user's: no tag)

    def __enter__(self) -> Folder:
        self.fd = self._open()
        if self.create:
            self._tag()
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

    def _open(self) -> int:
        if self.inside is None:  # named by the user (--cache-dir): it may be, or lie under, a link
            if self.create and not self.folder.exists():
                self.folder.mkdir(parents=True, exist_ok=True)
                self.made = True
            return os.open(self.folder, _DIR)
        parent = os.open(self.inside, _DIR)
        try:
            if self.create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(self.folder.name, dir_fd=parent)
            if _is_link(self.folder.name, parent):
                raise Linked(self.folder, parent)
            return os.open(self.folder.name, _DIR | os.O_NOFOLLOW, dir_fd=parent)
        finally:
            os.close(parent)

    def _tag(self) -> None:
        """Mark the folder as traceana's cache (discovery leaves it out), unless it holds the
        mark (as a file, not a link): a folder traceana made, or its own ``.traceana-cache``,
        with ``CACHEDIR.TAG`` (backup tools skip it); a folder of the user's (an existing
        ``--cache-dir``) with traceana's own mark only, so that backup tools still keep it."""
        ours = self.made or self.inside is not None or self._holds(CACHEDIR_TAG)
        name = CACHEDIR_TAG if ours else CACHE_MARK
        if not self._holds(name):
            self.write(name, lambda file: file.write(TAG.encode()))

    def _holds(self, name: str) -> bool:
        """Whether the folder holds the regular file ``name`` (not a link)."""
        try:
            return stat.S_ISREG(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return False

    @contextlib.contextmanager
    def _opened(self, name: str) -> Iterator[BinaryIO]:
        """Open the regular file ``name`` for reading; a link is ``Linked``, and anything
        else that is not a regular file (a FIFO, a device) is never opened."""
        if _is_link(name, self.fd):
            raise Linked(self.folder / name, self.fd)
        if not stat.S_ISREG(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode):
            raise Damaged(errno.EINVAL, "not a regular file", name)
        with os.fdopen(os.open(name, _READ, dir_fd=self.fd), "rb", buffering=0) as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # swapped since the stat
                raise Damaged(errno.EINVAL, "not a regular file", name)
            yield file

    def read(self, name: str) -> bytes:
        """Return the bytes of the regular file ``name`` (a meta file)."""
        with self._opened(name) as file:
            return file.read()

    def table(self, name: str, meta: dict[str, Any]) -> pl.DataFrame:
        """Return the table ``name``, after checking its size and CRC-32 against ``meta``:
        polars may abort the process on a damaged Parquet file rather than raise. The file
        checked is the file read (one descriptor), even if a new one is renamed over it."""
        size, crc = meta["tables"][name]
        with self._opened(name) as file:
            if _checksum(file) != [size, crc]:
                raise Damaged(errno.EINVAL, "not the size and checksum the meta recorded", name)
            import polars as pl

            return pl.read_parquet(file)

    def write(self, name: str, fill: Callable[[BinaryIO], object]) -> list[int]:
        """Write ``name`` atomically with ``fill(file)``: a new temporary beside it, renamed
        over it. Return its size and CRC-32.

        The temporary is created (``O_EXCL``, ``O_NOFOLLOW``) after removing whatever had its
        name, so a link put there is removed, not written through; the rename replaces a
        link at ``name`` itself, not what it points to.
        """
        tmp = f".{name}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=self.fd)
        try:
            with os.fdopen(os.open(tmp, _CREATE, 0o666, dir_fd=self.fd), "w+b") as file:
                fill(file)
                file.flush()
                written = _checksum(file)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.fd)
            raise
        return written

    def write_table(self, name: str, df: pl.DataFrame) -> list[int]:
        """Write ``df`` as the cache keeps tables (Parquet, lz4); return its size and CRC-32."""
        return self.write(name, lambda file: df.write_parquet(file, compression="lz4"))


def _checksum(file: BinaryIO) -> list[int]:
    """Return the size and CRC-32 of an open file (mapped, not read: about 30 ms per 100 MB)."""
    size = os.fstat(file.fileno()).st_size
    if size == 0:  # nothing to map; no table is empty
        return [0, 0]
    with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as view:
        return [size, zlib.crc32(view)]


def _is_link(name: str, fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _link_target(name: str, fd: int) -> str:
    try:
        return f" (to {os.readlink(name, dir_fd=fd)})"
    except OSError:
        return ""


__all__ = ["TAG", "Damaged", "Folder", "Linked"]
