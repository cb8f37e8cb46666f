"""The Kernels section of the report page (``traceana report``): ``traceana kernels``' JSON as
the page embeds it, drawn by templates/section.html, with its plot (plots.py) when drawn."""

from __future__ import annotations

from typing import Any

from trace_analyzer.render.html import fill


def kernels_section(run: dict[str, Any], png: bytes | None) -> str:
    """Return the kernels section of a kernels ``run`` (``traceana kernels``' JSON): the
    kernels (Neuron: NEFFs) by total device time, per rank, with their spread."""
    return fill(f"{__package__}:section.html", run=run, png=png)
