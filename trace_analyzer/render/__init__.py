"""Renderers: turn analysis results into text. They never compute and never write files.

One registry feeds ``--format``, the guess from an output file's extension, and the help.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import json as json_renderer
from . import table as table_renderer


@dataclass(frozen=True)
class Renderer:
    name: str
    extension: str
    render: Callable[[str, dict], str]  # (result kind, result data) -> text


RENDERERS = {
    "table": Renderer("table", ".txt", table_renderer.render),
    "json": Renderer("json", ".json", json_renderer.render),
}


def for_output(fmt: str | None, output: str | None) -> Renderer:
    """Return the renderer named by ``fmt``, else the one the output extension implies."""
    if fmt:
        return RENDERERS[fmt]
    if output:
        for r in RENDERERS.values():
            if output.endswith(r.extension):
                return r
    return RENDERERS["table"]
