"""The analysis cache: a loaded run's events and edges tables, kept as Parquet for next time.

Loading is most of an analysis (parse, label, deduplicate, link). The second analysis of an
unchanged run reads the two tables back instead; ``gaps`` results are kept beside them, per
set of options, under the same key. An entry is keyed by the run's fingerprint
(``inputs/fingerprint.py``: path, size, modification and change time and inode of every
file the run is made of), plus traceana's version and this format's; any change to one of
them is a miss, and the entry is rebuilt.

The cache sits at the edge: loading (``loading.profile``) and analysing (``analyses``) know
nothing of it; a ``Cache`` wraps them for the CLI (and for a library user who asks:
``ta.load(path, cache=True)``).

Where (docs/cache.md): ``Cache(folder=DIR)`` (the CLI's ``--cache-dir`` or
``TRACEANA_CACHE_DIR``); otherwise ``.traceana-cache/`` inside the folder the user named, so
that nothing is written outside the path the user named. A single file named directly has
no cache unless a folder is given; archives are never cached. Every cache folder holds a
``CACHEDIR.TAG``, and discovery skips folders that do. A cache that cannot be written (a
read-only folder, a full disk) is skipped silently: it only saves time.

A profile folder may come from someone else (a tar that keeps symbolic links), so every
file of the cache is read and written through ``folder.Folder``, which follows no link the
user did not name; a link is a miss, with a warning on the run. Every table is stored with
its size and CRC-32 in the meta and checked before polars sees it (a damaged Parquet file
can abort the process inside polars, which no ``except`` catches).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
import polars as pl

from trace_analyzer._version import __version__
from trace_analyzer.cache import spelling
from trace_analyzer.cache.folder import TAG, Folder, Linked
from trace_analyzer.cache.results import as_bytes, read_gaps, write_gaps
from trace_analyzer.cache.where import cache_place
from trace_analyzer.inputs.archive import MemberPath, is_archive
from trace_analyzer.inputs.discover import Run, Source, run_files
from trace_analyzer.inputs.fingerprint import fingerprint
from trace_analyzer.inputs.limits import effective
from trace_analyzer.loading.parts import part_run
from trace_analyzer.loading.profile import (
    Profile,
    ReadResult,
    check_strict,
    load_parts,
    one_under,
    read_parts,
    runs_under,
)
from trace_analyzer.model.device import DeviceRun
from trace_analyzer.questions.engines.below import with_engines
from trace_analyzer.questions.gaps.analysis import GapsResult, gaps

if TYPE_CHECKING:
    from trace_analyzer.model.schema import Args

# Raised whenever what is stored, or what a stored result would hold, changes within one
# traceana version (2: zero-length executions at the window's edges counted by gaps;
# 3: keyed by the shared run fingerprint; 4: legacy JSON timestamp_unit, warnings and
# metadata, NEFF/NTFF pairs by stem; 5: links as the flow graph, Explorer's keys carried to
# trace.json, launches from Python; 6: the gap model of issue 16 with evidence and hints, the
# active span and its idle %, traces far apart in time refused; 7: gaps per ProfilerStep;
# 8: evidence and hints written with numbers.duration; 9: each table's size and CRC-32 in
# the meta, checked before the table is read; 10: text columns of the events and edges
# tables dictionary-encoded; 11: the files whose processes are told apart; 12: keyed and
# named by the real path, the spelling it was written under kept to respell a hit; 13: an
# Explorer export's args_json kept only when args are asked for; 14: steps from the host's
# ProfilerStep annotations only; 15: Neuron ranks from Explorer's worker_gid, an export's
# steps taken per process; 16: a stream wait's awaited stream and event record, two columns;
# 17: a folder of traces recorded far apart kept as its parts, an entry each and one listing;
# 18: each trace's world size, from its distributedInfo; 19: args_at, where a plain Kineto
# trace's args lie in it, kept by a read with args="later"; 20: each trace's process groups,
# from its distributedInfo's pg_config).
FORMAT = 20
TABLES = (".events.parquet", ".edges.parquet")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Entry:
    """Where one loaded run's entry lives, and its key: results are cached under it too.

    ``inside``: the folder the user named when the cache is the ``.traceana-cache`` in it
    (never followed if it is a link); None for a cache folder the user named (which may be).
    ``root``: the run's root as spelled by this command, and ``names`` the first parts of its
    files' paths inside it (``spelling.names``): what a stored result may not mention to be
    read under another spelling.
    """

    folder: Path
    stem: Path
    key: str
    inside: Path | None = None
    root: str = ""
    names: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Cache:
    """The analysis cache of one command: loads through it read and write entries.

    ``enabled``: False reads and writes nothing. ``folder``: the cache folder; None for the
    user's cache directory (``where.default_folder``), or with ``in_profile``, the
    ``.traceana-cache`` inside the folder the user named (none then for a file). Archives are
    never cached.
    """

    enabled: bool = True
    folder: Path | None = None
    in_profile: bool = False
    _entries: dict[str, Entry] = field(default_factory=dict, compare=False, repr=False)
    _warned: set[str] = field(default_factory=set, compare=False, repr=False)

    def place_for(self, named: str | Path) -> tuple[Path, Path | None] | None:
        """Return the cache folder for a load of the path the user named, and the folder it
        lies in when that is the profile folder (``where.cache_place``); None for none."""
        if not self.enabled or isinstance(named, MemberPath) or is_archive_path(named):
            return None
        return cache_place(named, self.folder, self.in_profile)

    def load_runs(
        self,
        path: str | Path,
        *,
        args: Args = False,
        strict: bool = False,
        max_bytes: int | None = None,
        run: str | None = None,
    ) -> list[Profile]:
        """``loading.profile.load_runs`` through the cache."""
        parts = partial(self.load_parts, place=self.place_for(path), args=args, strict=strict)
        return runs_under(path, run, max_bytes, parts)

    def load(
        self,
        path: str | Path,
        *,
        args: Args = False,
        strict: bool = False,
        max_bytes: int | None = None,
        run: str | None = None,
    ) -> Profile:
        """``loading.profile.load`` through the cache."""
        parts = partial(self.load_parts, place=self.place_for(path), args=args, strict=strict)
        return one_under(path, run, max_bytes, parts)

    def load_parts(
        self,
        run: Run,
        place: tuple[Path, Path | None] | None,
        *,
        args: Args = False,
        strict: bool = False,
        max_bytes: int | None = None,
    ) -> list[Profile]:
        """Return the run (or its parts: loading/parts.py) read back from the cache folder
        ``place`` names (``place_for``), or read afresh and stored there.

        A link where the cache should be is a miss, and a warning on the run (once per
        cache folder and command): the user should know the folder holds one.
        """
        k = key(run, args, max_bytes) if place is not None else None
        if place is None or k is None:
            return load_parts(run, args=args, strict=strict, max_bytes=max_bytes)
        entry = _entry(*place, run, args, k)
        linked: list[str] = []
        found = _unlinked(linked, _read_entries, entry, run, args, max_bytes)
        if found is None:
            profiles = read_parts(run, args=args, max_bytes=max_bytes)
            found = _unlinked(linked, _write_entries, entry, profiles, args, max_bytes)
            found = found or [(p, None) for p in profiles]
        profiles = []
        for profile, stored in found:
            if stored is not None:
                self._entries[profile.name] = stored
            fresh = [w for w in dict.fromkeys(linked) if w not in self._warned]
            if fresh:
                self._warned.update(fresh)
                profile = replace(profile, warnings=[*profile.warnings, *fresh])
            profiles.append(check_strict(profile, strict))
        return profiles

    def gaps(
        self,
        profile: Profile,
        *,
        step: int | None = None,
        span: tuple[int, int] | None = None,
        min_gap_ns: int = 0,
        lanes: str | None = None,
        latency_ns: int | None = None,
        device: DeviceRun | None = None,
    ) -> GapsResult:
        """``questions.gaps.analysis.gaps`` with its result kept beside the run's entry, per
        options; ``device``: as ``gaps``, the table below the ops added to the kept result."""
        options = {
            "step": step,
            "span": span,
            "min_gap_ns": min_gap_ns,
            "lanes": lanes,
            "latency_ns": latency_ns,
        }
        found = self._kept_gaps(profile, options)
        return with_engines(found, profile, device, found.chain)

    def _kept_gaps(self, profile: Profile, options: dict[str, Any]) -> GapsResult:
        """``gaps`` of ``profile`` with ``options``: read back from beside its entry, else
        computed and kept there (when it has executions)."""
        # some ranks only (--rank): a result of its own
        stored = options if profile.selected is None else {**options, "ranks": profile.selected}
        entry = self._entries.get(profile.name)
        if entry is None:
            return gaps(profile, **options)
        hit = read_gaps(entry, stored)
        if hit is not None:
            return replace(hit, root=profile.name)
        result = gaps(profile, **options)
        if result.summary["executions"]:
            write_gaps(entry, stored, result)
        return result

    def run_gaps(
        self,
        run: Run,
        place: tuple[Path, Path | None],
        options: dict[str, Any],
        made: Callable[[], GapsResult | None],
        max_bytes: int | None = None,
    ) -> GapsResult | None:
        """The gaps of ``run`` read a file at a time (``made``: None where it is to be read
        whole), kept beside the run's entry as ``gaps`` keeps a run read whole's, under the
        same key and options: the two give the same result, so either answers the other."""
        k = key(run, False, max_bytes)
        if k is None:
            return made()
        entry = _entry(*place, run, False, k)
        hit = read_gaps(entry, options)
        if hit is not None:
            return replace(hit, root=run.name)
        result = made()
        if result is not None and result.summary["executions"]:
            write_gaps(entry, options, result)
        return result


def key(run: Run, args: Args, max_bytes: int | None = None) -> str | None:
    """Return the digest of everything an entry depends on; None when it cannot be had.

    Computed before the run is read, so that a file changing during the read makes the
    entry's key stale rather than the entry. Runs inside archives are not cached. The same
    for every spelling of the run's path (``spelling.identity``: the root's real path, the
    files relative to it). A run with a compressed input is kept per cap on what it may
    inflate to (``max_bytes``): an entry read under one cap answers no other, so a smaller
    cap reads the run again and refuses it as an uncached read does.
    """
    cap = effective(max_bytes) if any(_compressed(f) for f in run_files(run)) else None
    h = hashlib.sha256(f"{FORMAT}\0{__version__}\0{args}\0{cap}\0".encode())
    h.update(spelling.identity(run).encode())
    try:
        fp = fingerprint(run, relative=True)
    except OSError:
        return None
    if fp.in_archive or isinstance(run.root, MemberPath):
        return None
    h.update(fp.digest.encode())
    return h.hexdigest()


def _stem(folder: Path, run: Run, args: Args) -> Path:
    """The entry's name: the run's real path (its part, the file named alone), so that every
    spelling finds the one entry."""
    real = os.path.realpath(str(run.root))
    part = "" if run.part is None else f"\0{run.part}"
    # a file named alone is a run of its own beside its folder's: an entry of its own
    named = "".join(f"\0{spelling.relative(s.path, run.root)}" for s in run.sources if s.named)
    name = hashlib.sha256(f"{real}\0{args}{part}{named}".encode()).hexdigest()[:24]
    return folder / name


def _entry(folder: Path, inside: Path | None, run: Run, args: Args, k: str) -> Entry:
    """The entry of ``run`` (or of a part of one) under the key ``k``."""
    return Entry(folder, _stem(folder, run, args), k, inside, str(run.root), spelling.names(run))


Stored = list[tuple[Profile, Entry | None]]  # each profile, and the entry it is kept under


def _read_entries(entry: Entry, run: Run, args: Args, max_bytes: int | None) -> Stored | None:
    """Return the profile stored under ``entry``, or its parts' (each under its own entry,
    the entry listing them), with their entries; None for a miss."""
    try:
        with Folder(entry.folder, entry.inside, create=False) as folder:
            meta = orjson.loads(folder.read(entry.stem.name + ".json"))
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(meta, dict) or meta.get("key") != entry.key:
        return None
    if "parts" not in meta:
        profile = _read_entry(entry, run)
        return None if profile is None else [(profile, entry)]
    found: Stored = []
    try:
        inside = {spelling.relative(s.path, run.root): s for s in run.sources}
        for i, (name, files) in enumerate(meta["parts"]):
            sub = part_run(run, [inside[f] for f in files], name, first=i == 0)
            k = key(sub, args, max_bytes)
            held = None if k is None else _entry(entry.folder, entry.inside, sub, args, k)
            profile = None if held is None else _read_entry(held, sub)
            if profile is None:
                return None
            found.append((profile, held))
    except (KeyError, TypeError, ValueError):
        return None
    return found


def _write_entries(
    entry: Entry, profiles: list[Profile], args: Args, max_bytes: int | None
) -> Stored | None:
    """Write the entry of a run read as one profile; of a run read as parts, an entry per part
    and, last, the run's entry that lists them. None when one could not be written."""
    if len(profiles) == 1 and profiles[0].run.part is None:
        return [(profiles[0], entry)] if _write_entry(entry, profiles[0]) else None
    stored: Stored = []
    for p in profiles:
        k = key(p.run, args, max_bytes)
        held = None if k is None else _entry(entry.folder, entry.inside, p.run, args, k)
        if held is None or not _write_entry(held, p):
            return None
        stored.append((p, held))
    listed = [
        [p.run.part, [spelling.relative(s.path, p.run.root) for s in p.run.sources]]
        for p in profiles
    ]
    meta = {"parts": listed, "root": entry.root, "key": entry.key}
    try:
        with Folder(entry.folder, entry.inside, create=True) as folder:
            folder.write(entry.stem.name + ".json", as_bytes(orjson.dumps(meta)))
    except OSError:
        return None
    return stored


