"""The table and Markdown layout of a ``diff`` result (base against head)."""

from __future__ import annotations

from typing import Any

import polars as pl

from trace_analyzer.render.tables import MARKDOWN, Style, first, heading, num, section, signed


def _diff(run: dict[str, Any], style: Style, top: int = 10) -> list[str]:
    verdict = ("FAILED " + "; ".join(run["failed"]) + ". " if run["failed"] else "") + run[
        "verdict_text"
    ]
    lines = [
        heading(f"diff: {run['root']}", style),
        "",
        f"**{verdict}**" if style == MARKDOWN else verdict,
    ]
    shown = [m for m in run["metrics"] if m["base"] or m["head"]]
    metrics = pl.DataFrame(
        [
            {
                "metric": m["what"],
                "base": num(m["base"]),
                "head": num(m["head"]),
                "change": signed(m["delta"]),
                "change %": signed(m["pct_delta"]),
            }
            for m in shown
        ]
    )
    lines += section("key numbers (head − base)", metrics, style)
    changed = [
        o
        for o in run["ops"]
        if o["device_us_delta"] or o["calls_delta"] or o["idle_before_us_delta"]
    ][:top]
    if changed:
        lines += section(
            f"ops that changed most (device µs; top {len(changed)})", _op_changes(changed), style
        )
    for title, ops in (
        ("ops added in head", run["added"]),
        ("ops removed in head", run["removed"]),
    ):
        if ops:
            names = ", ".join(
                f"{o['name']} ({num(first(o['device_us_head'], o['device_us_base']))} µs)"
                for o in ops[:top]
            )
            more = f", and {len(ops) - top} more" if len(ops) > top else ""
            lines += ["", f"{title}: {names}{more}"]
    return lines


def _op_changes(ops: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "op": o["name"],
                "calls": f"{num(o['calls_base'])} → {num(o['calls_head'])}",
                "device base": num(o["device_us_base"]),
                "device head": num(o["device_us_head"]),
                "device Δ": signed(o["device_us_delta"]),
                "idle before Δ": signed(o["idle_before_us_delta"]),
            }
            for o in ops
        ]
    )
