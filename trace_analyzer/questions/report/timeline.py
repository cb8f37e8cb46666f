"""What a report's timeline draws, bounded in size whatever the trace (``traceana report``).

The span drawn is the gaps' window (the hardware span), widened back to the start of the op
that launched the first execution in it. It is cut into at most ``MAX_BUCKETS`` buckets of
``bucket_ns``; each hardware lane gives, per bucket, its busy and idle time (per mille of the
bucket) and the cause with the most idle in it, and each row of framework ops its coverage
and the op that covers most of it. Where a run has few gaps or ops they are listed one by one
instead (``EXACT_GAPS``, ``EXACT_OPS``); the ``TOP_GAPS`` longest gaps are listed always, with
their evidence, and around the ``DETAIL_WINDOWS`` longest device gaps every gap of the
bucketed lanes (``details``), for a closer look. Times in the lists are ns after the window
start, as the text outputs count (docs/report.md, "The timeline: buckets, and gap by gap").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import polars as pl

from trace_analyzer.analyses.busy import Window
from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import text
from trace_analyzer.questions.chain.analysis import chain_table
from trace_analyzer.questions.gaps.analysis import GapsResult, gaps
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.questions.report.grid import Grid, dominant, longest
from trace_analyzer.questions.report.lanes import (
    TOP_GAPS,
    LanePieces,
    LanePlan,
    lane_pieces,
    lane_plan,
    lanes_drawn,
)

OP_COLUMNS = ("event_id", "name", "pid", "tid", "start_ns", "end_ns")
MAX_LANES = 64  # lanes past these (in natural order) are counted, not drawn
MAX_OP_ROWS = 6  # nesting deeper than this is left out of the timeline
MAX_BUCKETS, MIN_BUCKETS = 4000, 500
MAX_CELLS = 64_000  # buckets × bucketed rows of one run: about 600 kB of JSON
EXACT_OPS = 1000  # ops listed one by one up to this many, else bucketed
NAME_CHARS = 160  # an op's name is drawn cut in its middle to this many characters (with "…")


@dataclass(frozen=True, repr=False)
class TimelineResult(RunResult):
    """The timeline of one run: ``start_ns`` to ``end_ns`` (None, and nothing drawn, when
    nothing ran on hardware), cut into ``buckets`` of ``bucket_ns`` from ``start_ns``.

    ``lanes``: per hardware lane drawn, plain data (docs/report.md); ``framework_ops``: the
    ops listed one by one (empty when ``op_count`` is over ``EXACT_OPS``: ``op_rows`` has
    them bucketed, the names in ``op_names``); ``details``: the windows of buckets around
    the longest device gaps with every gap of the bucketed lanes; ``histogram``: what the
    report's gap histogram draws (``questions.report.analysis.gap_histogram``).
    """

    root: str
    start_ns: int | None
    end_ns: int | None
    origin_ns: int | None = None
    bucket_ns: int = 1
    buckets: int = 0
    lanes: tuple[dict[str, Any], ...] = ()
    lane_count: int = 0
    framework_ops: pl.DataFrame = field(default_factory=pl.DataFrame)
    op_count: int = 0
    op_rows: tuple[dict[str, Any], ...] = ()
    op_names: tuple[str, ...] = ()
    histogram: dict[str, Any] | None = None
    details: tuple[dict[str, Any], ...] = ()

    csv_table = "framework_ops"

    def to_json(self) -> dict[str, Any]:
        o = self.origin_ns
        return {
            "root": self.root,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "from_ns": None if o is None or self.start_ns is None else self.start_ns - o,
            "to_ns": None if o is None or self.end_ns is None else self.end_ns - o,
            "bucket_ns": self.bucket_ns,
            "buckets": self.buckets,
            "causes": list(CAUSES),
            "lane_count": self.lane_count,
            "lanes": list(self.lanes),
            "details": list(self.details),
            "op_count": self.op_count,
            "framework_ops": self.framework_ops.to_dicts(),
            "op_rows": list(self.op_rows),
            "op_names": list(self.op_names),
            "histogram": self.histogram,
        }

    def main_frame(self) -> pl.DataFrame:
        return self.framework_ops

    def summary_rows(self) -> list[tuple[str, object]]:
        return [("run", self.root), ("start_ns", self.start_ns), ("end_ns", self.end_ns)]

    def __repr__(self) -> str:
        return frame_repr("TimelineResult", run=self.root, framework_ops=self.framework_ops)


def timeline(
    p: Profile, g: GapsResult | None = None, *, histogram: dict[str, Any] | None = None
) -> TimelineResult:
    """Return what the timeline of run ``p`` draws, from its gaps ``g`` (``gaps(p)`` when
    None); ``histogram``: what the report's gap histogram draws (``report.gap_histogram``)."""
    g = gaps(p) if g is None else g
    events, w = p.keyed, g.window  # ops packed per thread, files apart
    if w is None:
        empty = pl.DataFrame(schema={c: events.schema[c] for c in OP_COLUMNS})
        return TimelineResult(p.name, None, None, framework_ops=empty)
    c = g.chain if g.chain is not None else chain_table(events, p.edges)
    c = c.filter((pl.col("hw_end_ns") > w.start_ns) & (pl.col("hw_start_ns") < w.end_ns))
    launched = c["op_start_ns"].drop_nulls()
    start = min(w.start_ns, cast(int, launched.min())) if len(launched) else w.start_ns
    ops = (
        events.filter(
            (pl.col("lane_kind") == "framework_op")
            & (pl.col("end_ns") > start)
            & (pl.col("start_ns") < w.end_ns)
        )
        .sort("start_ns", "event_id")
        .select(*OP_COLUMNS)
    )
    long = text("name").str.len_chars() > NAME_CHARS
    head = NAME_CHARS // 2  # cut in the middle, as every table cuts a name (render/cut.py)
    cut = text("name").str.slice(0, head) + "…" + text("name").str.slice(head + 1 - NAME_CHARS)
    ops = packed(ops.with_columns(name=pl.when(long).then(cut).otherwise(text("name"))))
    return drawn(p.name, start, g, ops, histogram)


