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

from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import text
from trace_analyzer.questions.chain.analysis import chain_table
from trace_analyzer.questions.gaps.analysis import GapsResult, gaps
from trace_analyzer.questions.gaps.causes import CAUSES

OP_COLUMNS = ("event_id", "name", "pid", "tid", "start_ns", "end_ns")
MAX_LANES = 64  # lanes past these (in natural order) are counted, not drawn
MAX_OP_ROWS = 6  # nesting deeper than this is left out of the timeline
MAX_BUCKETS, MIN_BUCKETS = 4000, 500
MAX_CELLS = 64_000  # buckets × bucketed rows of one run: about 600 kB of JSON
EXACT_GAPS = 2000  # a run's lanes list their gaps one by one while they hold this many
EXACT_OPS = 1000  # ops listed one by one up to this many, else bucketed
NAME_CHARS = 160  # an op's name is drawn cut in its middle to this many characters (with "…")
TOP_GAPS = 200  # the longest gaps, always listed (the page's gap table holds as many)
DETAIL_WINDOWS, DETAIL_GAPS = 20, 3000  # around the longest device gaps: every gap, this many
# per row key (a lane, an op row): each column's value in every bucket
Dense = dict[Any, dict[str, list[int]]]


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


def longest(frame: pl.DataFrame, n: int, by: str = "duration_ns") -> pl.DataFrame:
    """Return the ``n`` rows of ``frame`` with the largest ``by`` (table order at equal
    values), in table order: the gaps a report lists."""
    if frame.height <= n:
        return frame
    picked = frame.with_row_index("_row").sort(by, descending=True, maintain_order=True)
    return picked.head(n).sort("_row").drop("_row")


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
) -> TimelineResult:
    """The timeline of the run ``root`` from ``start`` to the end of its gaps' window (set):
    its framework ``ops`` (``packed``) and its gaps ``g`` on one grid of buckets, as
    ``timeline`` makes it of a run read whole and ``timeline_parts`` of one a rank at a time."""
    w = g.window
    assert w is not None
    lanes = sorted(g.lanes["lane"].to_list(), key=_natural)
    rows = min(len(lanes), MAX_LANES) + (0 if ops.height <= EXACT_OPS else ops["row"].n_unique())
    target = max(MIN_BUCKETS, min(MAX_BUCKETS, MAX_CELLS // max(rows, 1)))
    width = max(1, -(-(w.end_ns - start) // target))
    grid = _Grid(start, width, -(-(w.end_ns - start) // width), w.start_ns)
    framework, op_rows, names = _ops(ops, grid)
    drawn, details = _lanes(g, lanes[:MAX_LANES], grid)
    return TimelineResult(
        root,
        start,
        w.end_ns,
        origin_ns=w.start_ns,
        bucket_ns=width,
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


@dataclass(frozen=True)
class _Grid:
    """Buckets ``n`` of ``width`` ns from ``start`` (ns); ``origin``: the window start."""

    start: int
    width: int
    n: int
    origin: int

    def pieces(self, frame: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
        """Return each interval ``s``..``e`` of ``frame`` cut at the bucket edges: ``keys``,
        ``bucket`` and ``overlap`` (ns). Intervals of one key must not overlap."""
        w, lim = self.width, self.n * self.width
        d = frame.select(
            *keys,
            s=(pl.col("s") - self.start).clip(0, lim),
            e=(pl.col("e") - self.start).clip(0, lim),
        ).filter(pl.col("e") > pl.col("s"))
        d = d.with_columns(b0=pl.col("s") // w, b1=(pl.col("e") - 1) // w)
        first = d.select(
            *keys, bucket="b0", overlap=pl.min_horizontal("e", (pl.col("b0") + 1) * w) - pl.col("s")
        )
        last = d.filter(pl.col("b1") > pl.col("b0")).select(
            *keys, bucket="b1", overlap=pl.col("e") - pl.col("b1") * w
        )
        inner = (
            d.filter(pl.col("b1") > pl.col("b0") + 1)
            .select(*keys, bucket=pl.int_ranges(pl.col("b0") + 1, pl.col("b1")))
            .explode("bucket")
            .with_columns(overlap=pl.lit(w))
        )
        cast_to = {"bucket": pl.Int64, "overlap": pl.Int64}
        return pl.concat([f.cast(cast_to) for f in (first, last, inner)])  # type: ignore[arg-type]

    def dense(self, found: pl.DataFrame, key: str, columns: dict[str, int]) -> Dense:
        """Return per ``key`` value of ``found`` (one row per key and bucket) a list of every
        bucket's value of each of ``columns`` (their default where ``found`` has none)."""
        out: Dense = {}
        for (k,), part in found.sort("bucket").group_by(key, maintain_order=True):
            b = part["bucket"].to_list()
            out[k] = {}
            for col, default in columns.items():
                values = [default] * self.n
                for i, v in zip(b, part[col].to_list(), strict=True):
                    values[i] = v
                out[k][col] = values
        return out


def _per_mille(col: str, width: int) -> pl.Expr:
    return ((pl.col(col) * 1000 + width // 2) // width).cast(pl.Int64)


def _dominant(pieces: pl.DataFrame, key: str, what: str, width: int) -> pl.DataFrame:
    """Return per ``key`` and bucket the time ``pieces`` cover (per mille) and the ``what``
    covering most of it (the first in order at equal time)."""
    per = pieces.group_by(key, "bucket", what).agg(pl.col("overlap").sum())
    return (
        per.sort(key, "bucket", "overlap", what, descending=[False, False, True, False])
        .group_by(key, "bucket", maintain_order=True)
        .agg(pl.col("overlap").sum(), pl.col(what).first())
        .with_columns(_per_mille("overlap", width).alias("cover"))
    )


def _lanes(
    g: GapsResult, names: list[str], grid: _Grid
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the drawn lanes ``names`` of ``g`` (span, counts, gaps and buckets of each) and
    the detail windows of the bucketed ones (``_details``)."""
    w0, w1 = grid.origin, g.window.end_ns if g.window else grid.origin
    cause_ix = {c: i for i, c in enumerate(CAUSES)}
    info = {r["lane"]: r for r in g.lanes.filter(pl.col("lane").is_in(names)).to_dicts()}
    lane_gaps = g.gaps.filter(pl.col("lane").is_in(names)).with_columns(
        at_ns=pl.col("start_ns") - w0,
        cause_ix=pl.col("cause").replace_strict(cause_ix, default=len(CAUSES) - 1),
    )
    top = longest(g.gaps, TOP_GAPS).filter(pl.col("lane").is_in(names))
    exact, budget = set(), EXACT_GAPS
    for name in sorted(names, key=lambda n: info[n]["gap_count"]):
        if info[name]["gap_count"] <= budget:
            exact.add(name)
            budget -= info[name]["gap_count"]
    spans = pl.DataFrame(
        [
            {"lane": n, "s": w0 + info[n]["leading_ns"], "e": w1 - info[n]["trailing_ns"]}
            for n in names
            if n not in exact and info[n]["executions"]
        ],
        schema={"lane": lane_gaps.schema["lane"], "s": pl.Int64, "e": pl.Int64},
    )
    buckets = _lane_buckets(lane_gaps.filter(~pl.col("lane").is_in(exact)), spans, grid)
    listed = {
        k: [list(r) for r in part.select("at_ns", "duration_ns", "cause_ix", "evidence").rows()]
        for (k,), part in pl.concat(
            [
                lane_gaps.filter(pl.col("lane").is_in(exact)),
                lane_gaps.join(top.select("lane", "start_ns"), on=["lane", "start_ns"]),
            ]
        )
        .unique(["lane", "start_ns"], maintain_order=True)
        .sort("start_ns")
        .group_by("lane", maintain_order=True)
    }
    drawn = [_lane(info[n], n in exact, listed.get(n, []), buckets.get(n)) for n in names]
    bucketed = lane_gaps.filter(~pl.col("lane").is_in(exact))
    return drawn, _details(g.device_gaps, bucketed, names, grid)


def _details(
    device_gaps: pl.DataFrame, lane_gaps: pl.DataFrame, names: list[str], grid: _Grid
) -> list[dict[str, Any]]:
    """Return the windows around the ``DETAIL_WINDOWS`` longest device gaps (each gap and
    its length on both sides, out to whole buckets: ``b0`` to ``b1``), longest first, none
    overlapping another, with every gap of the bucketed ``lane_gaps`` in them, per lane of
    ``names`` (``[at_ns, duration_ns, cause]``), while they hold ``DETAIL_GAPS`` in all."""
    if lane_gaps.is_empty():
        return []
    w, budget = grid.width, DETAIL_GAPS
    taken: list[tuple[int, int, list[Any]]] = []
    for s, e, d in (
        longest(device_gaps, DETAIL_WINDOWS)
        .sort("duration_ns", descending=True, maintain_order=True)
        .select("start_ns", "end_ns", "duration_ns")
        .rows()
    ):
        b0 = max(0, (s - d - grid.start) // w)
        b1 = min(grid.n - 1, (e + d - grid.start) // w)
        if any(b0 <= t1 and t0 <= b1 for t0, t1, _ in taken):
            continue
        lo, hi = grid.start + b0 * w, grid.start + (b1 + 1) * w
        inside = lane_gaps.filter((pl.col("end_ns") > lo) & (pl.col("start_ns") < hi))
        if inside.height <= budget:
            budget -= inside.height
            per = {
                k: [list(r) for r in part.select("at_ns", "duration_ns", "cause_ix").rows()]
                for (k,), part in inside.sort("start_ns").group_by("lane", maintain_order=True)
            }
            taken.append((b0, b1, [per.get(n, []) for n in names]))
    return [{"b0": b0, "b1": b1, "gaps": listed} for b0, b1, listed in sorted(taken)]


def _lane(
    r: dict[str, Any], exact: bool, listed: list[Any], buckets: dict[str, list[int]] | None
) -> dict[str, Any]:
    span = r["window_ns"] - r["trailing_ns"]
    return {
        "lane": r["lane"],
        "device": r["device"],
        "executions": r["executions"],
        "gap_count": r["gap_count"],
        "busy_ns": r["busy_ns"],
        "idle_ns": r["idle_ns"],
        "first_ns": r["leading_ns"] if r["executions"] else None,
        "last_ns": span if r["executions"] else None,
        "exact": exact,
        "gaps": listed,
        **(buckets or {"busy": [], "idle": [], "cause": []}),
    }


def _lane_buckets(lane_gaps: pl.DataFrame, spans: pl.DataFrame, grid: _Grid) -> Dense:
    """Return per bucketed lane its busy and idle (per mille) and dominant cause per bucket."""
    if spans.is_empty():
        return {}
    idle = _dominant(
        grid.pieces(lane_gaps.rename({"start_ns": "s", "end_ns": "e"}), ["lane", "cause_ix"]),
        "lane",
        "cause_ix",
        grid.width,
    )
    span = grid.pieces(spans, ["lane"]).group_by("lane", "bucket").agg(pl.col("overlap").sum())
    both = span.join(idle, on=["lane", "bucket"], how="left").select(
        "lane",
        "bucket",
        busy=_per_mille("overlap", grid.width)
        - pl.col("cover").fill_null(0).clip(0, 1000).cast(pl.Int64),
        idle=pl.col("cover").fill_null(0).cast(pl.Int64),
        cause=pl.col("cause_ix").fill_null(-1).cast(pl.Int64),
    )
    return grid.dense(both.with_columns(pl.col("busy").clip(0, 1000)), "lane", _ZERO)


_ZERO = {"busy": 0, "idle": 0, "cause": -1}


def packed(ops: pl.DataFrame) -> pl.DataFrame:
    """Return ``ops`` with ``row``: an op nested in (or overlapping) another goes one row
    down; ops past ``MAX_OP_ROWS`` rows are left out."""
    order = ops.with_row_index("_i").sort("start_ns", pl.col("end_ns"), descending=[False, True])
    ends: list[int] = []
    rows = []
    for s, e in zip(order["start_ns"].to_list(), order["end_ns"].to_list(), strict=True):
        i = next((k for k, end in enumerate(ends) if s >= end), len(ends))
        if i == len(ends):
            ends.append(0)
        ends[i] = e
        rows.append(i)
    placed = order.with_columns(row=pl.Series(rows, dtype=pl.Int64)).sort("_i").drop("_i")
    return placed.filter(pl.col("row") < MAX_OP_ROWS)


def _ops(ops: pl.DataFrame, grid: _Grid) -> tuple[pl.DataFrame, list[dict[str, Any]], list[str]]:
    """Return the framework ops listed one by one (with ``row``, ``at_ns``, ``duration_ns``)
    when few, else none and the rows bucketed (coverage, op name index), and the names."""
    if ops.height <= EXACT_OPS:
        listed = ops.with_columns(
            at_ns=pl.col("start_ns") - grid.origin,
            duration_ns=pl.col("end_ns") - pl.col("start_ns"),
        )
        return listed, [], []
    found = _dominant(
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
