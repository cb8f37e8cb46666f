"""The text and Markdown of `traceana trend` (questions/trend/analysis.py's JSON)."""

from __future__ import annotations

from typing import Any

from trace_analyzer.numbers import count, duration, percent
from trace_analyzer.questions.trend.analysis import TrendResult
from trace_analyzer.render.blocks import (
    Block,
    Style,
    Table,
    heading,
    num_col,
    plural,
    text_col,
)
from trace_analyzer.render.safe import shown
from trace_analyzer.render.text import as_doc
from trace_analyzer.render.view import View


def _trend(run: dict[str, Any], style: Style) -> list[Block]:
    rows = run["rows"]
    groups = len({r["group"] for r in rows})
    runs = len({r["run_id"] for r in rows})
    split = f" ({plural(len(rows), 'row')})" if runs != len(rows) else ""  # by rank, device
    lines: list[Block] = [
        heading(f"trend: {shown(run['root'], style)}", style),
        f"{plural(runs, 'run')}{split} in {plural(groups, 'group')}"
        + (f"; {count(run['failed_runs'])} failed runs left out" if run["failed_runs"] else ""),
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
                r["time"],
                r["run_id"],
                percent(r["idle_pct"]),
                duration(None if r["device_time_ms"] is None else r["device_time_ms"] * 1e6),
                count(r["executions"]),
            ]
            for r in rows
        ],
        noun="runs",
    )
    return [*lines, table]


def trend_from_json(run: dict[str, Any], style: Style, view: View) -> list[Block]:
    """Return the blocks of `traceana trend` (its JSON ``run``)."""
    return _trend(run, style)


def trend_layout(result: TrendResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    return trend_from_json(as_doc(result, style, view), style, view)
