"""A loaded profile: one run's sources read into one events table, duplicates removed.

When a run holds the same events twice, one copy is kept (docs/formats.md, "Duplicates"):
- Explorer Parquet and legacy JSON of the same process: the Parquet rows;
- framework events in trace.json and in an Explorer export: trace.json's (it keeps the Kineto
  categories and args; Explorer's copy is derived from it);
- device events of a Neuron trace.json and Explorer's ``neuron_hw`` lane: Explorer's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import TypeVar

import polars as pl

from trace_analyzer.errors import InputError, UsageError
from trace_analyzer.inputs.archive import AnyPath, MemberPath, relative_parts
from trace_analyzer.inputs.discover import Run, Source, discover, passed_lines
from trace_analyzer.inputs.fingerprint import same_bytes, same_folders
from trace_analyzer.inputs.neff import Pair, neff_pairs, raw_without_export, undecoded_hardware
from trace_analyzer.loading.by_file import lane_prefixes, lane_spans
from trace_analyzer.loading.clocks import FAR_REASON, exclude_far, refuse_past_int64
from trace_analyzer.loading.link import link
from trace_analyzer.loading.offsets import align_exports
from trace_analyzer.loading.parts import pick, picked, split
from trace_analyzer.model.schema import EVENTS_SCHEMA, Args, check_events, empty_events, numbered
from trace_analyzer.progress import sized, step
from trace_analyzer.readers import ReadResult as ReadResult  # a Profile's reads (cache.py too)
from trace_analyzer.readers import read_source

_Named = TypeVar("_Named", "Run", "Profile")
FRAMEWORK_KINDS = ("framework_op", "framework_dispatch", "framework_stream", "annotation")


@dataclass(frozen=True, repr=False)
class Profile:
    """One run: its sources, its events and edges tables, and what was noticed on the way.

    ``events`` has one row per event (docs/formats.md, the events table); ``edges`` one row
    per link, child to parent (docs/graph.md). ``cached`` is True when both were read back
    from the analysis cache rather than from the run's files. ``apart``: the files whose
    processes are told apart from the others' (``keep_files_apart``); ``keyed`` is the events
    table as analyses key processes and threads; ``selected``: the ``--rank`` kept (select.py).
    """

    run: Run
    events: pl.DataFrame
    edges: pl.DataFrame
    reads: list[ReadResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    pairs: list[Pair] = field(default_factory=list)
    cached: bool = False
    apart: list[str] = field(default_factory=list)
    selected: str | None = None

    @property
    def root(self) -> AnyPath:
        """The run's root: a folder, a trace file's folder, or ``archive!/member``."""
        return self.run.root

    @property
    def name(self) -> str:
        """The run as every output names it: its root, and ``#part`` for a part (parts.py)."""
        return self.run.name

    def links(self) -> pl.DataFrame:
        """Return the edges table (the same as ``edges``)."""
        return self.edges

    @cached_property
    def keyed(self) -> pl.DataFrame:
        """The events table with each process of the ``apart`` files numbered apart
        (``processes_apart``), the table itself when there are none. Whatever keys on a
        process or a thread (op nesting, a gap's launching thread, a runtime sequence, an
        execution id) takes this table, so that two files sharing a pid and a tid stay
        apart; what shows a pid shows the events table's own."""
        return processes_apart(self.events, self.apart) if self.apart else self.events

    @property
    def has_export(self) -> bool:
        """True when a Neuron Explorer export of the run was read."""
        return has_export(self.reads)

    @property
    def undecoded_hardware(self) -> bool:
        """True when the run's hardware activity sits only in files traceana does not decode."""
        return undecoded_hardware(self.run, self.has_export)

    def __repr__(self) -> str:
        lanes = self.events["lane"].n_unique() if self.events.height else 0
        return f"Profile(run={self.name!r}, {self.events.height} events, {lanes} lanes)"


def has_export(reads: list[ReadResult]) -> bool:
    """True when a Neuron Explorer export is among the reads."""
    return any(r.format.startswith("explorer") and r.read for r in reads)


# Formats recognised as profiles of another kind (no timing lanes traceana reads): a path
# that holds nothing else is refused with the line that names the file's kind.
NOT_TIMING = ("execution-trace", "rocprofiler-sdk", "rocprof-v1")


