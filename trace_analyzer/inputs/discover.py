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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import (
    ARCHIVE_SUFFIXES,
    AnyPath,
    MemberPath,
    is_archive,
    open_archive,
    relative_parts,
)
from trace_analyzer.inputs.limits import not_regular

PID_DIR = re.compile(r"^(?P<host>.+)_pid_(?P<pid>\d+)$")
TIMESTAMP_DIR = re.compile(r"^(\d{10,20}|\d{8}_\d{6}_\d{3})$")
PARQUET_EVENTS = re.compile(r"^SystemProfileEvents(_\d+)?\.parquet$")
# Per-core device JSON exports (0.6-1.4 GB each) and device-profile JSON: not system events.
DEVICE_JSON = re.compile(r"(_nc_\d+_session_\d+|^device_profile_model_.+)\.json(\.gz)?$")
CAPTURE_JSON = "capture.json"  # written by capture/: what was profiled, how
RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
PART_SEP = "#"  # between a run's root and its part's name (Run.name)


@dataclass(frozen=True)
class FileType:
    """What a file is to discovery, by its name: a source kind, or an artifact of its run.

    ``source``: for a source kind (what the readers read), whether the source is the file
    itself or the folder holding it (a set of tables, read together); None for artifacts.
    """

    pattern: re.Pattern[str]
    kind: str  # a source kind (json, explorer-parquet), or an artifact's kind
    source: Literal["file", "folder"] | None = None


# File names -> kinds, the first match deciding. Found in a folder, a file of a source kind
# becomes a Source (sniffed on read, for json); a file of another kind is listed in its run
# (neff, ntff, raw, capture), skipped with a note (device-json) or left out (not-a-trace).
# A file the user names is read as the first *source* kind its name matches. Any other file
# is not traceana's. A new file type is one row here (and, for a new source kind, a reader).
FILE_TYPES: tuple[FileType, ...] = (
    FileType(re.compile(r"\.neff$"), "neff"),
    FileType(re.compile(r"\.ntff$"), "ntff"),
    FileType(re.compile(r"\.pb$"), "raw"),  # ntrace.pb, trace_info.pb, cpu_util.pb, host_mem.pb
    FileType(PARQUET_EVENTS, "explorer-parquet", source="folder"),
    FileType(re.compile(rf"^{re.escape(CAPTURE_JSON)}$"), "capture"),
    FileType(re.compile(r"^truth\.json$"), "not-a-trace"),  # fixtures' records of truth
    FileType(DEVICE_JSON, "device-json"),
    FileType(re.compile(r"\.(pftrace|perfetto-trace)(\.gz)?$"), "perfetto", source="file"),
    FileType(re.compile(r"\.json(\.gz)?$"), "json", source="file"),
)
# source kind -> "file" or "folder": what the readers read (readers.REGISTRY's source kinds)
SOURCE_KINDS: dict[str, str] = {ft.kind: ft.source for ft in FILE_TYPES if ft.source}


# An Explorer export's table of its schema version, read beside its SystemProfileEvents.
METADATA_PARQUET = re.compile(r"^Metadata.*\.parquet$")


def read_when_found(name: str) -> bool:
    """Return True when traceana reads the bytes of a file of this name found in a folder.

    Sources (trace JSON, Explorer tables), capture.json and an export's Metadata table are
    read; every other file is listed by name and size, or not at all. An archive holds in
    memory the members this takes, and no others (archive.py).
    """
    ft = file_type(name)
    wanted = ft is not None and (ft.kind in SOURCE_KINDS or ft.kind == "capture")
    return wanted or bool(METADATA_PARQUET.match(name))


def file_type(name: str, *, sources_only: bool = False) -> FileType | None:
    """Return the first FILE_TYPES row ``name`` matches (of a source kind only, if asked)."""
    for ft in FILE_TYPES:
        if (not sources_only or ft.kind in SOURCE_KINDS) and ft.pattern.search(name):
            return ft
    return None


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

    path: AnyPath
    kind: str  # a SOURCE_KINDS key: "json" (sniffed on read) or "explorer-parquet"
    capture: Capture | None = None
    named: bool = False  # the user named this file itself
    rank: int | None = None
    rank_origin: str | None = (
        None  # "file name" or "folder name"; readers may set "distributedInfo"
    )


