"""Renderers: turn analysis results into text. They never compute and never write files.

A result is plain data: ``{"schema_version", "path", "runs": [...]}`` with one entry per run.
One registry feeds ``--format``, the guess from an output file's extension, and the help.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trace_analyzer.render import csv as csv_renderer
from trace_analyzer.render import json as json_renderer
from trace_analyzer.render import text


@dataclass(frozen=True)
class Renderer:
    name: str
    extensions: tuple[str, ...]
    render: Callable[[str, dict], str]  # (result kind, result data) -> text


RENDERERS = {
    "table": Renderer("table", (".txt",), text.render_table),
    "markdown": Renderer("markdown", (".md", ".markdown"), text.render_markdown),
    "json": Renderer("json", (".json",), json_renderer.render),
    "csv": Renderer("csv", (".csv",), csv_renderer.render),
}


def for_output(fmt: str | None, output: str | None) -> Renderer:
    """Return the renderer named by ``fmt``, else the one the output extension implies."""
    if fmt:
        return RENDERERS[fmt]
    if output:
        for r in RENDERERS.values():
            if output.lower().endswith(r.extensions):
                return r
    return RENDERERS["table"]
