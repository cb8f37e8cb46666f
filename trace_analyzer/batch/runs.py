"""The runs a batch analyses: every run under its roots, each with its identity and fingerprint.

A root is a folder (every run discovery finds there, and every archive below it), an archive
(.tar, .tar.gz/.tgz, .zip, read in memory) or a trace file. A run's identity (``run_id``) is
its root's real path (``place``: absolute, links resolved, so that ``./top`` and ``$PWD/top``
are one run), ``archive!/member`` inside an archive. Its fingerprint is the one the analysis
cache uses (``trace_analyzer.inputs.fingerprint``, files named inside the run): the stat of
its files, or with ``hash_files`` their SHA-256. An archive that cannot be opened is one run
with ``error`` set.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from trace_analyzer.errors import InputError, TraceanaError
from trace_analyzer.inputs.archive import SEP, MemberPath, is_archive
from trace_analyzer.inputs.discover import Run, discover, folders
from trace_analyzer.inputs.fingerprint import fingerprint


@dataclass
class RunSpec:
    """One run to analyse: its identity, fingerprint, and what discovery found (picklable).

    ``max_bytes``: the most a compressed input of the run may inflate to (None: the default);
    it travels with the run, so a worker process needs no environment to know it.
    """

    run_id: str
    path: str
    member: str | None
    fingerprint: str | None
    modified_ns: int | None
    run: Run | None = None
    error: str | None = None  # set when the run could not even be found (a corrupt archive)
    max_bytes: int | None = None


def find_runs(
    roots: Iterable[str | Path], *, hash_files: bool = False, max_bytes: int | None = None
) -> list[RunSpec]:
    """Return every run under ``roots`` (folders, archives, trace files), in ``run_id`` order.

    ``hash_files``: fingerprint the files' bytes (``sha256:``) rather than their stat.
    ``max_bytes``: passed to discovery, and kept in each RunSpec for its analysis.
    """
    specs: dict[str, RunSpec] = {}

    def add(spec: RunSpec) -> None:
        specs.setdefault(spec.run_id, spec)

    for root in map(Path, roots):
        if not root.exists():
            raise InputError(root, "no such file or folder")
        places = [root]
        if root.is_dir():
            for run in _runs_of_folder(root, max_bytes):
                add(_spec(run, hash_files, max_bytes))
            places = list(walk_archives(root))
        for place in places:
            try:
                runs = discover(place, max_bytes=max_bytes)
            except TraceanaError as e:
                add(_broken(place, str(e), max_bytes))
                continue
            for run in runs:
                add(_spec(run, hash_files, max_bytes))
    return [specs[k] for k in sorted(specs)]


def place(spelled: str) -> str:
    """Return the identity of the run at ``spelled`` (a path, or ``archive!/member``): the
    real path of the folder or archive, absolute and with links resolved, whatever its
    spelling (relative paths resolved against the working directory)."""
    outer, sep, member = spelled.partition(SEP)
    return os.path.realpath(outer) + sep + member


def _runs_of_folder(root: Path, max_bytes: int | None) -> list[Run]:
    """The runs discovery finds in a folder itself (none for a folder of archives only)."""
    try:
        return discover(root, max_bytes=max_bytes)
    except InputError as e:
        if "no profile found" not in e.problem:
            raise
        return []


def walk_archives(folder: Path) -> Iterator[Path]:
    """Yield the archives below ``folder``, in path order."""
    for here, names in folders(folder):
        for name in names:
            if is_archive(here / name):
                yield here / name


def _broken(archive: Path, error: str, max_bytes: int | None) -> RunSpec:
    """A run that discovery could not open: the whole archive, as one failed run.

    Its fingerprint is the archive file's stat, so it is tried again once the file changes.
    """
    try:
        st = archive.stat()
        fp: str | None = f"stat:{st.st_size}:{st.st_mtime_ns}"
        mtime: int | None = st.st_mtime_ns
    except OSError:
        fp, mtime = None, None
    return RunSpec(
        run_id=place(str(archive)),
        path=str(archive),
        member=None,
        fingerprint=fp,
        modified_ns=mtime,
        error=error,
        max_bytes=max_bytes,
    )


def _spec(run: Run, hash_files: bool, max_bytes: int | None) -> RunSpec:
    root = run.root
    if isinstance(root, MemberPath):
        path, member = str(root.archive.path), root.member or "."
    else:
        path, member = str(root), None
    fp = fingerprint(run, content=hash_files, relative=True)  # the same for every spelling
    return RunSpec(
        run_id=place(str(root)),
        path=path,
        member=member,
        fingerprint=fp.digest,
        modified_ns=fp.newest_ns,
        run=run,
        max_bytes=max_bytes,
    )
