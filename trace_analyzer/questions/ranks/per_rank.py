"""The ranks of a run, a rank at a time (docs/distributed.md, "A rank at a time"): what one
rank's files give (``rank_part``: its steps' windows and their breakdown, its collectives,
its processes' ranks and hosts), and the reduce of those parts into the run's ``RanksResult``
(``combine``: the clock offsets, the stragglers), which holds no event: its memory grows with
the collectives and the steps, not with the events.

``ranks(profile)`` is ``combine([rank_part(profile)])``: a run read whole is one part. A run
read a file at a time (``loading/by_file.py``) is a part per file, each made where its file
is read (a worker process, a Dask worker), and the same result: the processes of files that
share process and device numbers at the same time are told apart here as loading tells them
apart in a run read whole (``by_file.lane_prefixes``, ``profile.processes_apart``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import polars as pl

from trace_analyzer.analyses.busy import window_of
from trace_analyzer.analyses.passes import Passes
from trace_analyzer.inputs.archive import relative_parts
from trace_analyzer.loading.by_file import lane_prefixes, lane_spans
from trace_analyzer.loading.profile import Profile, processes_apart
from trace_analyzer.model.schema import matching
from trace_analyzer.questions.ranks.analysis import (
    STEP,
    STEP_COLUMNS,
    RanksResult,
    breakdown,
    shares,
    step_windows,
    stragglers,
    who,
    without_args,
    work,
)
from trace_analyzer.questions.ranks.clocks import clock_offsets
from trace_analyzer.questions.ranks.collectives import COLUMNS, records
from trace_analyzer.questions.ranks.matching import group_totals, keyed, links, matched, overlapped

Formats = dict[str, tuple[str, int | None]]  # each file read: its format and rank


@dataclass(frozen=True, repr=False)
class RankPart:
    """What the ranks of some files give, with no event: ``who`` (pid, rank, host),
    ``work`` (each collective: pid, name, start_ns, end_ns, kind; and a row per pid with
    work, kind null), ``windows`` (per pid, device and step), ``table`` (their breakdown),
    ``steps`` (the ProfilerStep numbers its events hold), ``recs`` (its collectives'
    records, ``collectives.records``, with their time beside compute: ``matching.overlapped``)
    and whether it was read ``without_args``; and what telling processes apart takes:
    ``pids`` (its events' pids), ``lanes`` (``by_file.lane_spans``) and ``formats``."""

    name: str
    who: pl.DataFrame
    work: pl.DataFrame
    windows: pl.DataFrame
    table: pl.DataFrame
    recs: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=COLUMNS))
    without_args: bool = False
    steps: tuple[int, ...] = ()
    pids: tuple[int | None, ...] = ()
    lanes: pl.DataFrame = field(default_factory=pl.DataFrame)
    formats: Formats = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"RankPart({self.name!r}, {self.who.height} processes, {self.table.height} windows)"


def rank_part(profile: Profile, *, step: int | None = None) -> RankPart:
    """Return the part of ``profile`` (some ranks' files read, or a whole run); ``step``: that
    ProfilerStep's windows only (none when it has none: ``combine`` says so)."""
    events = profile.keyed  # ranks sharing a pid are numbered apart
    done = work(events, profile.edges)
    windows = step_windows(events, done)
    if step is not None:
        windows = windows.filter(pl.col("step") == step)
    named = events.filter(matching(events["name"], STEP)).select(
        pl.col("name").cast(pl.String).str.extract(STEP).cast(pl.Int64, strict=False)
    )
    markers = (
        done.select("pid")
        .unique()
        .with_columns(
            name=pl.lit(None, pl.String),
            start_ns=pl.lit(None, pl.Int64),
            end_ns=pl.lit(None, pl.Int64),
            kind=pl.lit(None, pl.String),
        )
    )
    comm = done.filter(pl.col("kind") == "communication")
    recs = overlapped(records(profile, done), done)
    return RankPart(
        name=profile.name,
        who=who(events),
        work=pl.concat([comm.select(markers.columns), markers]),
        windows=windows,
        table=breakdown(done, windows),
        recs=recs,
        without_args=bool(recs.height) and without_args(events),
        steps=tuple(sorted(set(named.to_series().drop_nulls().to_list()))),
        pids=tuple(events["pid"].unique().to_list()),
        lanes=lane_spans(events),
        formats={str(r.source.path): (r.format, r.rank) for r in profile.reads if r.read},
    )


