"""The text and Markdown of `traceana ops` (questions/ops/analysis.py's JSON)."""

from __future__ import annotations

from typing import Any

from trace_analyzer.numbers import count, from_us, number, percent
from trace_analyzer.questions.ops.analysis import OpsResult
from trace_analyzer.render.below import engines_below
from trace_analyzer.render.blocks import (
    MARKDOWN,
    TOP_MORE,
    Block,
    Style,
    Table,
    coverage_line,
    heading,
    num_col,
    plural,
    text_col,
    total,
)
from trace_analyzer.render.safe import shown
from trace_analyzer.render.text import as_doc
from trace_analyzer.render.view import View


def ops_from_json(run: dict[str, Any], style: Style, view: View) -> list[Block]:
    summary = coverage_line(run["coverage"])
    if run["executions"]:
        device = from_us(run["total_device_us"])
        summary = f"device time {device} in {plural(run['executions'], 'execution')}; {summary}"
    blocks: list[Block] = [heading(f"ops: {shown(run['root'], style)}", style), "", summary]
    rows = run["rows"]
    shown_rows = rows[: view.top] if style == MARKDOWN else rows
    columns = (
        text_col("op", cut=20),
        num_col("calls"),
        num_col("self CPU", drop=4),
        num_col("CPU total", drop=5),
        num_col("device"),
        num_col("device %"),
        num_col("executions", drop=3),
        num_col("executions per call", drop=1),
        num_col("dispatch→hw (mean)", drop=2, optional=True),
    )
    cells = [
        [
            r["name"],
            count(r["calls"]),
            from_us(r["self_cpu_us"]),
            from_us(r["cpu_total_us"]),
            from_us(r["device_us"]),
            percent(r["device_pct"]),
            count(r["executions"]),
            number(r["executions_per_call"]),
            from_us(r["mean_dispatch_to_hw_us"]),
        ]
        for r in shown_rows
    ]
    title = "ops by device time"
    n = total(run, "rows")
    blocks.append(Table(title, columns, cells, total=n, noun="ops", more=TOP_MORE))
    if not run.get("engines"):
        return blocks
    return [*blocks, engines_below(run["engines"], [r["name"] for r in shown_rows])]


def ops_layout(result: OpsResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    return ops_from_json(as_doc(result, style, view), style, view)
