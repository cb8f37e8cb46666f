"""The Ranks section of the report page (``traceana report``): ``traceana ranks``' JSON as the
page embeds it, drawn by templates/section.html, with its plots (plots.py) when drawn."""

from __future__ import annotations

from typing import Any

from trace_analyzer.questions.ranks.plots import collectives_heat
from trace_analyzer.render.html import fill

WORST = 10  # the collectives the section lists, the longest waits first


def ranks_section(run: dict[str, Any], png: bytes | None) -> str:
    """Return the ranks section of a ranks ``run`` (``traceana ranks``' JSON): per rank,
    device and step the window broken down, the stragglers, the clock offsets, the
    collectives per group, the worst and their heat map (drawn where ``png`` is: the page
    has images)."""
    worst = sorted(run.get("collectives") or [], key=lambda c: -(c["max_wait_ns"] or 0))
    heat = collectives_heat(run) if png is not None else None
    return fill(f"{__package__}:section.html", run=run, png=png, worst=worst[:WORST], heat=heat)
