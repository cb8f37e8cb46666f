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
from dataclasses import dataclass
from pathlib import Path

from trace_analyzer.inputs.archive import MemberPath
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