def refuse_untimed(profiles: list[Profile]) -> list[Profile]:
    """Return ``profiles``; when none of them read a trace and one of their files is a
    profile of another kind (``NOT_TIMING``), raise an InputError that names it."""
    if any(r.read for p in profiles for r in p.reads):
        return profiles
    for p in profiles:
        for r in p.reads:
            if r.format in NOT_TIMING:
                raise InputError(str(r.source.path), r.notes[0] if r.notes else r.format)
    return profiles


def one_run(path: str | Path, runs: list[Run]) -> Run:
    """Return the one run of ``runs`` found under ``path``; several are a UsageError."""
    return one_of(path, runs)


def one_of(path: object, runs: list[_Named]) -> _Named:
    """Return the one run (or profile) of ``runs``, found under ``path``; several are a
    UsageError that names them, and how to name one."""
    if len(runs) > 1:
        names = ", ".join(r.name for r in runs[:3]) + (", ..." if len(runs) > 3 else "")
        raise UsageError(
            f"{path}: {len(runs)} runs found ({names}); name one of them ({{param}} NAME)",
            param="run",
        )
    return runs[0]


def load_runs(
    path: str | Path,
    *,
    args: Args = False,
    strict: bool = False,
    max_bytes: int | None = None,
    run: str | None = None,
) -> list[Profile]:
    """Return every run found under ``path`` (a folder, a trace file, an archive), each loaded:
    a folder whose traces were recorded far apart is a run per part (parts.py).

    ``args``, ``strict``, ``max_bytes``, ``run``: as for ``load``.
    """
    return runs_under(path, run, max_bytes, partial(load_parts, args=args, strict=strict))


def load(
    path: str | Path,
    *,
    args: Args = False,
    strict: bool = False,
    max_bytes: int | None = None,
    run: str | None = None,
) -> Profile:
    """Return the one run under ``path``; several runs are a UsageError (use ``load_runs``, or
    name one with ``run``).

    ``args``: keep each event's args as JSON text in ``args_json`` (a Kineto record's args,
    an Explorer row's ``extra_attributes_json``); off by default, since no analysis reads them.
    ``strict``: malformed events dropped while reading are an InputError, not a warning.
    ``max_bytes``: the most a compressed input (a ``.gz`` trace, an archive) may inflate to;
    None for the default, an eighth of the usable memory, at most 16 GiB (docs/reliability.md).
    ``run``: the run to load, by name: its root below ``path``, a part's name, one of its
    files (parts.py); None: the one run there is.
    """
    return one_under(path, run, max_bytes, partial(load_parts, args=args, strict=strict))


# How the runs of one discovered run are loaded (``load_parts``, or the cache's)
PartsLoader = Callable[..., list[Profile]]


def runs_under(
    path: str | Path, run: str | None, max_bytes: int | None, parts: PartsLoader
) -> list[Profile]:
    """``load_runs`` with ``parts(run, max_bytes=...)`` loading each discovered run."""
    top = _top(path)
    found = pick(discover(path, max_bytes=max_bytes), run, top)
    loaded = [p for r in found for p in parts(r, max_bytes=max_bytes)]
    return refuse_untimed(picked(loaded, run, top))


def one_under(
    path: str | Path, run: str | None, max_bytes: int | None, parts: PartsLoader
) -> Profile:
    """``load`` with ``parts(run, max_bytes=...)`` loading the discovered run."""
    top = _top(path)
    found = one_run(path, pick(discover(path, max_bytes=max_bytes), run, top))
    return one_of(path, refuse_untimed(picked(parts(found, max_bytes=max_bytes), run, top)))


def _top(path: str | Path) -> AnyPath:
    return path if isinstance(path, MemberPath) else Path(path)


def load_parts(
    run: Run, *, args: Args = False, strict: bool = False, max_bytes: int | None = None
) -> list[Profile]:
    """Read every source of one discovered run, link its events, and return its profile, or
    one per part when its traces were recorded far apart (parts.py)."""
    return [check_strict(p, strict) for p in read_parts(run, args=args, max_bytes=max_bytes)]


