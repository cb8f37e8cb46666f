"""The text and Markdown of `traceana trend` (questions/trend/analysis.py's ``TrendResult``)."""

from __future__ import annotations

from trace_analyzer.numbers import DASH, count, duration, percent
from trace_analyzer.questions.trend.analysis import TrendResult, time_text
from trace_analyzer.render.blocks import (
    Block,
    Items,
    Style,
    Table,
    heading,
    num_col,
    plural,
    text_col,
)
from trace_analyzer.render.safe import shown
from trace_analyzer.render.view import View


def trend_layout(result: TrendResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    rows = result.table
    groups = rows["group"].n_unique()
    runs = rows["run_id"].n_unique()
    split = f" ({plural(rows.height, 'row')})" if runs != rows.height else ""  # by rank, device
    failed = result.failed_runs
    lines: list[Block] = [
        heading(f"trend: {shown(result.root, style)}", style),
        f"{plural(runs, 'run')}{split} in {plural(groups, 'group')}"
        + (f"; {count(failed)} failed runs left out" if failed else ""),
    ]
    table = Table(
        "idle % and device time over time",
        (
            text_col("group", cut=12),
            text_col("time", cut=10),
            text_col("run", cut=12, drop=1, keep_end=True),
            num_col("idle %"),
            num_col("device time"),
            num_col("executions", drop=2),
        ),
        [
            [
                r["group"],
                time_text(r["time"]) or DASH,
                r["run_id"],
                percent(r["idle_pct"]),
                duration(None if r["device_time_ms"] is None else r["device_time_ms"] * 1e6),
                count(r["executions"]),
            ]
            for r in rows.iter_rows(named=True)
        ],
        noun="runs",
    )
    notes: list[Block] = []
    if result.notes:
        notes = ["", Items("notes", [shown(n, style) for n in result.notes], noun="notes")]
    return [*lines, table, *notes]
