"""The text and Markdown layout of `traceana critical` (questions/critical/analysis.py): the
verdict first (the fix that saves the most), the ranked fixes, each window's time on the
critical path by kind, then the longest segments of the longest window's path."""

from __future__ import annotations

import polars as pl

from trace_analyzer.analyses.rows import longest
from trace_analyzer.numbers import count, duration, percent
from trace_analyzer.questions.critical.analysis import CriticalResult
from trace_analyzer.render.blocks import (
    TOP_MORE,
    Block,
    Items,
    Style,
    Table,
    heading,
    num_col,
    text_col,
)
from trace_analyzer.render.safe import shown
from trace_analyzer.render.view import View

# The kinds of the path's segments, in the order the table shows them.
KINDS = (
    "compute", "communication", "memory", "host", "call", "launch", "sync", "unexplained",
    "before",
)  # fmt: skip


def critical_layout(result: CriticalResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    blocks: list[Block] = [heading(f"critical path: {shown(result.root, style)}", style), ""]
    blocks.append(shown(result.verdict, style))
    if result.notes:
        blocks += ["", Items("notes", [shown(n, style) for n in result.notes], noun="notes")]
    if not result.steps.height:
        return blocks
    blocks += ["", _fixes(result, style, view.top), "", _kinds(result)]
    blocks += ["", _segments(result, style, view.top)]
    return blocks


def _window(step: int | None, result: CriticalResult) -> str:
    if step is None:
        return "the run"
    return f"ProfilerStep#{step}" if result.window is None else f"window {step}"


def _fixes(result: CriticalResult, style: Style, top: int) -> Table:
    cells = [
        [str(r["rank"]), shown(r["fix"], style), duration(r["saved_ns"]), percent(r["saved_pct"]),
         duration(r["replayed_ns"]), count(r["path_segments"]), duration(r["path_ns"]),
         shown(r["assumption"], style)]
        for r in result.fixes.head(top).iter_rows(named=True)
    ]  # fmt: skip
    columns = (
        num_col("#"), text_col("fix", cut=40), num_col("saves per step"), num_col("%"),
        num_col("step after"), num_col("path segments", drop=2), num_col("their time", drop=2),
        text_col("assumption", cut=30, drop=1),
    )  # fmt: skip
    title = "next steps, ranked by the replayed step time they save (mean over the steps)"
    return Table(title, columns, cells, total=result.fixes.height, noun="fixes", more=TOP_MORE)


def _kinds(result: CriticalResult) -> Table:
    wide = result.kinds.pivot("kind", index="step", values="time_ns").join(
        result.steps.select("step", "window_ns"), on="step", how="left", nulls_equal=True
    )
    kinds = [k for k in KINDS if k in wide.columns]
    cells = [
        [_window(r["step"], result), duration(r["window_ns"]),
         *(duration(r[k] or 0) for k in kinds)]
        for r in wide.sort("step").iter_rows(named=True)
    ]  # fmt: skip
    columns = (text_col("window"), num_col("time"), *(num_col(k, optional=True) for k in kinds))
    return Table("the critical path's time by kind, per window", columns, cells)


def _segments(result: CriticalResult, style: Style, top: int) -> Table:
    """The longest segments of the longest window's path."""
    widest = longest(result.steps, 1, "window_ns")
    step, w0 = widest["step"][0], widest["start_ns"][0]
    segs = result.path.filter(pl.col("step").eq_missing(step))
    rows = longest(segs, top, "duration_ns")
    cells = [
        [duration(r["start_ns"] - w0), duration(r["duration_ns"]), r["kind"],
         shown(r["name"] or "", style), shown(r["label"] or "", style),
         shown(r["lane"] or "", style)]
        for r in rows.iter_rows(named=True)
    ]  # fmt: skip
    columns = (
        num_col("at"), num_col("time"), text_col("kind"), text_col("name", cut=24),
        text_col("in", cut=24, drop=2), text_col("lane", cut=16, keep_end=True, drop=1),
    )  # fmt: skip
    title = (
        f"the longest segments on the critical path of {_window(step, result)} "
        "(at = after the window's start; in = the op or frame holding host time)"
    )
    return Table(title, columns, cells, total=segs.height, noun="segments", more=TOP_MORE)