def check_strict(profile: Profile, strict: bool) -> Profile:
    """Return ``profile``; with ``strict``, a run whose malformed events were dropped raises."""
    if profile.dropped and strict:
        detail = ", ".join(f"{n} with {why}" for why, n in profile.dropped.items())
        raise InputError(
            str(profile.run.root), f"malformed events dropped ({{param}}): {detail}", param="strict"
        )
    return profile


def read_parts(run: Run, *, args: Args = False, max_bytes: int | None = None) -> list[Profile]:
    """Return the profile of one run read from its files (no strict check); a run whose files
    were recorded far apart, a profile per part (parts.py)."""
    sources, copies = unique_sources(run)
    alone = len(sources) == 1  # its events may come in order (format.PathReader)
    reads = [r for r in (read_one(s, args, max_bytes, alone) for s in sources) if r is not None]
    reads, clock_warnings, clock_notes = align_exports(reads)  # an export off trace.json's clock
    return [
        profile_of(part, held, [*said, *copies], (clock_warnings, clock_notes))
        for part, held, said in split(run, reads)  # unrelated traces in one folder: parts
    ]


def read_one(src: Source, args: Args, max_bytes: int | None, alone: bool) -> ReadResult | None:
    """``read_source``, said as a step of the work (``progress``: a line on a terminal)."""
    step(f"reading {src.path.name}{sized(src.path)}")
    return read_source(src, args, max_bytes=max_bytes, in_order=alone)


def profile_of(
    run: Run, reads: list[ReadResult], said: list[str], clock: tuple[list[str], list[str]]
) -> Profile:
    """Return the profile of ``run`` made of its ``reads``: its warnings open with ``said``;
    ``clock``: what aligning an export to its trace warned and noted (``align_exports``), of
    the whole run when this is a part of one."""
    events, notes = deduplicate(reads)
    events, apart = keep_files_apart(events, reads, run.root, notes)
    events, dropped = check_events(events)
    for r in reads:  # what the readers could not make an event of (a B without its E)
        for why, n in r.dropped.items():
            dropped[why] = dropped.get(why, 0) + n
    events, far, far_warnings = exclude_far(run.name, events)  # events far outside the run
    refuse_past_int64(run.name, events)  # totals polars would wrap
    for r in reads:  # the run's table holds their events now; each read keeps its count
        r.n_events, r.events = r.count, r.events.clear()
    held = [events]
    del events  # numbered() holds the table alone, so it can let each column go
    events = numbered(held)
    warnings = said + [w for r in reads for w in r.warnings] + shared_ranks(reads)
    if dropped:
        detail = ", ".join(f"{n} with {why}" for why, n in dropped.items())
        warnings.append(f"{run.name}: malformed events dropped: {detail}")
    dropped |= {FAR_REASON: far} if far else {}
    warnings += clock[0] + far_warnings
    notes += clock[1]
    notes += [f"{path}: {why}" for path, why in run.skipped]
    warnings += passed_lines(run.not_regular, run.root)  # a FIFO, a folder it cannot read
    pairs = neff_pairs(run, warnings)
    warnings += raw_without_export(run, has_export(reads))
    step(f"linking {events.height:,} events")
    return Profile(
        run=run,
        events=events,
        edges=link(processes_apart(events, apart) if apart else events),
        apart=apart,
        reads=reads,
        warnings=warnings,
        notes=notes,
        dropped=dropped,
        pairs=pairs,
    )


def unique_sources(run: Run) -> tuple[list[Source], list[str]]:
    """Return the run's sources less byte-identical copies, and a warning naming each pair.

    A trace and its copy (``trace.json``, ``trace (1).json``) would count every event twice:
    the copy is read once (``fingerprint.same_bytes``); so is an Explorer export folder whose
    tables repeat another's (``fingerprint.same_folders``)."""
    files = [s.path for s in run.sources if s.kind == "json"]
    folders = [s.path for s in run.sources if s.kind == "explorer-parquet"]
    pairs = [(k, c, "trace") for k, c in (same_bytes(files) if len(files) > 1 else [])]
    pairs += [(k, c, "export") for k, c in (same_folders(folders) if len(folders) > 1 else [])]
    if not pairs:
        return run.sources, []
    left_out = {str(copy) for _, copy, _ in pairs}
    warnings = [
        f"{copy}: the same {'bytes' if what == 'trace' else 'tables'} as {kept}: a copy of one "
        f"{what}, read once"
        for kept, copy, what in pairs
    ]
    return [s for s in run.sources if str(s.path) not in left_out], warnings


