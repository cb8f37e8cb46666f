"""The text and Markdown of `traceana chain` (questions/chain/analysis.py's ``ChainResult``)."""

from __future__ import annotations

from typing import Any

from trace_analyzer.numbers import DASH, count, from_us, instant
from trace_analyzer.questions.chain.analysis import ChainResult
from trace_analyzer.render.blocks import (
    TOP_MORE,
    Block,
    Column,
    Style,
    Table,
    coverage_line,
    heading,
    num_col,
    text_col,
)
from trace_analyzer.render.safe import shown
from trace_analyzer.render.view import View

HOPS = (  # the hops of a chain: the table's µs columns, as the tables name them; which a
    # narrow terminal drops first (0: none); Neuron's schedule hops are hidden elsewhere
    ("dispatch_to_schedule_us", "dispatch→schedule", 4),
    ("schedule_to_hw_us", "schedule→hw", 5),
    ("dispatch_to_hw_us", "dispatch→hw", 0),
    ("hw_duration_us", "hw", 0),
)


def chain_layout(result: ChainResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    blocks: list[Block] = [
        heading(f"chain: {shown(result.root, style)}", style),
        "",
        coverage_line(result.coverage),
    ]
    table = result.table.head(view.top)
    if table.is_empty():
        return blocks
    per_execution = "hw_start_ns" in table.columns
    columns: list[Column] = [text_col("op", cut=20)]
    if per_execution:
        columns += [text_col("hardware", cut=12, drop=2), text_col("lane", 12, 3, keep_end=True)]
    else:
        columns.append(num_col("executions"))
    columns.append(Column("link", drop=1))
    columns += [num_col(name, drop=drop, optional=bool(drop)) for _, name, drop in HOPS]
    if per_execution:
        columns.append(num_col("start"))
    cells = [_chain_cells(r, per_execution, result.start_ns) for r in table.iter_rows(named=True)]
    title = (
        "per execution (start = time after the first execution)"
        if per_execution
        else "per op (the mean of each hop)"
    )
    noun = "executions" if per_execution else "ops"
    n = result.table.height
    return [*blocks, Table(title, tuple(columns), cells, total=n, noun=noun, more=TOP_MORE)]


def _chain_cells(r: dict[str, Any], per_execution: bool, origin: int | None) -> list[str]:
    cells = [r["op"] or "(unlinked)"]
    cells += [r["hw_name"], r["lane"]] if per_execution else [count(r["executions"])]
    cells.append(r["link_method"] or DASH)
    cells += [from_us(r[key]) for key, _, _ in HOPS]
    if per_execution:
        cells.append(instant(r["hw_start_ns"], origin))
    return cells
