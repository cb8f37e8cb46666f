"""The hardware lanes a report's timeline draws (timeline.py): each lane's span and counts, its
gaps listed one by one or bucketed, and the detail windows around the longest device gaps.

It is made in three steps, so that a multi-rank run's lanes can be drawn a file at a time
(timeline_parts.py): ``lane_plan`` decides what is known before any gap is read (the lanes
drawn, which are listed gap by gap, the bucketed ones' spans, the grid, the candidate detail
windows); ``lane_pieces`` reads a file's gaps (or the run's) into its lanes' buckets, the
rows of its listed lanes and its rows inside each window; ``lanes_drawn`` puts the pieces
together with the run's longest gaps, keeping the windows' budget in the order of the device
gaps they surround. A run read whole is one piece.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.questions.report.grid import Dense, Grid, dominant, longest, per_mille

EXACT_GAPS = 2000  # a run's lanes list their gaps one by one while they hold this many
TOP_GAPS = 200  # the longest gaps, always listed (the page's gap table holds as many)
DETAIL_WINDOWS, DETAIL_GAPS = 20, 3000  # around the longest device gaps: every gap, this many
_ZERO = {"busy": 0, "idle": 0, "cause": -1}
LISTED = ("at_ns", "duration_ns", "cause_ix", "evidence")


@dataclass(frozen=True)
class LanePlan:
    """What the drawn lanes need known before their gaps are read: their ``names`` (natural
    order), those listed gap by gap (``exact``, while ``EXACT_GAPS`` hold them), the bucketed
    ones' first and last execution (``spans``: lane, s, e), the ``grid``, and the candidate
    detail windows (``windows``: the first and last bucket around each of the
    ``DETAIL_WINDOWS`` longest device gaps, the longest first)."""

    names: tuple[str, ...]
    exact: frozenset[str]
    spans: pl.DataFrame
    grid: Grid
    windows: tuple[tuple[int, int], ...]


def lane_plan(
    lanes: pl.DataFrame, device_gaps: pl.DataFrame, names: list[str], grid: Grid, end_ns: int
) -> LanePlan:
    """The ``LanePlan`` of the lanes ``names`` of a run, from its ``lanes`` rows (the gaps'
    lane table), its longest ``device_gaps`` and the end of its window."""
    info = {r["lane"]: r for r in lanes.filter(pl.col("lane").is_in(names)).to_dicts()}
    exact, budget = set(), EXACT_GAPS
    for name in sorted(names, key=lambda n: info[n]["gap_count"]):
        if info[name]["gap_count"] <= budget:
            exact.add(name)
            budget -= info[name]["gap_count"]
    w0 = grid.origin
    spans = pl.DataFrame(
        [
            {"lane": n, "s": w0 + info[n]["leading_ns"], "e": end_ns - info[n]["trailing_ns"]}
            for n in names
            if n not in exact and info[n]["executions"]
        ],
        schema={"lane": pl.String, "s": pl.Int64, "e": pl.Int64},
    )
    w = grid.width
    around = (
        longest(device_gaps, DETAIL_WINDOWS)
        .sort("duration_ns", descending=True, maintain_order=True)
        .select("start_ns", "end_ns", "duration_ns")
        .rows()
    )
    windows = tuple(
        (max(0, (s - d - grid.start) // w), min(grid.n - 1, (e + d - grid.start) // w))
        for s, e, d in around
    )
    return LanePlan(tuple(names), frozenset(exact), spans, grid, windows)


@dataclass(frozen=True)
class LanePieces:
    """A file's part of the drawn lanes (``lane_pieces``): its bucketed lanes' ``buckets``,
    the rows of its lanes listed gap by gap (``exact``), its bucketed lanes' rows inside each
    candidate window (``inside``), and how many rows its bucketed lanes have (``bucketed``)."""

    buckets: Dense
    exact: pl.DataFrame
    inside: tuple[pl.DataFrame, ...]
    bucketed: int


def _at(gaps: pl.DataFrame, plan: LanePlan) -> pl.DataFrame:
    """The gaps of the lanes drawn, with their time after the window start and their cause's
    index."""
    cause_ix = {c: i for i, c in enumerate(CAUSES)}
    return gaps.filter(pl.col("lane").is_in(plan.names)).with_columns(
        at_ns=pl.col("start_ns") - plan.grid.origin,
        cause_ix=pl.col("cause").replace_strict(cause_ix, default=len(CAUSES) - 1),
    )


def lane_pieces(gaps: pl.DataFrame, plan: LanePlan, own: set[str] | None = None) -> LanePieces:
    """The ``LanePieces`` of the lane gaps ``gaps`` (a file's, whose hardware lanes are
    ``own``; or the run's, ``own`` None)."""
    lane_gaps = _at(gaps, plan)
    bucketed = lane_gaps.filter(~pl.col("lane").is_in(list(plan.exact)))
    spans = plan.spans if own is None else plan.spans.filter(pl.col("lane").is_in(list(own)))
    spans = spans.cast({"lane": lane_gaps.schema["lane"]})
    w, start = plan.grid.width, plan.grid.start
    inside = tuple(
        bucketed.filter(
            (pl.col("end_ns") > start + b0 * w) & (pl.col("start_ns") < start + (b1 + 1) * w)
        ).select("lane", "start_ns", "at_ns", "duration_ns", "cause_ix")
        for b0, b1 in plan.windows
    )
    return LanePieces(
        _lane_buckets(bucketed, spans, plan.grid),
        lane_gaps.filter(pl.col("lane").is_in(list(plan.exact))).select(
            "lane", "start_ns", *LISTED
        ),
        inside,
        bucketed.height,
    )


def lanes_drawn(
    lanes: pl.DataFrame, top: pl.DataFrame, plan: LanePlan, pieces: Sequence[LanePieces]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the drawn lanes of ``plan`` (span, counts, gaps and buckets of each) and the
    detail windows of the bucketed ones, from the run's ``lanes`` rows, its ``TOP_GAPS``
    longest lane gaps (``top``) and every file's ``pieces``."""
    names = list(plan.names)
    info = {r["lane"]: r for r in lanes.filter(pl.col("lane").is_in(names)).to_dicts()}
    buckets = {k: v for p in pieces for k, v in p.buckets.items()}
    shown = _at(top, plan).select("lane", "start_ns", *LISTED)
    listed = {
        k: [list(r) for r in part.select(*LISTED).rows()]
        for (k,), part in pl.concat([*(p.exact for p in pieces), shown], how="vertical_relaxed")
        .unique(["lane", "start_ns"], maintain_order=True)
        .sort("start_ns")
        .group_by("lane", maintain_order=True)
    }
    drawn = [_lane(info[n], n in plan.exact, listed.get(n, []), buckets.get(n)) for n in names]
    return drawn, _details(plan, pieces)


def _details(plan: LanePlan, pieces: Sequence[LanePieces]) -> list[dict[str, Any]]:
    """Return the windows around the ``DETAIL_WINDOWS`` longest device gaps (each gap and
    its length on both sides, out to whole buckets: ``b0`` to ``b1``), longest first, none
    overlapping another, with every gap of the bucketed lanes in them, per lane drawn
    (``[at_ns, duration_ns, cause]``), while they hold ``DETAIL_GAPS`` in all."""
    if not sum(p.bucketed for p in pieces):
        return []
    budget = DETAIL_GAPS
    taken: list[tuple[int, int, list[Any]]] = []
    for k, (b0, b1) in enumerate(plan.windows):
        if any(b0 <= t1 and t0 <= b1 for t0, t1, _ in taken):
            continue
        inside = pl.concat([p.inside[k] for p in pieces], how="vertical_relaxed")
        if inside.height <= budget:
            budget -= inside.height
            per = {
                k: [list(r) for r in part.select("at_ns", "duration_ns", "cause_ix").rows()]
                for (k,), part in inside.sort("start_ns", "lane").group_by(
                    "lane", maintain_order=True
                )
            }
            taken.append((b0, b1, [per.get(n, []) for n in plan.names]))
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


def _lane_buckets(lane_gaps: pl.DataFrame, spans: pl.DataFrame, grid: Grid) -> Dense:
    """Return per bucketed lane its busy and idle (per mille) and dominant cause per bucket."""
    if spans.is_empty():
        return {}
    idle = dominant(
        grid.pieces(lane_gaps.rename({"start_ns": "s", "end_ns": "e"}), ["lane", "cause_ix"]),
        "lane",
        "cause_ix",
        grid.width,
    )
    span = grid.pieces(spans, ["lane"]).group_by("lane", "bucket").agg(pl.col("overlap").sum())
    both = span.join(idle, on=["lane", "bucket"], how="left").select(
        "lane",
        "bucket",
        busy=per_mille("overlap", grid.width)
        - pl.col("cover").fill_null(0).clip(0, 1000).cast(pl.Int64),
        idle=pl.col("cover").fill_null(0).cast(pl.Int64),
        cause=pl.col("cause_ix").fill_null(-1).cast(pl.Int64),
    )
    return grid.dense(both.with_columns(pl.col("busy").clip(0, 1000)), "lane", _ZERO)