def drawn(
    root: str,
    start: int,
    g: GapsResult,
    ops: pl.DataFrame,
    histogram: dict[str, Any] | None,
    lanes_read: tuple[LanePlan, Sequence[LanePieces]] | None = None,
) -> TimelineResult:
    """The timeline of the run ``root`` from ``start`` to the end of its gaps' window (set):
    its framework ``ops`` (``packed``) and its gaps ``g`` on one grid of buckets, as
    ``timeline`` makes it of a run read whole and ``timeline_parts`` of one a rank at a time;
    ``lanes_read``: its drawn lanes' plan and each file's pieces, read where the files are
    (lanes.py), else read here from ``g``."""
    w = g.window
    assert w is not None
    lanes = sorted(g.lanes["lane"].to_list(), key=_natural)
    grid = grid_of(start, w, len(lanes), ops)
    framework, op_rows, names = _ops(ops, grid)
    top = longest(g.gaps, TOP_GAPS)
    if lanes_read is None:
        plan = lane_plan(g.lanes, g.device_gaps, lanes[:MAX_LANES], grid, w.end_ns)
        lanes_read = plan, [lane_pieces(g.gaps, plan)]
    drawn, details = lanes_drawn(g.lanes, top, *lanes_read)
    return TimelineResult(
        root,
        start,
        w.end_ns,
        origin_ns=w.start_ns,
        bucket_ns=grid.width,
        buckets=grid.n,
        lanes=tuple(drawn),
        details=tuple(details),
        lane_count=len(lanes),
        framework_ops=framework,
        op_count=ops.height,
        op_rows=tuple(op_rows),
        op_names=tuple(names),
        histogram=histogram,
    )


def packed(ops: pl.DataFrame) -> pl.DataFrame:
    """Return ``ops`` with ``row``: an op nested in (or overlapping) another goes one row
    down; ops past ``MAX_OP_ROWS`` rows are left out. Ops of equal times keep their order.
    Only their times are sorted and walked (a multi-rank run's reducer packs every op of its
    span: 2.8 million at 256 generated ranks)."""
    order = (
        ops.select("start_ns", "end_ns")
        .with_row_index("_i")
        .sort("start_ns", "end_ns", descending=[False, True], maintain_order=True)
    )
    ends: list[int] = []
    rows = []
    for s, e in order.select("start_ns", "end_ns").iter_rows():
        i = next((k for k, end in enumerate(ends) if s >= end), len(ends))
        if i == len(ends):
            ends.append(0)
        ends[i] = e
        rows.append(i)
    placed = pl.zeros(ops.height, pl.Int64, eager=True).scatter(
        order["_i"], pl.Series(rows, dtype=pl.Int64)
    )
    return ops.with_columns(row=placed).filter(pl.col("row") < MAX_OP_ROWS)


def grid_of(start: int, window: Window, lanes: int, ops: pl.DataFrame) -> Grid:
    """The grid of a timeline from ``start`` to the end of ``window``, of ``lanes`` hardware
    lanes (``MAX_LANES`` of them drawn) and its packed ``ops``: as many buckets as keep the
    cells under ``MAX_CELLS``, between ``MIN_BUCKETS`` and ``MAX_BUCKETS``."""
    rows = min(lanes, MAX_LANES) + (0 if ops.height <= EXACT_OPS else ops["row"].n_unique())
    target = max(MIN_BUCKETS, min(MAX_BUCKETS, MAX_CELLS // max(rows, 1)))
    width = max(1, -(-(window.end_ns - start) // target))
    return Grid(start, width, -(-(window.end_ns - start) // width), window.start_ns)


def _ops(ops: pl.DataFrame, grid: Grid) -> tuple[pl.DataFrame, list[dict[str, Any]], list[str]]:
    """Return the framework ops listed one by one (with ``row``, ``at_ns``, ``duration_ns``)
    when few, else none and the rows bucketed (coverage, op name index), and the names."""
    if ops.height <= EXACT_OPS:
        listed = ops.with_columns(
            at_ns=pl.col("start_ns") - grid.origin,
            duration_ns=pl.col("end_ns") - pl.col("start_ns"),
        )
        return listed, [], []
    found = dominant(
        grid.pieces(ops.rename({"start_ns": "s", "end_ns": "e"}), ["row", "name"]),
        "row",
        "name",
        grid.width,
    )
    names = found["name"].unique(maintain_order=True).to_list()
    found = found.with_columns(op=pl.col("name").replace_strict(names, list(range(len(names)))))
    dense = grid.dense(
        found.with_columns(pl.col("cover").clip(0, 1000)), "row", {"cover": 0, "op": -1}
    )
    rows = [{"row": r, **dense[r]} for r in sorted(dense)]
    return ops.clear(), rows, names


def _natural(name: str) -> list[int | str]:
    """Return a sort key that puts stream:7 before stream:23."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]
