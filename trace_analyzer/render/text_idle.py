"""How the reports word a run's two idle percentages (docs/gaps.md, "Definitions").

``idle_pct`` is idle in gaps over the window (the window times the devices, in a summary);
``active_idle_pct`` is the same idle over the devices' own active spans (each device's first
execution start to its last execution end). The verdict lines and the device and lane tables
of every report word them here, so that they say the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trace_analyzer.render.tables import num, us


def idle_phrase(summary: dict[str, Any], origin: str, fmt: Callable[[object], str] = num) -> str:
    """Return ``idle 67.09 % of the hardware span, 92.25 % of the devices' active spans``
    (``of its active span`` for one device): a summary's two idle percentages, ``origin``
    naming the window."""
    spans = "its active span" if summary["devices"] == 1 else "the devices' active spans"
    return (
        f"idle {fmt(summary['idle_pct'])} % of the {origin}, "
        f"{fmt(summary['active_idle_pct'])} % of {spans}"
    )


def idle_cells(row: dict[str, Any]) -> dict[str, Any]:
    """Return the idle cells of a device or lane row (``devices``/``lanes`` of the JSON):
    idle µs, both idle percentages, the active span, leading and trailing idle."""
    return {
        "idle µs": us(row["idle_ns"]),
        "idle % window": row["idle_pct"],
        "idle % active": row["active_idle_pct"],
        "active µs": us(row["active_ns"]),
        "leading µs": us(row["leading_ns"]),
        "trailing µs": us(row["trailing_ns"]),
    }
