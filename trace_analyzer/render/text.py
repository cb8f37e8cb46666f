"""Text for people: plain tables for a terminal and Markdown for pull requests.

``render_table`` and ``render_markdown`` take what a command prints (a ``RunResults``) and
lay out each run with its question's layout, found in the questions' registry by the result's
type (``questions.QUESTIONS``, ``layouts``); ``View`` holds the presentation choices (--by,
--top). A terminal table fits ``width``; a Markdown document stays under ``BUDGET``
characters, its tables cut to fewer rows when it would not (``fit``; docs/output.md says
both).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from trace_analyzer.analyses.results import RunResult, RunResults
from trace_analyzer.questions import layouts, resolve, type_name
from trace_analyzer.render.blocks import MARKDOWN, TABLE, Block, Items, Style, draw
from trace_analyzer.render.budget import BUDGET, fit
from trace_analyzer.render.safe import warning_texts
from trace_analyzer.render.view import View

Layout = Callable[[Any, Style, View], Sequence[Block]]  # (a question's result, …)
WARNING_CHARS = 500  # a warning longer than this is cut in Markdown (a document has a budget)
INFO = "trace_analyzer.questions.info.analysis:InfoResult"  # shows its warnings itself


def render_table(
    result: RunResults[Any], *, options: View = View(), width: int | None = None
) -> str:
    """Return the terminal text of ``result`` (what a command prints); ``options``: the
    presentation choices (--by, --top); ``width``: the terminal's, which every line fits
    (None: as wide as the tables are)."""
    runs = [draw(blocks, TABLE, width=width) for blocks in _blocks(result, TABLE, options)]
    return "\n\n".join("\n".join(lines) for lines in runs) + "\n"


def render_markdown(
    result: RunResults[Any], *, options: View = View(), budget: int = BUDGET
) -> str:
    """Return the Markdown of ``result``, fit to paste into a pull request: never more than
    ``budget`` characters (tables cut to fewer rows, shared by the runs, when it would be);
    ``options``: the presentation choices (--by, --top)."""
    return fit(_blocks(result, MARKDOWN, options), budget)


def _blocks(result: RunResults[Any], style: Style, view: View) -> list[list[Block]]:
    warned = result.warnings or [()] * len(result.runs)
    return [
        _run_blocks(run, warnings, style, view)
        for run, warnings in zip(result.runs, warned, strict=True)
    ]


def _run_blocks(run: RunResult, warnings: Sequence[str], style: Style, view: View) -> list[Block]:
    """Return the blocks of one run: its layout, opened (after its heading) by the run's
    ``warnings`` when the command gave them (info shows its own)."""
    blocks = list(layout_of(run)(run, style, view))
    if type_name(run) == INFO or not warnings:
        return blocks
    rest = blocks[2:] if len(blocks) > 1 and blocks[1] == "" else blocks[1:]
    return [*blocks[:1], warnings_block(warnings, style), "", *rest]


def warnings_block(warnings: Sequence[str], style: Style) -> Items:
    """Return the list of a run's warnings that opens its report (cut in Markdown)."""
    most = WARNING_CHARS if style == MARKDOWN else None
    return Items("warnings", warning_texts(warnings, style, most), noun="warnings")


def layout_of(run: RunResult) -> Layout:
    """Return the layout of the result type of ``run``, from the questions' registry
    (TypeError for a type without one)."""
    name = type_name(run)
    for kind, layout in layouts():
        if kind == name:
            found: Layout = resolve(layout)
            return found
    raise TypeError(f"no text layout for {type(run).__name__}")
