"""The Launches section of the report page (``traceana report``): ``traceana launches``' JSON as
the page embeds it, drawn by templates/section.html, with its plot (plots.py) when drawn."""

from __future__ import annotations

from typing import Any

from trace_analyzer.render.html import fill


def launches_section(run: dict[str, Any], png: bytes | None) -> str:
    """Return the launches section of a launches ``run`` (``traceana launches``' JSON): per
    lane, launch latency and delay, the queue, time blocked on a full queue."""
    return fill(f"{__package__}:section.html", run=run, png=png)
