"""Renderers: turn analysis results into text. They never compute and never write files.

Each takes what a command prints (a ``RunResults`` of typed per-run results) and the
presentation options (``View``): ``render(result, *, options)``. One registry feeds
``--format``, the guess from an output file's extension, and the help. Adding a format is
one module with a ``render`` function and one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trace_analyzer.analyses.results import RunResults
from trace_analyzer.render import csv as csv_renderer
from trace_analyzer.render import json as json_renderer
from trace_analyzer.render import text
from trace_analyzer.render.view import View

__all__ = ["RENDERERS", "Renderer", "View", "for_output"]


@dataclass(frozen=True)
class Renderer:
    """One output format: its ``name`` (``--format``), the ``extensions`` that imply it, and
    its ``render`` function; calling it renders a result."""

    name: str
    extensions: tuple[str, ...]
    render: Callable[..., str]  # (result: RunResults, *, options: View) -> text

    def __call__(self, result: RunResults[Any], *, options: View = View()) -> str:
        return self.render(result, options=options)


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
