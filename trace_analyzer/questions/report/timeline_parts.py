"""The report's timeline of a run, a rank at a time (docs/distributed.md, "The timeline a rank
at a time"): ``timeline_passes`` gives, after its passes, the function that makes the
``TimelineResult`` of the run read whole from the run's gaps (``GapsResult``, made by the
gaps' passes) and the gap histogram.

- **Pass 1** (``timeline_facts``): each file's hardware span and the earliest start of an op
  that launched one of its executions (``chain_table``), the executions at the edges of its
  span apart (whether they fall in the run's window is known only with it); the reducer takes
  the window (the hardware span of the run, as the gaps' is) and the start drawn from.
- **Pass 2** (``timeline_ops``): each file's framework ops in that span, in its order: their
  start, end and name (an index into the file's names, each cut as the timeline cuts it).
  The reducer holds every one of them: which row an op is drawn on (``timeline.packed``) is
  a first fit over every op of the run, whichever file's, in order of start, so neither the
  rows nor their buckets can be made a file at a time.
- **Pass 3**, only where the run's ops are listed one by one (``EXACT_OPS`` or fewer after
  packing): for the listed ops' times, how many events of each file sort before them
  (``gaps.per_rank.tie_counts``), which makes each op's id the run's (``Renumber``), and
  the file's ops of those times with their ids, pids and tids (``op_ids``).

The lanes, their buckets, the listed gaps and the details windows are made of the gaps'
rows, which the run's ``GapsResult`` holds every one of (``timeline._lanes``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import polars as pl

from trace_analyzer.analyses.busy import Window
from trace_analyzer.analyses.passes import Passes
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import text
from trace_analyzer.questions.chain.analysis import chain_table
from trace_analyzer.questions.gaps.analysis import Fixed, GapsResult, _gaps
from trace_analyzer.questions.gaps.per_rank import Renumber, tie_counts
from trace_analyzer.questions.report.lanes import LanePieces, LanePlan, lane_pieces, lane_plan
from trace_analyzer.questions.report.timeline import (
    EXACT_OPS,
    MAX_LANES,
    NAME_CHARS,
    OP_COLUMNS,
    TimelineResult,
    _natural,
    drawn,
    grid_of,
    packed,
)

Drawn = Callable[[GapsResult, "dict[str, Any] | None"], TimelineResult]


@dataclass(frozen=True)
class TimelineFacts:
    """What one file tells the timeline before its ops are read: its hardware ``span`` (None
    without hardware), the earliest start of an op that launched one of its executions inside
    that span (``launched``), and per (hw_start_ns, hw_end_ns) of the executions at its edges
    (ending at or before its start, starting at or after its end: zero-length ones) the
    earliest such start (``edges``), and the schema of its ops (``OP_COLUMNS``)."""

    span: tuple[int, int] | None
    launched: int | None
    edges: pl.DataFrame
    schema: dict[str, pl.DataType]


def timeline_facts(profile: Profile) -> TimelineFacts:
    """Return the ``TimelineFacts`` of ``profile`` (one file of a run)."""
    events = profile.keyed
    schema = {c: events.schema[c] for c in OP_COLUMNS}
    hw = events.filter(pl.col("lane_kind") == "hardware")
    if hw.is_empty():
        return TimelineFacts(None, None, pl.DataFrame(), schema)
    s, e = (int(x) for x in hw.select(pl.col("start_ns").min(), pl.col("end_ns").max()).row(0))
    c = chain_table(events, profile.edges).select("hw_start_ns", "hw_end_ns", "op_start_ns")
    inside = (pl.col("hw_end_ns") > s) & (pl.col("hw_start_ns") < e)  # in any window over it
    first = c.filter(inside)["op_start_ns"].min()
    edges = (
        c.filter(~inside & pl.col("op_start_ns").is_not_null())
        .group_by("hw_start_ns", "hw_end_ns")
        .agg(pl.col("op_start_ns").min())
    )
    return TimelineFacts((s, e), None if first is None else int(first), edges, schema)  # type: ignore[arg-type]


@dataclass(frozen=True, repr=False)
class OpsPart:
    """One file's framework ops in the span drawn, in its order (by start, end, then id: the
    run read whole's among them): their ``times`` (``start_ns``, ``end_ns``) and ``name``,
    an index into its ``names`` (each cut as the timeline cuts it, ``NAME_CHARS``): what
    packing them and their buckets read. Their ids, processes and threads travel only where
    the run's ops are listed one by one (``op_ids``)."""

    times: pl.DataFrame
    names: tuple[str, ...]

    def __repr__(self) -> str:
        return f"OpsPart({self.times.height} ops, {len(self.names)} names)"


