"""The table and Markdown layout of a ``diff`` result (base against head).

The verdict first (with the failed gates), then how changes were judged (one run per side, or
Welch's test over several), what a side's source lacks, the key numbers (with each side's
spread when it has two runs or more), and the ops that changed most (docs/diff.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from trace_analyzer.numbers import DASH, from_us
from trace_analyzer.questions.diff.analysis import DiffResult
from trace_analyzer.render.blocks import (
    MARKDOWN,
    TOP_MORE,
    Block,
    Column,
    Items,
    Style,
    Table,
    first,
    heading,
    num_col,
    text_col,
)
from trace_analyzer.render.metrics import metric_change, metric_label, metric_value
from trace_analyzer.render.safe import shown
from trace_analyzer.render.view import View


def _diff(result: DiffResult, style: Style, top: int = 10) -> list[Block]:
    failed = "FAILED " + "; ".join(result.failed) + ". " if result.failed else ""
    verdict = shown(failed + result.verdict_text, style)
    blocks: list[Block] = [
        heading(f"diff: {shown(result.root, style)}", style),
        "",
        f"**{verdict}**" if style == MARKDOWN else verdict,
        "",
    ]
    if result.next_fix:
        blocks += [shown(f"Next on head: {result.next_fix} (traceana critical).", style), ""]
    blocks += [
        result.noise + ".",
    ]
    if result.mismatch:
        blocks.append(shown(f"The sides differ in {result.mismatch}: not the same work?", style))
    blocks += [shown(f"Not compared: {n}.", style) for n in result.not_compared]
    blocks += [shown(f"Gate: {n}.", style) for n in result.gate_notes]
    blocks.append(_metrics(result.metrics))
    host = result.host_only  # the ops' self CPU time, not their device time
    kept = ("self_cpu_us_delta",) if host else ("device_us_delta", "idle_before_us_delta")
    changed = result.ops.filter(
        pl.any_horizontal(pl.col(c).fill_null(0) != 0 for c in ("calls_delta", *kept))
    )
    if changed.height:
        blocks.append(_host_op_changes(changed, top) if host else _op_changes(changed, top))
    measure = "self_cpu_us" if host else "device_us"
    for title, ops in (
        ("ops added in head", result.added),
        ("ops removed in head", result.removed),
    ):
        names = [
            f"{shown(o['name'], style)} "
            f"({from_us(first(o[f'{measure}_head'], o[f'{measure}_base']))}"
            f"{' self CPU' if host else ''})"
            for o in ops.head(top).iter_rows(named=True)
        ]
        if names:
            blocks.append(Items(title, names, noun="ops"))
            if ops.height > top:
                option = "`--top N`" if style == MARKDOWN else "--top N"
                blocks.append(f"… and {ops.height - top} more ({option} shows more)")
    return blocks


def _metrics(metrics: Sequence[dict[str, Any]]) -> Table:
    """The key numbers: every metric either side has, with each side's sd where it has two
    runs or more, and whether the change is significant where it was tested."""
    listed = [m for m in metrics if m["base"] or m["head"]]
    spread = {side: any(m[f"{side}_sd"] is not None for m in listed) for side in ("base", "head")}
    tested = any(m["significant"] is not None for m in listed)
    columns = [text_col("metric", cut=16)]
    for side in ("base", "head"):
        columns.append(num_col(side))
        if spread[side]:
            columns.append(num_col(f"{side} sd", drop=2))
    columns += [num_col("change"), num_col("change %", drop=1)]
    if tested:
        columns.append(Column("significant"))
    rows = []
    for m in listed:
        name = m["metric"]
        row = [metric_label(m["what"])]
        for side in ("base", "head"):
            row.append(metric_value(name, m[side]))
            if spread[side]:
                row.append(metric_value(name, m[f"{side}_sd"]).replace(" %", " pp"))
        row.append(metric_change(name, m["delta"]))
        row.append(DASH if m["pct_delta"] is None else f"{m['pct_delta']:+g} %")
        if tested:
            sig = m["significant"]
            row.append(DASH if sig is None else "yes" if sig else "no")
        rows.append(row)
    return Table("key numbers (head − base)", tuple(columns), rows, noun="metrics")


def _op_changes(ops: pl.DataFrame, top: int) -> Table:
    calls = _calls
    return Table(
        "ops that changed most",
        (
            text_col("op"),
            num_col("calls", drop=1),
            num_col("device base", drop=2),
            num_col("device head", drop=2),
            num_col("device Δ"),
            num_col("idle before Δ"),
        ),
        [
            [
                o["name"],
                f"{calls(o['calls_base'])} → {calls(o['calls_head'])}",
                from_us(o["device_us_base"]),
                from_us(o["device_us_head"]),
                metric_change("device_time", o["device_us_delta"]),
                metric_change("device_time", o["idle_before_us_delta"]),
            ]
            for o in ops.head(top).iter_rows(named=True)
        ],
        total=ops.height,
        noun="changed ops",
        more=TOP_MORE,
    )


def _host_op_changes(ops: pl.DataFrame, top: int) -> Table:
    """The ops that changed most between two host-only sides: calls and self CPU time."""
    ordered = ops.sort(
        pl.col("self_cpu_us_delta").abs(), "name", descending=[True, False], nulls_last=True
    )
    return Table(
        "ops that changed most (self CPU time)",
        (
            text_col("op"),
            num_col("calls", drop=1),
            num_col("self CPU base", drop=2),
            num_col("self CPU head", drop=2),
            num_col("self CPU Δ"),
        ),
        [
            [
                o["name"],
                f"{_calls(o['calls_base'])} → {_calls(o['calls_head'])}",
                from_us(o["self_cpu_us_base"]),
                from_us(o["self_cpu_us_head"]),
                metric_change("device_time", o["self_cpu_us_delta"]),
            ]
            for o in ordered.head(top).iter_rows(named=True)
        ],
        total=ops.height,
        noun="changed ops",
        more=TOP_MORE,
    )


def _calls(v: float | None) -> str:
    return DASH if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def diff_layout(result: DiffResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    return _diff(result, style, view.top)
