"""How the reports word a run's two idle percentages (docs/gaps.md, "Definitions").

``idle_pct`` is idle in gaps over the window (the window times the devices, in a summary);
``active_idle_pct`` is the same idle over the devices' own active spans (each device's first
execution start to its last execution end). The verdict lines and the device and lane tables
of every report word them here, so that they say the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trace_analyzer.numbers import count, duration, percent
from trace_analyzer.render.blocks import Column, num, num_col


def idle_phrase(summary: dict[str, Any], origin: str, fmt: Callable[[object], str] = num) -> str:
    """Return ``idle 67.09 % of the hardware span, 92.25 % of the devices' active spans``
    (``of its active span`` for one device): a summary's two idle percentages, ``origin``
    naming the window; ``fmt`` writes a percentage without its ``%``. Where a collective ran
    with no compute beside it, or copies alone, their shares of the window follow
    (``, exposed communication 55.55 %``): the device was not idle then, nor computing."""
    spans = "its active span" if summary["devices"] == 1 else "the devices' active spans"
    parts = [
        f", {name} {fmt(summary[key])} %"
        for name, key in (
            ("exposed communication", "exposed_communication_pct"),
            ("copying alone", "memory_pct"),
        )
        if summary.get(key)
    ]
    return (
        f"idle {fmt(summary['idle_pct'])} % of the {origin}, "
        f"{fmt(summary['active_idle_pct'])} % of {spans}" + "".join(parts)
    )


def bare_percent(v: object) -> str:
    """Return a percentage as ``numbers.percent`` writes it, without the ``%`` (``fmt`` of
    ``idle_phrase`` in the text reports)."""
    return percent(v if isinstance(v, int | float) else None).removesuffix(" %")


# The columns of a device or lane row (``devices``/``lanes`` of the JSON) after its name; a
# narrow terminal drops them in the order of ``drop`` (1 first).
IDLE_COLUMNS: tuple[tuple[Column, Callable[[dict[str, Any]], str]], ...] = (
    (num_col("busy", drop=10), lambda r: duration(r["busy_ns"])),
    (num_col("idle"), lambda r: duration(r["idle_ns"])),
    (num_col("idle %"), lambda r: percent(r["idle_pct"])),
    # a device's time with a collective and no compute, and copies alone (none on a lane)
    (num_col("exposed comm", optional=True), lambda r: _part(r, "exposed_communication_ns")),
    (num_col("copying alone", drop=9, optional=True), lambda r: _part(r, "memory_ns")),
    (num_col("active idle %", drop=6), lambda r: percent(r["active_idle_pct"])),
    (num_col("active span", drop=7), lambda r: duration(r["active_ns"])),
    (num_col("leading", drop=4), lambda r: duration(r["leading_ns"])),
    (num_col("trailing", drop=5), lambda r: duration(r["trailing_ns"])),
    (num_col("executions", drop=8), lambda r: count(r["executions"])),
    (num_col("gaps"), lambda r: count(r["gap_count"])),
    (num_col("p50 gap", drop=2), lambda r: duration(r["gap_p50_ns"])),
    (num_col("p90 gap", drop=3), lambda r: duration(r["gap_p90_ns"])),
    (num_col("p99 gap", drop=1), lambda r: duration(r["gap_p99_ns"])),
    (num_col("max gap"), lambda r: duration(r["gap_max_ns"])),
)


def _part(row: dict[str, Any], column: str) -> str:
    """Return a device row's ``column`` (a state's time), or nothing for a lane's row."""
    value = row.get(column)
    return duration(value) if value else ""


def idle_cells(row: dict[str, Any]) -> list[str]:
    """Return the cells of ``IDLE_COLUMNS`` for a device or lane row: busy, idle, both idle
    percentages, the active span, leading and trailing idle, executions, gaps and their
    percentiles."""
    return [cell(row) for _, cell in IDLE_COLUMNS]