def _file_ops(profile: Profile, start: int, end: int) -> pl.DataFrame:
    """The framework ops of ``profile`` that overlap ``start`` to ``end`` (``OP_COLUMNS``),
    in the order of ``OpsPart``, their names cut."""
    ops = profile.keyed.filter(
        (pl.col("lane_kind") == "framework_op")
        & (pl.col("end_ns") > start)
        & (pl.col("start_ns") < end)
    ).select(*OP_COLUMNS)
    long = text("name").str.len_chars() > NAME_CHARS
    head = NAME_CHARS // 2  # cut in the middle, as timeline() cuts it
    cut = text("name").str.slice(0, head) + "…" + text("name").str.slice(head + 1 - NAME_CHARS)
    named = ops.with_columns(name=pl.when(long).then(cut).otherwise(text("name")))
    return named.sort("start_ns", "end_ns", "event_id").with_row_index("pos")


def timeline_ops(profile: Profile, start: int, end: int) -> OpsPart:
    """Pass 2: the ``OpsPart`` of ``profile`` (one file of a run), its ops that overlap
    ``start`` to ``end``."""
    ops = _file_ops(profile, start, end)
    names = ops["name"].unique(maintain_order=True)
    index = pl.col("name").replace_strict(names, pl.int_range(names.len(), dtype=pl.UInt32))
    return OpsPart(ops.select("start_ns", "end_ns", index), tuple(names.to_list()))


def op_ids(
    profile: Profile, start: int, end: int, queries: pl.DataFrame
) -> tuple[pl.Series, pl.DataFrame, pl.DataFrame]:
    """Pass 3, where the run's ops are listed: ``tie_counts`` of ``queries`` (the listed
    ops' distinct times) among the events of ``profile`` (one file), and its ops of those
    times (as ``timeline_ops`` has them: ``pos``) with their ``event_id``, ``pid``, ``tid``."""
    ops = _file_ops(profile, start, end).join(queries, on=["start_ns", "end_ns"], how="semi")
    return (*tie_counts(profile.events, queries), ops.select("pos", "event_id", "pid", "tid"))


def _start(facts: list[TimelineFacts]) -> tuple[int, int, int] | None:
    """The run's window (its hardware span: start, end) and the start the timeline draws
    from: back to the earliest op that launched an execution in the window; None without
    hardware."""
    spans = [f.span for f in facts if f.span is not None]
    if not spans:
        return None
    w0, w1 = min(s for s, _ in spans), max(e for _, e in spans)
    starts = [f.launched for f in facts if f.launched is not None]
    for f in facts:
        if f.edges.height:
            found = f.edges.filter((pl.col("hw_end_ns") > w0) & (pl.col("hw_start_ns") < w1))
            starts += found["op_start_ns"].to_list()
    return w0, w1, min([w0, *starts])


def _run_ops(parts: list[OpsPart]) -> pl.DataFrame:
    """The files' ops together (``file``, ``pos``: whose and which, ``start_ns``, ``end_ns``,
    ``name``) in the run read whole's order, by start then event id (its events are numbered
    by (start, end), the files in order: ``schema.numbered``), packed into rows
    (``timeline.packed``)."""
    ops = pl.concat(
        [
            p.times.with_columns(
                file=pl.lit(i, pl.Int32),
                pos=pl.int_range(pl.len(), dtype=pl.UInt32),
                name=pl.col("name").replace_strict(
                    pl.int_range(len(p.names), dtype=pl.UInt32, eager=True),
                    pl.Series(p.names, dtype=pl.String),
                ),
            )
            for i, p in enumerate(parts)
        ]
    )
    return packed(ops.sort("start_ns", "end_ns", "file", "pos"))


