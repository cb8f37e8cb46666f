"""The table and Markdown layouts of ``gaps`` and ``trend`` results (one run each).

A gaps report, in either style (docs/output.md): the verdict, a summary table (the ``--by``
table: devices, lanes, ops or steps), the ``--top`` longest gaps, the ``--top`` ops by the
idle before them, and the next steps; a table that leaves rows out says how many.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import polars as pl

from trace_analyzer.analyses.rows import longest
from trace_analyzer.numbers import DASH, count, duration, instant
from trace_analyzer.questions.gaps.analysis import GapsResult
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.questions.gaps.text_host import host_blocks
from trace_analyzer.render.below import engines_below
from trace_analyzer.render.blocks import (
    MARKDOWN,
    TOP_MORE,
    Block,
    Column,
    Items,
    Style,
    Table,
    heading,
    num_col,
    plural,
    text_col,
)
from trace_analyzer.render.idle import IDLE_COLUMNS, bare_percent, idle_cells, idle_phrase
from trace_analyzer.render.safe import shown
from trace_analyzer.render.view import View


def _verdict(result: GapsResult) -> str:
    notes = "".join(f"Gate: {n}. " for n in result.gate_notes)  # an empty gate, allowed
    return notes + _measured(result)


def _measured(result: GapsResult) -> str:
    s, w = result.summary, result.window
    if result.no_hardware:  # nothing recorded, or only host activity: why (analyses/absent)
        return result.no_hardware
    if w is None or not s["lanes"]:  # no window: nothing ran on hardware, no lanes
        return "no hardware lanes: this profile records host activity only (no hardware executions)"
    if not s["executions"]:
        return "no hardware executions in the window: nothing to measure"
    causes = {c: ns for c, ns in s["idle_by_cause_ns"].items() if ns}
    top = max(causes, key=lambda c: causes[c]) if causes else None
    longest = f", longest {duration(s['gap_max_ns'])}" if s["gap_count"] else ""
    text = (
        f"{plural(s['devices'], 'device')} {idle_phrase(s, w.origin, bare_percent)} "
        f"({duration(s['idle_ns'])} idle; {plural(s['gap_count'], 'gap')}{longest})"
    )
    if top:
        text += f"; top cause {top}: {duration(causes[top])}"
    failed = "FAILED " + "; ".join(result.failed) + ". " if result.failed else ""
    return failed + text


AGGREGATE = {  # --by device or lane: the table's noun, and its first column
    "device": ("devices", "device"),
    "lane": ("lanes", "lane"),
}


def _aggregate(result: GapsResult, by: str, top: int) -> Table:
    if by == "op":
        return _ops_idle(result.ops, top, "by op: idle before each op (by cause)")
    if by == "step":
        return _steps_idle(result.steps)
    noun, key = AGGREGATE[by]
    rows = result.devices if by == "device" else result.lanes
    return Table(
        f"by {key}",
        (text_col(key, cut=16, keep_end=True), *(c for c, _ in IDLE_COLUMNS)),
        [[r[key], *idle_cells(r)] for r in rows.iter_rows(named=True)],
        noun=noun,
    )


def _cause_columns() -> tuple[Column, ...]:
    """The idle-by-cause columns: hidden when no row has idle of the cause; a narrow terminal
    drops them from the last cause (``other``) back."""
    n = len(CAUSES)
    return tuple(num_col(c, drop=2 + n - i, optional=True) for i, c in enumerate(CAUSES))


def _ops_first(result: GapsResult, engines: pl.DataFrame, top: int) -> list[str]:
    """The ``top`` ops of the engines table below: those with the most idle before them,
    as the table above orders them, then the ops no gap ended (a run without gaps still
    shows why its executions take the time they do)."""
    idle: list[str] = result.ops["op"].head(top).to_list()
    rest = sorted(set(engines["op"].to_list()) - set(idle))
    return [*idle, *rest][:top]


def _ops_idle(ops: pl.DataFrame, top: int, title: str) -> Table:
    transfers = Column("transfers", cut=12, drop=1, optional=True)
    return Table(
        title,
        (text_col("op"), num_col("idle before"), num_col("gaps"), *_cause_columns(), transfers),
        [
            [
                r["op"],
                duration(r["idle_before_ns"]),
                count(r["gaps"]),
                *(duration(r[f"{c}_ns"]) for c in CAUSES),
                r["transfers"] or DASH,
            ]
            for r in ops.head(top).iter_rows(named=True)
        ],
        total=ops.height,
        noun="ops",
        more=TOP_MORE,
    )


def _steps_idle(steps: pl.DataFrame) -> Table:
    return Table(
        "by step",
        (num_col("step"), num_col("idle"), num_col("gaps"), *_cause_columns()),
        [
            [
                str(r["step"]),
                duration(r["idle_ns"]),
                count(r["gaps"]),
                *(duration(r[f"{c}_ns"]) for c in CAUSES),
            ]
            for r in steps.iter_rows(named=True)
        ],
        noun="steps",
    )


def _gap_rows(gaps: pl.DataFrame, where: str, origin: int, total: int) -> Table:
    return Table(
        "longest gaps (no compute on the device; at = time after the window start)",
        (
            text_col(where, cut=12, keep_end=True),
            num_col("at"),
            num_col("gap"),
            num_col("exposed comm", drop=3, optional=True),
            num_col("copying alone", drop=3, optional=True),
            Column("cause"),
            text_col("after op", cut=12, drop=1),
            text_col("next op", cut=12),
            text_col("evidence", cut=24, drop=2, wrap=True),
        ),
        [
            [
                g[where],
                instant(g["start_ns"], origin),
                duration(g["duration_ns"]),
                duration(g.get("exposed_communication_ns") or 0),
                duration(g.get("memory_ns") or 0),
                g["cause"],
                g["prev_op"] or f"({g['prev_name']})",
                g["next_op"] or "(unlinked)",
                g.get("evidence") or DASH,
            ]
            for g in gaps.iter_rows(named=True)
        ],
        total=total,
        noun="gaps",
        more=TOP_MORE,
    )


def next_steps(hints: Sequence[dict[str, Any]], style: Style) -> list[str]:
    """Return the hints of a gaps result as list items (without the ``- ``): per cause, then
    per op (names from the trace shown inert)."""
    out = []
    for h in hints:
        where = h["cause"] if h["op"] is None else f"{shown(h['op'], style)} ({h['cause']})"
        gaps = plural(h["gaps"], "gap")
        out.append(f"{where}, {duration(h['idle_ns'])} in {gaps}: {shown(h['hint'], style)}")
    return out


def gaps_layout(result: GapsResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of one run of `traceana gaps` for a terminal or Markdown (``style``),
    led by ``view.by``, its tables cut to ``view.top`` rows."""
    by, top = view.by, view.top
    verdict = shown(_verdict(result), style)
    blocks: list[Block] = [
        heading(f"gaps: {shown(result.root, style)}", style),
        "",
        f"**{verdict}**" if style == MARKDOWN else verdict,
    ]
    if result.next_fix:  # gaps --next: the fix that saves the most per step
        fix = shown(result.next_fix, style)
        blocks += ["", f"**Next:** {fix}" if style == MARKDOWN else f"Next: {fix}"]
    if result.host is not None:  # no hardware lanes: the host's figures (host_summary.py)
        return blocks + host_blocks(result.host, style, top)
    w = result.window
    if w is None or not result.summary["executions"]:  # no window: nothing ran on hardware
        return blocks
    blocks.append(_aggregate(result, by, top))
    listed = result.picked("device_gaps", partial(longest, n=top, by="duration_ns"))
    blocks.append(_gap_rows(listed, "device", w.start_ns, result.rows_in("device_gaps")))
    if by != "op" and result.ops.height:
        blocks.append(_ops_idle(result.ops, top, "idle before each op (by cause)"))
    engines = result.engines
    if engines is not None and engines.height:
        ops = _ops_first(result, engines, top) if by != "op" else None
        blocks.append(engines_below(engines.to_dicts(), ops))
    blocks.append(Items("next steps", next_steps(result.hints, style), noun="next steps"))
    return blocks