def keep_files_apart(
    events: pl.DataFrame, reads: list[ReadResult], root: AnyPath, notes: list[str]
) -> tuple[pl.DataFrame, list[str]]:
    """Return ``events`` with the lanes of files that would share a lane told apart, and the
    files whose lanes were (their ``file`` values); ``notes`` gains a line per format.

    A lane is named after its process and device, so two traces of one format whose pid and
    device agree at the same time (two ranks in containers, both pid 1) would land on one
    lane: their busy intervals merged, device time doubled. Such files keep their rank in
    every lane name (``rank:1/PID:1/GPU:0/stream:7``) when each has its own, else their path
    in the run (``file:b.json/PID:1/...``). Lanes that differ already (ranks with their own
    pids; a trace and its Explorer export, whose copies ``deduplicate`` removed), and one
    process's sessions one after another, keep their names.
    """
    formats = {str(r.source.path): (r.format, r.rank) for r in reads if r.read}
    if len(formats) < 2 or events.is_empty():
        return events, []
    spans = lane_spans(events)
    prefix = lane_prefixes(spans, formats, lambda f: _in_run(f, reads, root), notes)
    if not prefix:
        return events, []
    qualifier = pl.col("file").replace_strict(prefix, default="")
    lane = pl.concat_str(qualifier, pl.col("lane")).cast(EVENTS_SCHEMA["lane"])  # as read
    return events.with_columns(lane=lane), sorted(prefix)


def shared_ranks(reads: list[ReadResult]) -> list[str]:
    """A warning per rank that several files of one format claim (two traces that both say
    rank 0): ``--rank`` then takes them all, and ``ranks`` counts their processes as one
    rank's. A trace and its Explorer export (two formats) claim one rank rightly."""
    claims: dict[tuple[str, int], list[ReadResult]] = {}
    for r in reads:
        if r.read and r.rank is not None:
            claims.setdefault((r.format, r.rank), []).append(r)
    notes = []
    for (fmt, rank), claimed in sorted(claims.items()):
        if len(claimed) > 1:
            files = ", ".join(sorted(str(r.source.path) for r in claimed))
            said = claimed[0].rank_origin or "their names"
            notes.append(
                f"{len(claimed)} {fmt} files claim rank {rank} ({said}: {files}): --rank "
                f"{rank} takes them all, and ranks counts them as one"
            )
    return notes


def _in_run(file: str, reads: list[ReadResult], root: AnyPath) -> str:
    """Return a file's path inside its run root (its name when it is not under the root)."""
    path = next(r.source.path for r in reads if str(r.source.path) == file)
    parts = relative_parts(path, root) if path != root else ()
    return "/".join(parts) or path.name


def processes_apart(events: pl.DataFrame, files: list[str]) -> pl.DataFrame:
    """Return ``events`` as the linker sees them: each (file, pid) of ``files`` and each pid
    of the other files numbered apart. Link keys (correlation, flow and sequence ids) are
    unique within a process only: two ranks sharing a pid would take each other's launches."""
    own = pl.when(pl.col("file").is_in(files)).then(pl.col("file"))
    process = pl.struct(own.alias("_f"), pl.col("pid")).rank("dense").cast(pl.Int64)
    return events.with_columns(pid=pl.when(pl.col("pid").is_not_null()).then(process))


