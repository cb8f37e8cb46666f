"""The table and Markdown layouts of ``gaps``, ``diff`` and ``trend`` results (one run each)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from trace_analyzer.analyses.causes import CAUSES
from trace_analyzer.analyses.rows import Rows
from trace_analyzer.render.safe import shown
from trace_analyzer.render.tables import (
    MARKDOWN,
    Style,
    bullets,
    frame_text,
    heading,
    section,
    us,
)
from trace_analyzer.render.text_idle import idle_cells, idle_phrase


def _verdict(run: dict[str, Any]) -> str:
    s, w = run["summary"], run["window"]
    if not s["lanes"]:
        return "no hardware lanes: this profile records host activity only (no hardware executions)"
    if not s["executions"]:
        return "no hardware executions in the window: nothing to measure"
    causes = {c: ns for c, ns in s["idle_by_cause_ns"].items() if ns}
    top = max(causes, key=lambda c: causes[c]) if causes else None
    longest = f", longest {us(s['gap_max_ns'])} µs" if s["gap_count"] else ""
    text = (
        f"{s['devices']} device(s) {idle_phrase(s, w['origin'], str)} "
        f"({us(s['idle_ns'])} µs in {s['gap_count']} gaps{longest})"
    )
    if top:
        text += f"; top cause {top}: {us(causes[top])} µs"
    return ("FAILED " + "; ".join(run["failed"]) + ". " if run["failed"] else "") + text


AGGREGATE = {  # --by: which table, and its first column
    "device": ("devices", "device"),
    "lane": ("lanes", "lane"),
    "op": ("ops", "op"),
    "step": ("steps", "step"),
}


def _aggregate(run: dict[str, Any], by: str, top: int) -> pl.DataFrame:
    rows = run[AGGREGATE[by][0]]
    if by == "op":
        return _ops_idle(rows[:top])
    if by == "step":
        return _steps_idle(rows)
    return pl.DataFrame(
        [
            {
                AGGREGATE[by][1]: r[AGGREGATE[by][1]],
                "busy µs": us(r["busy_ns"]),
                **idle_cells(r),
                "executions": r["executions"],
                "gaps": r["gap_count"],
                "p50 µs": us(r["gap_p50_ns"]),
                "p90 µs": us(r["gap_p90_ns"]),
                "p99 µs": us(r["gap_p99_ns"]),
                "max µs": us(r["gap_max_ns"]),
            }
            for r in rows
        ]
    )


def _ops_idle(rows: Sequence[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "op": r["op"],
                "idle before µs": us(r["idle_before_ns"]),
                "gaps": r["gaps"],
                **{c: us(r[f"{c}_ns"]) for c in CAUSES},
                "transfers": r["transfers"] or "",
            }
            for r in rows
        ]
    )


def _steps_idle(rows: Sequence[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "step": r["step"],
                "idle µs": us(r["idle_ns"]),
                "gaps": r["gaps"],
                **{c: us(r[f"{c}_ns"]) for c in CAUSES},
            }
            for r in rows
        ]
    )


def _gap_rows(gaps: Sequence[dict[str, Any]], where: str, origin: int) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                where: g[where],
                "at ms": round((g["start_ns"] - origin) / 1e6, 3),
                "gap µs": us(g["duration_ns"]),
                "cause": g["cause"],
                "after op": g["prev_op"] or f"({g['prev_name']})",
                "next op": g["next_op"] or "(unlinked)",
                "evidence": g.get("evidence") or "",
            }
            for g in gaps
        ]
    )


def _gaps(run: dict[str, Any], style: Style, by: str = "device", top: int = 10) -> list[str]:
    lines = [
        heading(f"gaps: {run['root']}", style),
        "",
        f"**{_verdict(run)}**" if style == MARKDOWN else _verdict(run),
    ]
    if not run["summary"]["executions"]:
        return lines
    lines += bullets("next steps", next_steps(run.get("hints") or [], style), style)
    origin = run["window"]["start_ns"]
    table = _aggregate(run, by, top)
    if table.height:
        lines += section(f"by {by} (µs)", table, style)
    dg = run["device_gaps"]
    longest = (
        dg.top(top, "duration_ns")
        if isinstance(dg, Rows)
        else sorted(dg, key=lambda g: -g["duration_ns"])[:top]
    )
    if longest:
        lines += section(
            f"top {len(longest)} gaps (device idle; at = ms from the window start)",
            _gap_rows(longest, "device", origin),
            style,
        )
    if by != "op" and run["ops"]:
        ops = run["ops"]
        lines += section("idle before each op (µs, by cause)", _ops_idle(ops[:top]), style)
        if len(ops) > top:
            lines.append(f"... and {len(ops) - top} more ops (--top to show more)")
    if style == MARKDOWN and run["gaps"]:
        lines += [
            "",
            f"<details><summary>all {len(run['gaps'])} gaps, per lane</summary>",
            "",
            frame_text(_gap_rows(run["gaps"], "lane", origin), style),
            "",
            "</details>",
        ]
    return lines


def next_steps(hints: Sequence[dict[str, Any]], style: Style) -> list[str]:
    """Return the hints of a gaps result as list items: per cause, then per op (names from
    the trace shown inert)."""
    out = []
    for h in hints:
        where = h["cause"] if h["op"] is None else f"{shown(h['op'], style)} ({h['cause']})"
        n = h["gaps"]
        gaps = f"{n} gap" if n == 1 else f"{n} gaps"
        out.append(f"{where}, {us(h['idle_ns'])} µs in {gaps}: {shown(h['hint'], style)}")
    return out


def _trend(run: dict[str, Any], style: Style) -> list[str]:
    rows = pl.DataFrame(
        run["rows"],
        schema={
            "group": pl.String,
            "time": pl.String,
            "run_id": pl.String,
            "idle_pct": pl.Float64,
            "device_time_ms": pl.Float64,
            "executions": pl.Int64,
            "devices": pl.Int64,
        },
    )
    lines = [
        heading(f"trend: {run['root']}", style),
        f"{rows.height} runs in {rows['group'].n_unique()} groups"
        + (f"; {run['failed_runs']} failed runs left out" if run["failed_runs"] else ""),
    ]
    return lines + section("idle % and device time over time", rows.drop("devices"), style)