@dataclass
class Run:
    """Everything found under one run root."""

    root: AnyPath
    sources: list[Source] = field(default_factory=list)
    neffs: list[AnyPath] = field(default_factory=list)
    ntffs: list[AnyPath] = field(default_factory=list)
    raw: list[AnyPath] = field(default_factory=list)  # ntrace.pb, trace_info.pb, ...
    skipped: list[tuple[AnyPath, str]] = field(default_factory=list)
    # files named like an input that are not regular files (a FIFO, a link to a device):
    # never opened, each a warning of the run (what it is)
    not_regular: list[tuple[AnyPath, str]] = field(default_factory=list)
    captures: list[AnyPath] = field(default_factory=list)  # capture.json files
    layouts: set[str] = field(default_factory=set)
    # A part of a folder whose traces were recorded far apart (loading/parts.py): the path in
    # the root of its first file; None for a run that is one whole.
    part: str | None = None

    @property
    def name(self) -> str:
        """The run as every output names it: its root, and ``#part`` for a part."""
        return str(self.root) if self.part is None else f"{self.root}{PART_SEP}{self.part}"


def capture_of(path: AnyPath, top: AnyPath) -> tuple[Capture | None, AnyPath | None]:
    """Return the capture a file belongs to and that capture's run root, or (None, None).

    The ``_pid_`` folder may sit under ``top`` (its parent is the run root) or above it, when
    the user names a folder inside a capture (then ``top`` is the run root).
    """
    parts = relative_parts(path, top)[:-1] if path != top else ()
    folders: list[AnyPath] = [top, *(top.joinpath(*parts[: i + 1]) for i in range(len(parts)))]
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


def _capture(m: re.Match[str], inner: str | None) -> Capture:
    timestamp = inner if inner and TIMESTAMP_DIR.match(inner) else None
    return Capture(
        host=m["host"],
        pid=int(m["pid"]),
        layout="session" if timestamp else "flat",
        timestamp=timestamp,
    )


def rank_from_names(path: AnyPath) -> tuple[int | None, str | None]:
    """Return the rank spelled in a file or folder name, and which of the two held it."""
    m = RANK_IN_NAME.search(path.name)
    if m:
        return int(m[1]), "file name"
    m = RANK_IN_NAME.search(path.parent.name)
    if m:
        return int(m[1]), "folder name"
    return None, None


# traceana's own analysis cache (cache.py): never an input. Its folders are named so by
# default; a folder traceana made for --cache-dir holds its CACHEDIR.TAG (bford.info/cachedir),
# and a user's folder it keeps the cache in holds its MARK instead (no tag: backup tools would
# then skip the user's folder). A tag another program wrote is no reason to skip a folder.
CACHE_DIR_NAME = ".traceana-cache"
CACHEDIR_TAG = "CACHEDIR.TAG"
CACHE_MARK = ".traceana-cache-mark"
TAG_SAYS = b"traceana's analysis cache"  # in the tag traceana writes (cache/folder.TAG)


def is_cache(folder: Path) -> bool:
    """Whether ``folder`` is traceana's analysis cache (above); one that cannot be read is
    not (the walk then says it cannot read it)."""
    if folder.name == CACHE_DIR_NAME:
        return True
    try:
        if (folder / CACHE_MARK).is_file():
            return True
        with open(folder / CACHEDIR_TAG, "rb") as tag:
            return TAG_SAYS in tag.read(512)
    except OSError:
        return False


# What discovery passes by, by kind: the words of one (found in its line) -> of many. A run
# lists a few of a kind, and says more as a count and the first few (``passed_lines``); the
# CLI says it on stderr too, a line per kind, and each one under ``--verbose``.
PASSED_KINDS = {
    "not a regular file": "files named like a profile that are not regular files",
    "a folder that cannot be read": "folders that cannot be read",
    "a link to a folder already read": "links to a folder already read",
}
SHOWN = 3  # of the items of one kind, named in its line


def passed_kind(why: str) -> str:
    """Return the words for many of the kind ``why`` says (PASSED_KINDS)."""
    return next((many for one, many in PASSED_KINDS.items() if one in why), "files passed by")


def passed_lines(
    passed: list[tuple[AnyPath, str]], where: object, *, listed: int = SHOWN, hint: str = ""
) -> list[str]:
    """Return what discovery passed by under ``where``, a kind at a time: each item's own
    line where a kind has at most ``listed``, else one line of the count and the first
    ``SHOWN`` of them (then ``hint``)."""
    kinds: dict[str, list[tuple[AnyPath, str]]] = {}
    for item in passed:
        kinds.setdefault(passed_kind(item[1]), []).append(item)
    lines = []
    for many, items in kinds.items():
        if len(items) <= listed:
            lines += [f"{path}: {why}" for path, why in items]
            continue
        names = ", ".join(str(p) for p, _ in items[:SHOWN])
        more = f" and {len(items) - SHOWN:,} more" if len(items) > SHOWN else ""
        lines.append(f"{where}: {len(items):,} {many}, not read: {names}{more}{hint}")
    return lines


