"""The text and Markdown layout of `traceana launches` (questions/launches/analysis.py): per
lane, the launches, their latency and delay, the queue length and the time blocked on a full
queue."""

from __future__ import annotations

from trace_analyzer.numbers import DASH, count, duration, number, percent
from trace_analyzer.questions.launches.analysis import QUEUE_BOUND, LaunchesResult
from trace_analyzer.render.blocks import Block, Items, Style, Table, heading, num_col, text_col
from trace_analyzer.render.safe import shown
from trace_analyzer.render.view import View


def launches_layout(result: LaunchesResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``): its
    launches per lane."""
    blocks: list[Block] = [heading(f"launches: {shown(result.root, style)}", style), ""]
    lanes = result.lanes
    if lanes.height:
        # the first lane of the longest queue (a lane without a queue as 0)
        top = lanes.row(lanes["queue_max"].fill_null(0).arg_max() or 0, named=True)
        blocks += [
            f"longest queue: {count(top['queue_max'])} launches on "
            f"{shown(top['lane'], style)} (bound {count(QUEUE_BOUND)} on CUDA streams)",
            "",
        ]
    if result.notes:
        blocks += [Items("notes", [shown(n, style) for n in result.notes], noun="notes"), ""]
    if not lanes.height:
        blocks.append("no launch linked to device work")
        return blocks
    cells = [
        [
            DASH if r["rank"] is None else number(r["rank"]),
            r["lane"],
            count(r["launches"]),
            *(duration(r[f"latency_{q}_ns"]) for q in ("p50", "p95", "max")),
            *(duration(r[f"delay_{q}_ns"]) for q in ("p50", "p95")),
            DASH if r["queue_mean"] is None else number(r["queue_mean"]),
            DASH if r["queue_max"] is None else count(r["queue_max"]),
            percent(r["queue_zero_pct"]),
            duration(r["blocked_ns"]),
        ]
        for r in lanes.iter_rows(named=True)
    ]
    columns = (
        num_col("rank", drop=3), text_col("lane", cut=24, keep_end=True), num_col("launches"),
        num_col("latency p50"), num_col("latency p95", drop=2), num_col("latency max"),
        num_col("delay p50"), num_col("delay p95", drop=2), num_col("queue mean"),
        num_col("queue max"), num_col("empty %", drop=1), num_col("blocked"),
    )  # fmt: skip
    blocks.append(
        Table(
            "per lane (latency: work start − launch call start; delay: − the call's end)",
            columns,
            cells,
            noun="lanes",
            more="`--format json` has every lane",
        )
    )
    return blocks
