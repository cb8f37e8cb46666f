"""Find what a path holds: runs, the readable sources in each, and the Neuron artifacts beside them.

Discovery looks at names and folders only; it opens no file. Readers decide what a JSON file
is when they parse it. The rules (docs/formats.md):

- A folder named ``<instance>_pid_<pid>`` is a Neuron capture folder: flat when its files sit
  in it, session when they sit in a ``<timestamp>/`` subfolder (epoch-ns digits or
  ``YYYYMMDD_HHMMSS_mmm``). Its parent is the run root, so every process of one capture is one
  run; a ``neffs/`` folder beside them (vLLM) belongs to the same run.
- Any other file's run root is its own folder; an Explorer export inside a Neuron run root
  joins that run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import MemberPath, is_archive, open_archive

PID_DIR = re.compile(r"^(?P<host>.+)_pid_(?P<pid>\d+)$")
TIMESTAMP_DIR = re.compile(r"^(\d{10,20}|\d{8}_\d{6}_\d{3})$")
PARQUET_EVENTS = re.compile(r"^SystemProfileEvents(_\d+)?\.parquet$")
# Per-core device JSON exports (0.6-1.4 GB each) and device-profile JSON: not system events.
DEVICE_JSON = re.compile(r"(_nc_\d+_session_\d+|^device_profile_model_.+)\.json(\.gz)?$")
# JSON files that are known not to be traces.
NOT_TRACES = {"truth.json"}
CAPTURE_JSON = "capture.json"  # written by capture/: what was profiled, how
RAW_SYSTEM = {"ntrace.pb", "trace_info.pb", "cpu_util.pb", "host_mem.pb"}
RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class Capture:
    """Where a file sits in a Neuron capture folder, when it sits in one."""

    host: str
    pid: int
    layout: str  # "flat" or "session"
    timestamp: str | None = None


@dataclass
class Source:
    """One readable input: a JSON file, or a folder of Explorer Parquet tables."""

    path: Path
    kind: str  # "json" (sniffed on read) or "explorer-parquet"
    capture: Capture | None = None
    named: bool = False  # the user named this file itself
    rank: int | None = None
    rank_origin: str | None = (
        None  # "file name" or "folder name"; readers may set "distributedInfo"
    )


@dataclass
class Run:
    """Everything found under one run root."""

    root: Path
    sources: list[Source] = field(default_factory=list)
    neffs: list[Path] = field(default_factory=list)
    ntffs: list[Path] = field(default_factory=list)
    raw: list[Path] = field(default_factory=list)  # ntrace.pb, trace_info.pb, ...
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    captures: list[Path] = field(default_factory=list)  # capture.json files
    layouts: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return str(self.root)


def capture_of(path: Path, top: Path) -> tuple[Capture | None, Path | None]:
    """Return the capture a file belongs to and that capture's run root, or (None, None).

    The ``_pid_`` folder may sit under ``top`` (its parent is the run root) or above it, when
    the user names a folder inside a capture (then ``top`` is the run root).
    """
    parts = path.relative_to(top).parts[:-1] if path != top else ()
    folders = [top, *(top.joinpath(*parts[: i + 1]) for i in range(len(parts)))]
    for depth in range(len(folders) - 1, -1, -1):
        m = PID_DIR.match(folders[depth].name)
        if m:
            inner = folders[depth + 1 :]
            return _capture(m, inner[0].name if inner else None), folders[depth].parent
    below = top.resolve()
    for folder in below.parents:
        m = PID_DIR.match(folder.name)
        if m:
            return _capture(m, below.name), top
        below = folder
    return None, None


def _capture(m: re.Match, inner: str | None) -> Capture:
    timestamp = inner if inner and TIMESTAMP_DIR.match(inner) else None
    return Capture(
        host=m["host"],
        pid=int(m["pid"]),
        layout="session" if timestamp else "flat",
        timestamp=timestamp,
    )


def rank_from_names(path: Path) -> tuple[int | None, str | None]:
    """Return the rank spelled in a file or folder name, and which of the two held it."""
    m = RANK_IN_NAME.search(path.name)
    if m:
        return int(m[1]), "file name"
    m = RANK_IN_NAME.search(path.parent.name)
    if m:
        return int(m[1]), "folder name"
    return None, None


# traceana's own analysis cache (cache.py): never an input. Its folders are named so by
# default and always hold a CACHEDIR.TAG (bford.info/cachedir), as any --cache-dir does.
CACHE_DIR_NAME = ".traceana-cache"
CACHEDIR_TAG = "CACHEDIR.TAG"


def _is_cache(folder: Path, name: str) -> bool:
    return name == CACHE_DIR_NAME or (folder / name / CACHEDIR_TAG).is_file()


def _walk(top: Path):
    if isinstance(top, MemberPath):
        for f in top.walk_files():
            if CACHE_DIR_NAME not in f.parts[:-1]:
                yield f
        return
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if not _is_cache(Path(dirpath), d))
        for name in sorted(filenames):
            yield Path(dirpath) / name


def _is_json(name: str) -> bool:
    return name.endswith(".json") or name.endswith(".json.gz")


def discover(path: str | Path, *, max_bytes: int | None = None) -> list[Run]:
    """Return the runs under ``path`` (a folder, a single file, or an archive), in path order.

    An archive (.tar, .tar.gz/.tgz, .zip) is read in memory and walked like a folder; its
    paths are ``MemberPath`` objects (trace_analyzer/archive.py).
    """
    top = path if isinstance(path, MemberPath) else Path(path)
    if not top.exists():
        raise InputError(top, "no such file or folder")
    if not isinstance(top, MemberPath) and top.is_file() and is_archive(top):
        top = open_archive(top).root
    if top.is_file():
        return [_single_file(top)]
    runs: dict[Path, Run] = {}
    loose: list[tuple[Path, Source]] = []  # sources whose run root is decided at the end

    def run_at(root: Path) -> Run:
        return runs.setdefault(root, Run(root=root))

    parquet_dirs: set[Path] = set()
    for f in _walk(top):
        cap, root = capture_of(f, top)
        name = f.name
        if f.parent.name == "neffs" and name.endswith(".neff"):
            run_at(f.parent.parent).neffs.append(f)
            run_at(f.parent.parent).layouts.add("vllm-neffs")
            continue
        owner = run_at(root) if root is not None else None
        if cap and owner:
            owner.layouts.add(cap.layout)
        if name.endswith(".neff") or name.endswith(".ntff"):
            target = owner or run_at(f.parent)
            (target.neffs if name.endswith(".neff") else target.ntffs).append(f)
            if owner is None:
                target.layouts.add("bare")
        elif name in RAW_SYSTEM or name.endswith(".pb"):
            (owner or run_at(f.parent)).raw.append(f)
        elif PARQUET_EVENTS.match(name):
            if f.parent not in parquet_dirs:
                parquet_dirs.add(f.parent)
                src = Source(path=f.parent, kind="explorer-parquet", capture=cap)
                _place(src, owner, loose)
        elif name == CAPTURE_JSON:
            (owner or run_at(f.parent)).captures.append(f)
        elif _is_json(name):
            if name in NOT_TRACES:
                continue
            if DEVICE_JSON.search(name):
                (owner or run_at(f.parent)).skipped.append((f, "per-core device JSON: not read"))
                continue
            rank, origin = rank_from_names(f)
            src = Source(path=f, kind="json", capture=cap, rank=rank, rank_origin=origin)
            _place(src, owner, loose)
    _settle(loose, runs, top)
    found = [r for r in sorted(runs.values(), key=lambda r: str(r.root)) if _has_content(r)]
    if not found:
        raise InputError(top, "no profile found (no trace JSON, Explorer export or Neuron capture)")
    return found


def _place(src: Source, owner: Run | None, loose: list[tuple[Path, Source]]) -> None:
    if owner is not None:
        owner.sources.append(src)
    else:
        loose.append((src.path if src.kind == "explorer-parquet" else src.path.parent, src))


def _settle(loose: list[tuple[Path, Source]], runs: dict[Path, Run], top: Path) -> None:
    """Give each loose source a run: the nearest Neuron run above it, else its own folder."""
    neuron_roots = {r.root for r in runs.values() if r.layouts - {"bare"}}
    for folder, src in loose:
        home = folder
        for parent in [folder, *folder.parents]:
            if parent in neuron_roots:
                home = parent
                break
            if parent == top:
                break
        runs.setdefault(home, Run(root=home)).sources.append(src)


def _has_content(run: Run) -> bool:
    return bool(run.sources or run.neffs or run.ntffs or run.raw)


def _single_file(f: Path) -> Run:
    run = Run(root=f.parent)
    if PARQUET_EVENTS.match(f.name):
        run.sources.append(Source(path=f.parent, kind="explorer-parquet", named=True))
    elif _is_json(f.name):
        rank, origin = rank_from_names(f)
        cap, _ = capture_of(f, f.parent)
        run.sources.append(
            Source(path=f, kind="json", capture=cap, named=True, rank=rank, rank_origin=origin)
        )
    elif f.suffix in (".neff", ".ntff", ".pb"):
        raise InputError(f, f"a Neuron {f.suffix} file is not decoded by traceana; {_PB_HINT}")
    else:
        raise InputError(f, "not a profile traceana reads (expected .json, .json.gz or .parquet)")
    return run


_PB_HINT = (
    "export the capture with `neuron-explorer view -d <capture dir> --output-format parquet` "
    "and point traceana at the folder holding the result"
)


def pb_hint(folder: Path) -> str:
    """Return the advice given when raw system traces have no Explorer export beside them."""
    return (
        f"{folder}: ntrace.pb/trace_info.pb hold the runtime and hardware lanes, which traceana "
        f"does not decode; run `neuron-explorer view -d {folder} --output-format parquet` and "
        "point traceana at the folder holding its output (framework lanes from trace.json are "
        "still read)"
    )


def run_files(run: Run) -> list:
    """Return the files a run is made of: its sources (Parquet folders' files), capture.json
    files, NEFF/NTFF files and raw system traces."""
    files = []
    for src in run.sources:
        if src.kind == "explorer-parquet":
            files += [p for p in src.path.iterdir() if p.is_file()]
        else:
            files.append(src.path)
    files += [*run.captures, *run.neffs, *run.ntffs, *run.raw]
    return sorted(set(files), key=str)