def _unlinked(linked: list[str], call: Callable[..., _T], *args: Any) -> _T | None:
    """Return ``call(*args)``; a link met on the way is noted in ``linked``, and None."""
    try:
        return call(*args)
    except Linked as e:
        linked.append(str(e))
        return None


def _read_entry(entry: Entry, run: Run) -> Profile | None:
    """Return the profile stored under ``entry``, or None (a miss). An entry written under
    another spelling of the root is respelled (``spelling``), where it can be."""
    try:
        with Folder(entry.folder, entry.inside, create=False) as folder:
            meta = orjson.loads(folder.read(entry.stem.name + ".json"))
            if not isinstance(meta, dict) or meta.get("key") != entry.key:
                return None
            old = meta["root"]
            if old != entry.root:
                meta = spelling.respell_meta(meta, old, run) if meta["portable"] else None
                if meta is None:
                    return None
            stored, edges = (folder.table(entry.stem.name + s, meta) for s in TABLES)
        events = stored if old == entry.root else spelling.respell_files(stored, old, entry.root)
        if events is None:
            return None
        sources = {str(s.path): s for s in run.sources}
        reads = [_read_result(r, sources) for r in meta["reads"] if r["source"] in sources]
        return Profile(
            run=run,
            events=events,
            edges=edges,
            reads=reads,
            warnings=meta["warnings"],
            notes=meta["notes"],
            dropped=meta["dropped"],
            pairs=meta["pairs"],
            cached=True,
            apart=meta["apart"],
        )
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, pl.exceptions.PolarsError):
        return None


