"""The text and Markdown of `traceana ops` (questions/ops/analysis.py's ``OpsResult``)."""

from __future__ import annotations

from trace_analyzer.numbers import count, from_us, number, percent
from trace_analyzer.questions.ops.analysis import OpsResult
from trace_analyzer.render.below import engines_below
from trace_analyzer.render.blocks import (
    TOP_MORE,
    Block,
    Style,
    Table,
    coverage_line,
    heading,
    num_col,
    plural,
    text_col,
)
from trace_analyzer.render.safe import shown
from trace_analyzer.render.view import View


def ops_layout(result: OpsResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    summary = coverage_line(result.coverage)
    if result.executions:
        device = from_us(result.total_device_us)
        summary = f"device time {device} in {plural(result.executions, 'execution')}; {summary}"
    blocks: list[Block] = [heading(f"ops: {shown(result.root, style)}", style), "", summary]
    table = result.table.head(view.top)
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
        for r in table.iter_rows(named=True)
    ]
    title = "ops by device time"
    n = result.table.height
    blocks.append(Table(title, columns, cells, total=n, noun="ops", more=TOP_MORE))
    if result.engines is None or result.engines.is_empty():
        return blocks
    # engines_below counts every row under its table: it takes them all (one per op and NEFF)
    return [*blocks, engines_below(result.engines.to_dicts(), table["name"].to_list())]
