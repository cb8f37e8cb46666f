"""A run's fingerprint: what tells whether its files changed since it was last analysed.

One definition for the analysis cache (docs/cache.md) and for ``traceana batch``
(docs/batch.md). ``stat`` mode digests, for every file the run is made of (its sources,
capture.json, NEFF/NTFF files, raw system traces, and the files discovery skipped), the
path, size, modification and change time and inode; an archive member contributes its size
and the archive's own stat. ``content`` mode digests the files' bytes instead (``batch
--hash``), so a copy with new times is still the same run.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import AnyPath, MemberPath
from trace_analyzer.inputs.discover import Run, run_files


@dataclass(frozen=True)
class Fingerprint:
    """``digest``: ``stat:<hex>`` or ``sha256:<hex>``; ``newest_ns``: the newest mtime."""

    digest: str
    newest_ns: int | None
    in_archive: bool


def fingerprint(run: Run, *, content: bool = False, relative: bool = False) -> Fingerprint:
    """Return the fingerprint of ``run``; OSError when a file cannot be stat'd or read.

    ``relative``: each file is named by its path inside the run root rather than as spelled
    (the analysis cache's key, the same for ``run``, ``./run/`` and ``/abs/run``)."""
    h = hashlib.sha256()
    newest = None
    in_archive = False
    skipped = [p for p, _ in run.skipped]
    root = str(run.root)

    def named(f: object) -> str:
        return os.path.relpath(str(f), root) if relative else str(f)

    for f in sorted({*run_files(run), *skipped}, key=named):
        if isinstance(f, MemberPath):
            in_archive = True
            st = f.archive.path.stat()
            size = f.stat_size()
        else:
            st = Path(f).stat()
            size = st.st_size
        newest = st.st_mtime_ns if newest is None else max(newest, st.st_mtime_ns)
        h.update(f"{named(f)}\0".encode())
        if content:
            _hash_bytes(h, f)  # in chunks: a 2 GiB NEFF is never held whole
        else:
            h.update(f"{size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0".encode())
    return Fingerprint(
        f"{'sha256' if content else 'stat'}:{h.hexdigest()[:32]}", newest, in_archive
    )


HASH_CHUNK = 1 << 20  # bytes hashed at a time: a large trace is never held whole for this


def same_bytes(files: list[AnyPath]) -> list[tuple[AnyPath, AnyPath]]:
    """Return ``(kept, copy)`` for each file of ``files`` whose bytes repeat an earlier one's.

    A trace and its copy (``trace.json`` and ``trace (1).json``) would be read twice and
    count every event twice. Only files of equal size can be equal, so sizes are compared
    first and a file is hashed only when another file has its size: a run of distinct
    traces costs one stat each. Of equal files, the one with the shortest name (then the
    first by name) is kept. A file that cannot be stat'd or read is left to its reader,
    which says why.
    """
    return _repeats(files, _size, _digest)


def same_folders(folders: list[AnyPath]) -> list[tuple[AnyPath, AnyPath]]:
    """Return ``(kept, copy)`` for each Explorer export folder of ``folders`` whose Parquet
    tables repeat an earlier one's: the same names with the same bytes (``same_bytes``'s
    rules, by folder: names and sizes first, then the tables' hashes)."""
    return _repeats(folders, _listing, _tables_digest)


def _repeats(
    items: list[AnyPath],
    cheap: Callable[[AnyPath], Hashable | None],
    full: Callable[[AnyPath], Hashable | None],
) -> list[tuple[AnyPath, AnyPath]]:
    """Return ``(kept, copy)`` for each item whose ``full`` key repeats an earlier one's,
    computing ``full`` only among items whose ``cheap`` key is shared; None is no key."""
    by_cheap: dict[Hashable, list[AnyPath]] = {}
    for item in items:
        key = cheap(item)
        if key is not None:
            by_cheap.setdefault(key, []).append(item)
    pairs: list[tuple[AnyPath, AnyPath]] = []
    for group in by_cheap.values():
        if len(group) < 2:
            continue
        first: dict[Hashable, AnyPath] = {}
        for item in sorted(group, key=lambda p: (len(p.name), str(p))):
            digest = full(item)
            if digest is None:
                continue
            if digest in first:
                pairs.append((first[digest], item))
            else:
                first[digest] = item
    return pairs


def _parquet_files(folder: AnyPath) -> list[AnyPath] | None:
    """Return the Parquet tables directly in an export folder, by name; None if unlistable."""
    try:
        return sorted((f for f in folder.iterdir() if f.name.endswith(".parquet")), key=str)
    except OSError:
        return None


def _listing(folder: AnyPath) -> tuple[tuple[str, int | None], ...] | None:
    """Return an export folder's tables as (name, size) pairs: None when it has none."""
    files = _parquet_files(folder)
    return tuple((f.name, _size(f)) for f in files) if files else None


def _tables_digest(folder: AnyPath) -> tuple[tuple[str, str], ...] | None:
    """Return an export folder's tables as (name, SHA-256) pairs; None if one is unreadable."""
    named = [(f.name, _digest(f)) for f in _parquet_files(folder) or []]
    if not named or any(d is None for _, d in named):
        return None
    return tuple((n, d) for n, d in named if d is not None)


def _size(f: AnyPath) -> int | None:
    """Return the size of a regular file or an archive member, None when it has none."""
    if isinstance(f, MemberPath):
        return f.stat_size()
    try:
        st = Path(f).stat()
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _digest(f: AnyPath) -> str | None:
    """Return the SHA-256 of a file's bytes, read in chunks; None when it cannot be read."""
    h = hashlib.sha256()
    try:
        _hash_bytes(h, f)
    except (OSError, InputError):  # unreadable, or a member past its archive's cap
        return None
    return h.hexdigest()


def _hash_bytes(h: hashlib._Hash, f: AnyPath) -> None:
    """Feed ``h`` the bytes of ``f``, ``HASH_CHUNK`` at a time (an archive member, already
    in memory, at once)."""
    if isinstance(f, MemberPath):
        h.update(f.read_bytes())
        return
    with open(f, "rb") as fh:
        while chunk := fh.read(HASH_CHUNK):
            h.update(chunk)