def _read_result(r: dict[str, Any], sources: dict[str, Source]) -> ReadResult:
    return ReadResult(
        source=sources[r["source"]],
        format=r["format"],
        schema_version=r["schema_version"],
        rank=r["rank"],
        rank_origin=r["rank_origin"],
        world_size=r["world_size"],
        groups=r["groups"],
        notes=r["notes"],
        warnings=r["warnings"],
        read=r["read"],
        n_events=r["n_events"],
    )


def reads_meta(reads: list[ReadResult]) -> list[dict[str, Any]]:
    """Return what the cache keeps of each ReadResult (all but its events)."""
    return [
        {
            "source": str(r.source.path),
            "format": r.format,
            "schema_version": r.schema_version,
            "rank": r.rank,
            "rank_origin": r.rank_origin,
            "world_size": r.world_size,
            "groups": r.groups,
            "notes": r.notes,
            "warnings": r.warnings,
            "read": r.read,
            "n_events": r.count,
        }
        for r in reads
    ]


def _write_entry(entry: Entry, p: Profile) -> bool:
    """Write an entry (each file atomically, the meta holding the key last); False if not."""
    name = entry.stem.name
    try:
        with Folder(entry.folder, entry.inside, create=True) as folder:
            # the tables first, the meta (which holds the key) last: a half-written entry misses
            tables = {name + s: df for s, df in zip(TABLES, (p.events, p.edges), strict=True)}
            meta = {
                "reads": reads_meta(p.reads),
                "warnings": p.warnings,
                "notes": p.notes,
                "dropped": p.dropped,
                "pairs": p.pairs,
                "apart": p.apart,
                "tables": {f: folder.write_table(f, df) for f, df in tables.items()},
                "root": entry.root,  # as spelled: another spelling respells what it names
                "key": entry.key,
            }
            files = p.events.get_column("file").unique().drop_nulls().cast(pl.String)
            paths = spelling.paths_of(meta, files.to_list())
            meta["portable"] = spelling.portable(spelling.texts_of(meta), paths, p.run)
            folder.write(name + ".json", as_bytes(orjson.dumps(meta)))
    except (OSError, pl.exceptions.PolarsError):
        return False
    return True


def is_archive_path(named: str | Path) -> bool:
    """Whether ``named`` is an archive file (never cached: its members cannot be stat'd)."""
    path = Path(named)
    return path.is_file() and is_archive(path)


def as_cache(cache: Cache | bool | str | Path | None) -> Cache | None:
    """Return the Cache a library caller asked for: True (inside the named folder), a
    folder, a Cache, or None/False (none)."""
    if cache is None or cache is False:
        return None
    if cache is True:
        return Cache()
    if isinstance(cache, Cache):
        return cache
    return Cache(folder=Path(cache))


__all__ = ["FORMAT", "TAG", "Cache", "Entry", "Linked", "as_cache", "key", "reads_meta"]


def _compressed(path: object) -> bool:
    """Whether a run's file is read under the cap on what it inflates to (a gzipped trace,
    an Explorer Parquet table: inputs/limits.py)."""
    return str(path).endswith((".gz", ".parquet"))