def timeline_passes(root: str, board: dict[str, Any] | None = None) -> Passes[Drawn]:
    """The report's timeline of the run ``root`` a file at a time (module doc): the function
    of the run's ``GapsResult`` (``gaps`` of the run read whole) and the histogram that gives
    ``timeline(run, gaps, histogram=...)``. ``board``: what the gaps' passes, run in step
    before these, tell of the run after their parts' round (``gaps_passes``): then the lanes
    drawn are read where the files are (``lanes_and_ids``), and the gaps need hold only their
    longest."""
    facts: list[TimelineFacts] = yield partial(timeline_facts)
    schema = facts[0].schema if facts else {}
    found = _start(facts)
    if found is None:
        return partial(_drawn, root, None, pl.DataFrame(schema=schema))
    w0, end, start = found
    ops = _run_ops((yield partial(timeline_ops, start=start, end=end)))
    queries = None
    if 0 < ops.height <= EXACT_OPS:  # listed one by one, with their ids: the run's
        queries = ops.select("start_ns", "end_ns").unique().sort("start_ns", "end_ns")
    plan = _plan(board, start, Window(w0, end, ""), ops) if board else None
    replies: list[Any] = []
    if plan is not None:
        fixed = board["fixed"]  # type: ignore[index]
        replies = yield partial(
            lanes_and_ids, start=start, end=end, queries=queries, fixed=fixed, plan=plan
        )
    elif queries is not None:
        replies = [
            (r, None) for r in (yield partial(op_ids, start=start, end=end, queries=queries))
        ]
    if queries is not None:
        ops = _numbered(ops, [r[0] for r in replies], queries)
    else:
        ops = ops.with_columns(
            event_id=pl.lit(None, pl.Int64), pid=pl.lit(None, pl.Int64), tid=pl.lit(None, pl.Int64)
        )
    listed = pl.Schema({**schema, "name": pl.String()})  # cut: as timeline() has them
    read = None if plan is None else (plan, [r[1] for r in replies])
    return partial(
        _drawn, root, found, ops.select(*OP_COLUMNS, "row").cast(listed), lanes_read=read
    )


def _plan(board: dict[str, Any], start: int, window: Window, ops: pl.DataFrame) -> LanePlan:
    """The plan of the lanes drawn (lanes.py) from what the gaps' parts told (``board``)."""
    lanes = board["lanes"]
    names = sorted(lanes["lane"].cast(pl.String).to_list(), key=_natural)
    grid = grid_of(start, window, len(names), ops)
    return lane_plan(lanes, board["device_gaps"], names[:MAX_LANES], grid, window.end_ns)


def lanes_and_ids(
    profile: Profile,
    start: int,
    end: int,
    queries: pl.DataFrame | None,
    fixed: Fixed,
    plan: LanePlan,
) -> tuple[tuple[pl.Series, pl.DataFrame, pl.DataFrame] | None, LanePieces]:
    """Pass 3 with the gaps' parts told (``timeline_passes``' ``board``): the file's ``op_ids``
    where the ops are listed, and its gaps (measured again with the run's ``fixed``) read
    into its drawn lanes' pieces (``lanes.lane_pieces``)."""
    ids = None if queries is None else op_ids(profile, start, end, queries)
    r = _gaps(profile, None, None, 0, None, None, fixed, [])
    hardware = profile.events.filter(pl.col("lane_kind") == "hardware")
    own = set(hardware["lane"].cast(pl.String).unique().to_list())
    return ids, lane_pieces(r.gaps, plan, own)


def _numbered(
    ops: pl.DataFrame,
    replies: list[tuple[pl.Series, pl.DataFrame, pl.DataFrame]],
    queries: pl.DataFrame,
) -> pl.DataFrame:
    """``ops`` (the run's, listed) with each one's event id (the run's: ``Renumber``), pid
    and tid from each file's ``replies`` (``op_ids`` of ``queries``), in the run read
    whole's order (by start, then id)."""
    listed = [
        ops.filter(pl.col("file") == i).join(r[2], on="pos", how="left")
        for i, r in enumerate(replies)
    ]
    ids = Renumber([f.select("start_ns", "end_ns", id="event_id") for f in listed])
    assert ids.queries.equals(queries)
    for i, (lt, eq, _) in enumerate(replies):
        ids.add(i, lt, eq)
    mine = [ids.renamed(f, i, ("event_id",)) for i, f in enumerate(listed)]
    return pl.concat(mine).sort("start_ns", "event_id")


def _drawn(
    root: str,
    window: tuple[int, int, int] | None,
    ops: pl.DataFrame,
    g: GapsResult,
    histogram: dict[str, Any] | None,
    lanes_read: tuple[LanePlan, list[LanePieces]] | None = None,
) -> TimelineResult:
    """The ``TimelineResult`` of the run ``root`` from its ``window`` (start, end, the start
    drawn from; None without hardware), its ops (packed) and its gaps ``g``: as ``timeline``
    makes it."""
    w = g.window
    if window is None or w is None:
        if (window is None) != (w is None):
            raise ValueError("the gaps were measured on another window than the timeline's")
        return TimelineResult(root, None, None, framework_ops=ops)
    if (w.start_ns, w.end_ns) != window[:2]:
        raise ValueError("the gaps were measured on another window than the timeline's")
    return drawn(root, window[2], g, ops, histogram, lanes_read)
