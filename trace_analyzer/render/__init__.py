"""Renderers: turn analysis results into text. They never compute and never write files.

Each takes what a command prints (a ``RunResults`` of typed per-run results) and the
presentation options (``View``): ``render(result, *, options)``. One registry feeds
``--format``, the guess from an output file's extension, and the help. Adding a format is
one module with a ``render`` function and one line here. The terminal table also takes the
terminal's ``width`` (``sized``); an output file's extension that implies no format is refused
unless ``--format`` names one (``for_output``). What a command writes is ``pieces``: UTF-8
bytes, which JSON and CSV make without a text copy of their output (JSON in slices,
``render/json.py``), and ``render/sink.py`` writes to standard output or the ``-o`` file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from trace_analyzer.analyses.results import RunResults
from trace_analyzer.errors import UsageError
from trace_analyzer.render import csv as csv_renderer
from trace_analyzer.render import json as json_renderer
from trace_analyzer.render import text
from trace_analyzer.render.json import Piece
from trace_analyzer.render.view import View

__all__ = ["RENDERERS", "Renderer", "View", "for_output"]


@dataclass(frozen=True)
class Renderer:
    """One output format: its ``name`` (``--format``), the ``extensions`` that imply it, and
    its ``render`` function; calling it renders a result. ``sized``: ``render`` takes the
    ``width`` of a terminal to fit (the table format). ``encoded``: the format's own way to
    the UTF-8 bytes of its output, in pieces (else ``render``'s text, encoded)."""

    name: str
    extensions: tuple[str, ...]
    render: Callable[..., str]  # (result: RunResults, *, options: View) -> text
    sized: bool = False
    encoded: Callable[..., Iterable[Piece]] | None = None  # (result, *, options) -> bytes

    def __call__(
        self, result: RunResults[Any], *, options: View = View(), width: int | None = None
    ) -> str:
        """Return ``result`` rendered; ``width``: the terminal's, for a ``sized`` format."""
        if self.sized:
            return self.render(result, options=options, width=width)
        return self.render(result, options=options)

    def pieces(
        self, result: RunResults[Any], *, options: View = View(), width: int | None = None
    ) -> Iterable[Piece]:
        """Return ``result`` rendered as UTF-8 bytes, in pieces that joined are the text
        ``__call__`` returns: what a command writes (``render/sink.py``)."""
        if self.encoded is not None:
            return self.encoded(result, options=options)
        return (self(result, options=options, width=width).encode(),)


RENDERERS = {
    "table": Renderer("table", (".txt",), text.render_table, sized=True),
    "markdown": Renderer("markdown", (".md", ".markdown"), text.render_markdown),
    "json": Renderer("json", (".json",), json_renderer.render, encoded=json_renderer.encoded),
    "csv": Renderer("csv", (".csv",), csv_renderer.render, encoded=csv_renderer.encoded),
}


def for_output(fmt: str | None, output: str | None) -> Renderer:
    """Return the renderer named by ``fmt``, else the one the output file's extension implies
    (UsageError for an extension that implies none), else the table."""
    if fmt:
        return RENDERERS[fmt]
    if output:
        for r in RENDERERS.values():
            if output.lower().endswith(r.extensions):
                return r
        known = ", ".join(f"{'/'.join(r.extensions)} ({r.name})" for r in RENDERERS.values())
        raise UsageError(
            f"-o {output}: the extension names no output format ({known}); "
            "give --format to write another name"
        )
    return RENDERERS["table"]
