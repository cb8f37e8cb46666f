"""The Critical path section of the report page (``traceana report``): ``traceana critical``'s
JSON as the page embeds it, drawn by templates/section.html."""

from __future__ import annotations

from typing import Any

from trace_analyzer.render.html import fill


def critical_section(run: dict[str, Any], png: bytes | None) -> str:
    """Return the critical-path section of a critical ``run`` (``traceana critical``'s JSON):
    the verdict, the fixes ranked by the step time they save, each window's path by kind."""
    return fill(f"{__package__}:section.html", run=run, png=png)