def deduplicate(reads: list[ReadResult]) -> tuple[pl.DataFrame, list[str]]:
    """Return the union of the reads' events with the duplicate copies removed, and notes."""
    held = [r for r in reads if r.read and len(r.events)]
    if not held:
        return empty_events(), []
    if len({r.format for r in held}) < 2:  # a copy is of one format in another: none here
        return pl.concat([r.events for r in held]), []
    df = pl.concat([r.events.with_columns(_fmt=pl.lit(r.format)) for r in held])
    notes: list[str] = []

    def procs(fmt: str, cond: pl.Expr) -> pl.Expr:
        """Return a mask of rows whose process also has rows of ``fmt`` matching ``cond``.

        A process is (host, pid); a missing host (a trace.json outside a capture folder)
        matches any host with that pid.
        """
        keys = df.filter((pl.col("_fmt") == fmt) & cond).select("host", "pid").unique().rows()
        mask = pl.lit(False)
        for host, pid in keys:
            if pid is None:  # no process to match (comparing with null matches nothing)
                continue
            same_host = pl.col("host").is_null() | (
                pl.lit(host).is_null() if host is None else pl.col("host") == host
            )
            mask = mask | ((pl.col("pid") == pid) & same_host)
        return mask

    def drop(cond: pl.Expr, what: str) -> None:
        nonlocal df
        n = df.filter(cond).height
        if n:
            df = df.filter(~cond)
            notes.append(f"{n} {what}")

    fmt, src = pl.col("_fmt"), pl.col("source")
    drop(
        (fmt == "explorer-json") & procs("explorer-parquet", pl.lit(True)),
        "events of the legacy JSON export also in the Parquet export: kept the Parquet copy",
    )
    copies = (
        fmt.str.starts_with("explorer")
        & (src == "framework")
        & procs("kineto-json", pl.col("lane_kind").is_in(FRAMEWORK_KINDS))
    )
    exported = procs("explorer-parquet", pl.lit(True)) | procs("explorer-json", pl.lit(True))
    df = carry_keys(df, copies, (fmt == "kineto-json") & exported)
    drop(copies, "framework events of the Explorer export also in trace.json: kept trace.json's")
    drop(
        (fmt == "kineto-json")
        & (src == "privateuse1")
        & (
            procs("explorer-parquet", src == "neuron_hw")
            | procs("explorer-json", src == "neuron_hw")
        ),
        "device events of trace.json also on Explorer's neuron_hw lanes: kept Explorer's",
    )
    return df.drop("_fmt"), notes


CARRY_TOLERANCE_NS = 1_000  # trace.json's µs with three decimals against Explorer's ns


def carry_keys(df: pl.DataFrame, copies: pl.Expr, kept: pl.Expr) -> pl.DataFrame:
    """Return ``df`` with the link keys of Explorer's framework copies given to the trace.json
    events they copy, before the copies are dropped.

    Explorer's copy of a trace.json event can hold what trace.json does not: its Neuron flow
    ids (the framework side of the dependency chain, docs/graph.md) and keys lifted from its
    attributes. A copy is the kept event of the same process, lane kind and name that starts
    nearest it, within 1 µs. The kept event keeps its own keys and gains the copy's flow ids.
    """
    rows = df.with_row_index("_row")
    have = pl.col("flow_ids").is_not_null() | pl.col("seq_id").is_not_null()
    source = rows.filter(copies & (have | pl.col("exec_id").is_not_null())).select(
        "pid", "lane_kind", "name", "start_ns", c_flows="flow_ids", c_seq="seq_id", c_exec="exec_id"
    )
    if source.is_empty():
        return df
    found = (
        rows.filter(kept)
        .select("_row", "pid", "lane_kind", "name", "start_ns")
        .sort("start_ns")
        .join_asof(
            source.sort("start_ns"),
            on="start_ns",
            by=["pid", "lane_kind", "name"],
            strategy="nearest",
            tolerance=CARRY_TOLERANCE_NS,
            check_sortedness=False,  # sorted by start_ns above; polars cannot check within groups
        )
        .filter(
            pl.col("c_flows").is_not_null()
            | pl.col("c_seq").is_not_null()
            | pl.col("c_exec").is_not_null()
        )
        .select("_row", "c_flows", "c_seq", "c_exec")
    )
    if found.is_empty():
        return df
    both = pl.concat_list(pl.col("flow_ids").fill_null([]), pl.col("c_flows").fill_null([]))
    merged = both.list.unique(maintain_order=True)
    return (
        rows.join(found, on="_row", how="left")
        .with_columns(
            flow_ids=pl.when(merged.list.len() > 0).then(merged),
            seq_id=pl.col("seq_id").fill_null(pl.col("c_seq")),
            exec_id=pl.col("exec_id").fill_null(pl.col("c_exec")),
        )
        .drop("_row", "c_flows", "c_seq", "c_exec")
    )