def folders(
    top: Path, odd: list[tuple[Path, str]] | None = None
) -> Iterator[tuple[Path, list[str]]]:
    """Every folder under ``top`` (itself included) with its file names, in path order (a
    folder's files, then its folders, each in name order: as ``os.walk``), without
    recursion (a tree thousands deep is walked). traceana's cache folders are left out; a
    folder that is a symbolic link is followed once (a link back to a folder already walked
    is not); what cannot be read, or is not followed, is said in ``odd`` (the run near it
    warns of it)."""
    seen: set[tuple[int, int]] = set()
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:
                if odd is not None:
                    odd.append((folder, "a link to a folder already read: not read again"))
                continue
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            if odd is not None:
                odd.append((folder, f"a folder that cannot be read ({e.strerror or e}): skipped"))
            continue
        names, below = [], []
        for entry in entries:
            try:
                is_folder = entry.is_dir()  # through a link
            except OSError:
                is_folder = False
            if not is_folder:
                names.append(entry.name)
            elif not is_cache(Path(entry.path)):
                below.append(Path(entry.path))
        yield folder, names
        stack.extend(reversed(below))


def _walk(top: AnyPath, odd: list[tuple[Path, str]]) -> Iterator[AnyPath]:
    if isinstance(top, MemberPath):
        for f in top.walk_files():
            if CACHE_DIR_NAME not in f.parts[:-1]:
                yield f
        return
    for folder, names in folders(top, odd):
        for name in names:
            yield folder / name


def discover(path: str | AnyPath, *, max_bytes: int | None = None) -> list[Run]:
    """Return the runs under ``path`` (a folder, a single file, or an archive), in path order.

    An archive (.tar, .tar.gz/.tgz, .zip) is read in memory and walked like a folder; its
    paths are ``MemberPath`` objects (inputs/archive.py). ``max_bytes`` caps what it may
    inflate to (None: limits.default_max_bytes()); its members carry the cap to the readers.
    """
    top: AnyPath = path if isinstance(path, MemberPath) else Path(path)
    if not top.exists():
        raise InputError(str(top), "no such file or folder")
    odd = not_regular(top) if isinstance(top, Path) and not top.is_dir() else None
    if odd is not None:  # a FIFO would block the read, /dev/zero never end it
        raise InputError(str(top), f"{odd}, not a regular file: traceana reads files")
    if not isinstance(top, MemberPath) and top.is_file() and is_archive(top):
        top = open_archive(top, max_bytes=max_bytes).root
    if top.is_file():
        return [_single_file(top)]
    finder = _Finder(top)
    inner: list[AnyPath] = []  # archives inside an archive: not opened
    for f in _walk(top, finder.odd):
        finder.add(f)
        if isinstance(top, MemberPath) and f.name.lower().endswith(ARCHIVE_SUFFIXES):
            inner.append(f)
    found = finder.runs()
    if not found:
        odd = "".join(f"; {p.name}: {why}" for p, why in finder.odd[:3])
        if inner:
            names = ", ".join("/".join(relative_parts(f, top)) for f in inner[:3])
            odd += (f"; it holds {len(inner)} archive{'s' * (len(inner) > 1)} ({names}), and an "
                    "archive inside an archive is not opened: extract the outer one")  # fmt: skip
        raise InputError(
            str(top), f"no profile found (no trace JSON, Explorer export or Neuron capture){odd}"
        )
    return found


