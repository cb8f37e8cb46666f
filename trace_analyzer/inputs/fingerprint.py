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
import stat
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


def fingerprint(run: Run, *, content: bool = False) -> Fingerprint:
    """Return the fingerprint of ``run``; OSError when a file cannot be stat'd or read."""
    h = hashlib.sha256()
    newest = None
    in_archive = False
    skipped = [p for p, _ in run.skipped]
    for f in sorted({*run_files(run), *skipped}, key=str):
        if isinstance(f, MemberPath):
            in_archive = True
            st = f.archive.path.stat()
            size = f.stat_size()
        else:
            st = Path(f).stat()
            size = st.st_size
        newest = st.st_mtime_ns if newest is None else max(newest, st.st_mtime_ns)
        h.update(f"{f}\0".encode())
        if content:
            h.update(f.read_bytes())
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
    by_size: dict[int, list[AnyPath]] = {}
    for f in files:
        size = _size(f)
        if size is not None:
            by_size.setdefault(size, []).append(f)
    pairs: list[tuple[AnyPath, AnyPath]] = []
    for group in by_size.values():
        if len(group) < 2:
            continue
        first: dict[str, AnyPath] = {}
        for f in sorted(group, key=lambda p: (len(p.name), str(p))):
            digest = _digest(f)
            if digest is None:
                continue
            if digest in first:
                pairs.append((first[digest], f))
            else:
                first[digest] = f
    return pairs


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
        if isinstance(f, MemberPath):
            h.update(f.read_bytes())
        else:
            with open(f, "rb") as fh:
                while chunk := fh.read(HASH_CHUNK):
                    h.update(chunk)
    except (OSError, InputError):  # unreadable, or a member past its archive's cap
        return None
    return h.hexdigest()