def combine(parts: list[RankPart], *, root: str, step: int | None = None) -> RanksResult:
    """Return the ranks of the run ``root`` from its ``parts`` (``rank_part`` of each file, or
    of the whole run); ``step``: the step they were made for (a UsageError naming the run's
    steps when no part has it)."""
    if step is not None:
        _check_step(parts, step)
    parts = _told_apart(parts, root)
    notes: list[str] = []

    def joined(name: str) -> pl.DataFrame:
        frames: list[pl.DataFrame] = [getattr(p, name) for p in parts]
        return pl.concat(frames, how="vertical_relaxed")

    windows, table = joined("windows"), joined("table")
    recs = keyed(joined("recs"), notes)
    if any(p.without_args for p in parts):
        notes.append(
            "the run was read without its args: the collectives' kinds come from their names, "
            'and their groups and sizes are unknown (load it with args="later")'
        )
    offsets = clock_offsets(joined("work"), recs, windows, joined("who"), notes)
    shift = offsets.select(
        "pid", shift_ns=pl.when(pl.col("applied")).then(pl.col("offset_ns")).otherwise(0)
    )
    coll = matched(recs, shift)
    if step is not None:
        coll = coll.filter(pl.col("step") == step)
    table = table.join(offsets.select("pid", "rank", "offset_ns", "applied"), on="pid", how="left")
    shifted = pl.when(pl.col("applied")).then(pl.col("offset_ns")).otherwise(0).fill_null(0)
    table = table.with_columns(start_ns=pl.col("start_ns") - shifted).drop("offset_ns", "applied")
    return RanksResult(
        root=root,
        ranks=offsets.sort("rank", "pid", nulls_last=True),
        steps=table.select(*STEP_COLUMNS, *shares()).sort("step", "rank", "device"),
        stragglers=stragglers(table, notes),
        notes=tuple(notes),
        collectives=coll,
        collective_groups=group_totals(coll),
        collective_links=links(coll, recs),
    )


def _check_step(parts: list[RankPart], step: int) -> None:
    """Raise ``window_of``'s UsageError, naming the run's steps, when no part has ``step``."""
    held = sorted({n for p in parts for n in p.steps})
    names = pl.DataFrame({"name": [f"ProfilerStep#{n}" for n in held]}, schema={"name": pl.String})
    window_of(
        names.with_columns(source=pl.lit("framework"), start_ns=pl.lit(0), end_ns=pl.lit(0)),
        step=step,
    )


def _told_apart(parts: list[RankPart], root: str) -> list[RankPart]:
    """Return ``parts`` with the processes of files that share process and device numbers at
    the same time numbered apart and their devices named apart, as loading does in a run read
    whole (``profile.keep_files_apart``). A part of several files (a run read whole) was told
    apart as it was read."""
    formats: Formats = {f: v for p in parts for f, v in p.formats.items()}
    lanes = [p.lanes for p in parts if p.lanes.height]
    if len(formats) < 2 or not lanes:
        return parts
    spans = pl.concat(lanes, how="vertical_relaxed")
    prefix = lane_prefixes(spans, formats, lambda f: _in_run(f, root), [])
    if not prefix:
        return parts
    pairs = pl.concat(
        [
            pl.DataFrame({"file": list(p.formats)[0], "pid": list(p.pids)})
            for p in parts
            if len(p.formats) == 1
        ],
        how="vertical_relaxed",
    )
    renumbered = processes_apart(
        pairs.rename({"pid": "old"}).with_columns(pid="old"), sorted(prefix)
    )
    out = []
    for p in parts:
        if len(p.formats) != 1:
            out.append(p)
            continue
        file = list(p.formats)[0]
        pid = renumbered.filter(pl.col("file") == file).select("old", new="pid")
        out.append(_renamed(p, pid, prefix.get(file, "")))
    return out


def _renamed(part: RankPart, pid: pl.DataFrame, prefix: str) -> RankPart:
    """Return ``part`` with its pids numbered as ``pid`` says (old -> new) and its devices
    named with ``prefix``."""

    def renumber(df: pl.DataFrame) -> pl.DataFrame:
        out = df.join(pid, left_on="pid", right_on="old", how="left", nulls_equal=False)
        out = out.with_columns(pid="new").drop("new")
        if "device" in out.columns and prefix:
            out = out.with_columns(device=pl.lit(prefix) + pl.col("device"))
        return out.select(df.columns)

    return replace(
        part,
        who=renumber(part.who),
        work=renumber(part.work),
        windows=renumber(part.windows),
        table=renumber(part.table),
        recs=renumber(part.recs),
    )


def _in_run(file: str, root: str) -> str:
    """A file's path in its run (its name when it is not under the root)."""
    try:
        return "/".join(relative_parts(Path(file), Path(root))) or Path(file).name
    except ValueError:
        return Path(file).name


def ranks_passes(root: str, step: int | None = None) -> Passes[RanksResult]:
    """The ranks of the run ``root`` a file at a time (analyses/passes.py): one pass, each
    file's ``RankPart``, reduced by ``combine``."""
    parts = yield partial(rank_part, step=step)
    return combine(parts, root=root, step=step)