class _Finder:
    """The runs found so far under ``top``, as its files are added in path order."""

    def __init__(self, top: AnyPath):
        self.top = top
        self.by_root: dict[AnyPath, Run] = {}
        self.loose: list[tuple[AnyPath, Source]] = []  # run root decided at the end
        self.folders: set[AnyPath] = set()  # folders already made a (folder) source
        self.odd: list[tuple[Path, str]] = []  # named like an input, not a regular file

    def run_at(self, root: AnyPath) -> Run:
        return self.by_root.setdefault(root, Run(root=root))

    def add(self, f: AnyPath) -> None:
        """File one file: as a source, an artifact of its run, or nothing."""
        ft = file_type(f.name)
        if ft is not None and ft.kind != "not-a-trace" and isinstance(f, Path):
            odd = not_regular(f)
            if odd is not None:
                self.odd.append((f, f"{odd}, not a regular file: not read"))
                return
        cap, root = capture_of(f, self.top)
        if ft is not None and ft.kind == "neff" and f.parent.name == "neffs":  # vLLM
            self.run_at(f.parent.parent).neffs.append(f)
            self.run_at(f.parent.parent).layouts.add("vllm-neffs")
            return
        owner = self.run_at(root) if root is not None else None
        if cap and owner:
            owner.layouts.add(cap.layout)  # any file in a capture folder makes its layout
        if ft is None or ft.kind == "not-a-trace":
            return
        if ft.kind in SOURCE_KINDS:
            src = self._source(f, ft.kind, cap)
            if src is not None:
                _place(src, owner, self.loose)
            return
        run = owner or self.run_at(f.parent)
        if ft.kind in ("neff", "ntff"):
            (run.neffs if ft.kind == "neff" else run.ntffs).append(f)
            if owner is None:
                run.layouts.add("bare")
        elif ft.kind == "raw":
            run.raw.append(f)
        elif ft.kind == "capture":
            run.captures.append(f)
        elif ft.kind == "device-json":
            run.skipped.append((f, "per-core device JSON: not read"))

    def _source(self, f: AnyPath, kind: str, cap: Capture | None) -> Source | None:
        """Return the Source ``f`` makes; None for a folder already made one."""
        if SOURCE_KINDS[kind] == "folder":
            if f.parent in self.folders:
                return None
            self.folders.add(f.parent)
            return Source(path=f.parent, kind=kind, capture=cap)
        rank, origin = rank_from_names(f)
        return Source(path=f, kind=kind, capture=cap, rank=rank, rank_origin=origin)

    def runs(self) -> list[Run]:
        """Return the runs with content, in path order, loose sources settled."""
        _settle(self.loose, self.by_root, self.top)
        runs = sorted(self.by_root.values(), key=lambda r: str(r.root))
        runs = [r for r in runs if _has_content(r)]
        for f, why in self.odd:  # the run of its folder or the nearest above, else the first
            near = [r for r in runs if isinstance(r.root, Path) and f.is_relative_to(r.root)]
            home = max(near, key=lambda r: len(r.root.parts), default=runs[0] if runs else None)
            if home is not None:
                home.not_regular.append((f, why))
        return runs


def _place(src: Source, owner: Run | None, loose: list[tuple[AnyPath, Source]]) -> None:
    if owner is not None:
        owner.sources.append(src)
    else:
        loose.append((src.path if _is_folder(src) else src.path.parent, src))


def _is_folder(src: Source) -> bool:
    """Return True when the source is a folder (of tables), not a file."""
    return SOURCE_KINDS[src.kind] == "folder"


def _settle(loose: list[tuple[AnyPath, Source]], runs: dict[AnyPath, Run], top: AnyPath) -> None:
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


def _single_file(f: AnyPath) -> Run:
    """Return the run of a file the user named: the first source kind its name matches."""
    run = Run(root=f.parent)
    ft = file_type(f.name, sources_only=True)
    if ft is not None and SOURCE_KINDS[ft.kind] == "folder":
        run.sources.append(Source(path=f.parent, kind=ft.kind, named=True))
    elif ft is not None:
        rank, origin = rank_from_names(f)
        cap, _ = capture_of(f, f.parent)
        run.sources.append(
            Source(path=f, kind=ft.kind, capture=cap, named=True, rank=rank, rank_origin=origin)
        )
    elif f.suffix in (".neff", ".ntff") and isinstance(f, Path) and (held := _holding(f)):
        return held  # its folder's run: the same answer named alone as found there
    elif f.suffix in (".neff", ".ntff", ".pb"):
        raise InputError(str(f), f"a Neuron {f.suffix} file is not decoded by traceana; {_PB_HINT}")
    else:
        raise InputError(
            str(f), "not a profile traceana reads (expected .json, .json.gz or .parquet)"
        )
    return run


def _holding(f: Path) -> Run | None:
    """The run of ``f``'s folder that holds the NEFF or NTFF ``f``, if any."""
    try:
        runs = discover(f.parent)
    except InputError:
        return None
    return next((r for r in runs if f in (*r.neffs, *r.ntffs)), None)


_PB_HINT = (
    "export the capture with `neuron-explorer view -d <capture dir> --output-format parquet` "
    "and point traceana at the folder holding the result"
)


def pb_hint(folder: AnyPath) -> str:
    """Return the advice given when raw system traces have no Explorer export beside them."""
    return (
        f"{folder}: ntrace.pb/trace_info.pb hold the runtime and hardware lanes, which traceana "
        f"does not decode; run `neuron-explorer view -d {folder} --output-format parquet` and "
        "point traceana at the folder holding its output (framework lanes from trace.json are "
        "still read)"
    )


def run_files(run: Run) -> list[AnyPath]:
    """Return the files a run is made of: its sources (Parquet folders' files), capture.json
    files, NEFF/NTFF files and raw system traces."""
    files: list[AnyPath] = []
    for src in run.sources:
        if _is_folder(src):
            files += [p for p in src.path.iterdir() if p.is_file()]
        else:
            files.append(src.path)
    files += [*run.captures, *run.neffs, *run.ntffs, *run.raw]
    return sorted(set(files), key=str)
