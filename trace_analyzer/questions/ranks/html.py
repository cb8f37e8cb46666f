"""The Ranks section of the report page (``traceana report``): ``traceana ranks``' JSON as the
page embeds it, drawn by templates/section.html, with its plot (plots.py) when drawn."""

from __future__ import annotations

from typing import Any

from trace_analyzer.render.html import fill


def ranks_section(run: dict[str, Any], png: bytes | None) -> str:
    """Return the ranks section of a ranks ``run`` (``traceana ranks``' JSON): per rank,
    device and step the window broken down, the stragglers, the clock offsets."""
    return fill(f"{__package__}:section.html", run=run, png=png)
