"""Text tables for people: what the table and Markdown renderers share.

A layout (``render/text.py``, ``text_gaps.py``) returns blocks: lines of text (``str``),
tables (``Table``) and lists (``Items``); ``draw`` turns them into the lines of a style. A
table's cells are text (numbers as ``numbers.py`` writes them), made inert as they are
drawn. Its columns say how to draw them (docs/output.md): numbers right-aligned (``---:`` in
Markdown); in a terminal of a given width, which text a cell may be cut to (names in their
middle, keeping what tells the column's names apart: ``render/cut.py``), which text wraps
onto more lines instead (evidence), and in which order columns are dropped; which columns
are hidden when no row shown has a value (empty, a dash or zero). ``cap`` draws fewer rows:
how ``text.fit`` keeps a Markdown document under its budget.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import polars as pl

from trace_analyzer.numbers import DASH, count, number, percent
from trace_analyzer.numbers import plural as plural  # the layouts take it from here
from trace_analyzer.render.cut import END, MIDDLE, START, Where, cut_apart
from trace_analyzer.render.cut import cut as cut_text
from trace_analyzer.render.safe import MARKDOWN as MARKDOWN
from trace_analyzer.render.safe import TABLE as TABLE
from trace_analyzer.render.safe import Style as Style
from trace_analyzer.render.safe import heading as heading
from trace_analyzer.render.safe import markdown, plain

MARKDOWN_CELL = 160  # the most characters of a cell in Markdown (names can be kilobytes)
NOTHING = re.compile(r"^(|–|-|0|0 ns|0 %|0\.0+)$")  # what an optional column may hold, hidden
UNIT = re.compile(r"(?<=\d) (?=(ns|µs|ms|s)\b|%)")  # the space between a number and its unit
NBSP = "\u00a0"
NUMERIC = re.compile(r"^(–|[+\-−]?[\d,.]+( ?[a-zµ%]+)?)$")


@dataclass(frozen=True)
class Column:
    """One column of a ``Table``: its header ``name``; ``right``: a number, right-aligned;
    ``drop``: a narrow terminal drops the columns with ``drop`` > 0, 1 first; ``cut``: the
    fewest characters a narrow terminal may cut this text column to (0: never cut, but as a
    last resort); text is cut in its middle (``cut.cut_apart``), or with ``keep_end`` at its
    start, keeping the end (``…/GPU:0``); ``wrap``: prose that a narrow terminal wraps onto
    more lines, to ``cut`` characters at the least, before any other column is narrowed (cut
    at its end in a Markdown cell over ``MARKDOWN_CELL``); ``optional``: hidden when no row
    shown has a value."""

    name: str
    right: bool = False
    drop: int = 0
    cut: int = 0
    keep_end: bool = False
    optional: bool = False
    wrap: bool = False

    @property
    def at(self) -> Where:
        """Where the column's text is cut (``cut.cut``)."""
        return END if self.wrap else START if self.keep_end else MIDDLE


def num_col(name: str, drop: int = 0, optional: bool = False) -> Column:
    """Return a column of numbers (right-aligned)."""
    return Column(name, right=True, drop=drop, optional=optional)


def text_col(
    name: str, cut: int = 16, drop: int = 0, keep_end: bool = False, wrap: bool = False
) -> Column:
    """Return a column of text that a narrow terminal may cut (or ``wrap``) to ``cut``
    characters."""
    return Column(name, cut=cut, drop=drop, keep_end=keep_end, wrap=wrap)


# The ``more`` of a table that ``--top N`` cuts.
TOP_MORE = "`--top N` shows more, `--format json` has them all"


@dataclass(frozen=True)
class Table:
    """A titled table: ``columns`` and ``rows`` of cells (text as shown, not yet inert).

    ``total``: how many rows there are (None: ``len(rows)``); when more than are drawn, a line
    under the table says how many more ``noun`` there are and ``more``, how to see them
    (Markdown: backticks around options, left out in a terminal)."""

    title: str | None
    columns: tuple[Column, ...]
    rows: Sequence[Sequence[str]]
    total: int | None = None
    noun: str = "rows"
    more: str = "`--format json` has them all"


@dataclass(frozen=True)
class Items:
    """A titled list of ``items`` (already inert for the style); ``noun``: what they are, for
    the line that says how many more there are; ``code``: commands, a fenced block in
    Markdown and indented in a terminal, never wrapped nor cut."""

    title: str
    items: Sequence[str]
    noun: str = "items"
    code: bool = False


Block: TypeAlias = str | Table | Items


def draw(
    blocks: Sequence[Block], style: Style, *, width: int | None = None, cap: int | None = None
) -> list[str]:
    """Return the lines of ``blocks`` in ``style``. ``width``: a terminal's (text wrapped,
    tables fit to it; None: as wide as they are); ``cap``: the most rows of any table or list
    (None: all)."""
    lines: list[str] = []
    for b in blocks:
        if isinstance(b, Table):
            lines += _table(b, style, width, cap)
        elif isinstance(b, Items):
            lines += _items(b, style, width, cap)
        else:
            lines += _wrapped(b, width) if style == TABLE else [b]
    return lines


def rows_in(blocks: Sequence[Block]) -> int:
    """Return the most rows of any table or list of ``blocks`` (what ``cap`` can cut)."""
    sizes = [
        len(b.rows) if isinstance(b, Table) else len(b.items)
        for b in blocks
        if isinstance(b, Table | Items)
    ]
    return max(sizes, default=0)


def _wrapped(line: str, width: int | None, indent: str = "") -> list[str]:
    """Return a line of prose wrapped to ``width`` (list items hang); text holding line breaks
    (a table drawn already) as it is."""
    if width is None or "\n" in line or len(line) <= width:
        return line.splitlines() or [""]
    hang = "  " if line.startswith("- ") else indent
    return textwrap.wrap(line, width, subsequent_indent=hang, break_on_hyphens=False) or [""]


def _titled(title: str, style: Style, width: int | None) -> list[str]:
    """Return the lines that open a table or a list: a blank line, ``title`` (a level-3
    heading; wrapped in a terminal), a blank line."""
    return ["", *_wrapped(heading(title, style, 3), width if style == TABLE else None), ""]


def _more(n: int, noun: str, how: str, style: Style) -> str:
    how = how if style == MARKDOWN else how.replace("`", "")
    return f"… and {count(n)} more {noun}" + (f": {how}" if how else "")


def _items(b: Items, style: Style, width: int | None, cap: int | None) -> list[str]:
    if not b.items:
        return []
    shown = list(b.items[:cap]) if cap is not None else list(b.items)
    lines = _titled(b.title, style, width)
    if b.code:
        lines += ["```sh", *shown, "```"] if style == MARKDOWN else [f"    {c}" for c in shown]
    else:
        for item in shown:
            lines += _wrapped(f"- {item}", width if style == TABLE else None)
    if len(b.items) > len(shown):  # apart: in Markdown, not a part of the last item
        lines += ["", *_wrapped(_more(len(b.items) - len(shown), b.noun, "", style), width)]
    return lines


def _table(t: Table, style: Style, width: int | None, cap: int | None) -> list[str]:
    rows = list(t.rows[:cap]) if cap is not None else list(t.rows)
    if not rows:
        return []
    if style == MARKDOWN:
        cells = _markdown_cells(t.columns, [[_filled(c) for c in r] for r in rows])
    else:
        cells = [[plain(_filled(c)) for c in r] for r in rows]
    cols = [
        i
        for i, c in enumerate(t.columns)
        if not (c.optional and all(NOTHING.match(r[i]) for r in cells))
    ]
    heads = [plain(c.name) for c in t.columns]
    natural = {i: max(len(heads[i]), *(len(r[i]) for r in cells)) for i in cols}
    dropped: list[str] = []
    widths = natural
    if style == TABLE and width is not None:
        kept, widths = _fit(t.columns, natural, cols, width)
        dropped = [heads[i] for i in cols if i not in kept]
        cols = kept
    lines = _titled(t.title, style, width) if t.title else [""]
    lines += _pipe(t.columns, heads, cells, cols, widths, style)
    if dropped:
        lines += _wrapped(f"(left out to fit {width} columns: {', '.join(dropped)})", width)
    total = len(t.rows) if t.total is None else t.total
    if total > len(rows):  # apart: in Markdown, a line under a table is a row of it
        lines += ["", *_wrapped(_more(total - len(rows), t.noun, t.more, style), width)]
    return lines


def _filled(cell: object) -> str:
    """Return a cell as text: missing or empty is a dash."""
    return DASH if cell is None or cell == "" else str(cell)


def _markdown_cells(columns: Sequence[Column], rows: list[list[str]]) -> list[list[str]]:
    """Return the cells of ``rows`` as Markdown: each column's cut to ``MARKDOWN_CELL``
    characters where it is cut (``Column.at``; names kept apart), then made inert."""
    shown = [cut_apart((r[i] for r in rows), MARKDOWN_CELL, c.at) for i, c in enumerate(columns)]
    return [[markdown(shown[i][v]) for i, v in enumerate(r)] for r in rows]


def _pipe(
    columns: Sequence[Column],
    heads: list[str],
    cells: list[list[str]],
    cols: list[int],
    widths: dict[int, int],
    style: Style,
) -> list[str]:
    """Return the pipe-table lines (header, delimiter, rows) of the columns ``cols``: text cut
    to each column's width (``cut.cut_apart``), a ``wrap`` column's onto more lines, the other
    cells of a row blank on them, so that every line keeps the columns aligned."""
    shown = {
        i: cut_apart((r[i] for r in cells), widths[i], columns[i].at)
        for i in cols
        if not columns[i].wrap
    }

    def line(values: Sequence[str]) -> str:
        parts = []
        for i, v in zip(cols, values, strict=True):
            w = widths[i]
            parts.append(v.rjust(w) if columns[i].right else v.ljust(w))
        return "| " + " | ".join(parts) + " |"

    def row(r: list[str]) -> list[str]:
        pieces = [_wrap(r[i], widths[i]) if i not in shown else [shown[i][r[i]]] for i in cols]
        return [line([p[k] if k < len(p) else "" for p in pieces]) for k in range(_tallest(pieces))]

    marks = [
        "-" * (widths[i] + 1) + ":"
        if style == MARKDOWN and columns[i].right
        else "-" * (widths[i] + 2)
        for i in cols
    ]
    head = line([cut_text(heads[i], widths[i], END) for i in cols])
    return [head, "|" + "|".join(marks) + "|", *(ln for r in cells for ln in row(r))]


def _wrap(text: str, width: int) -> list[str]:
    """Return ``text`` (inert already) wrapped at words to ``width``, a number kept with its
    unit (``118.4 µs``) and a word longer than the width broken: every character kept but
    the spaces where it breaks."""
    if len(text) <= width:
        return [text]
    glue = NBSP not in text  # held apart by a no-break space, which textwrap does not break
    held = UNIT.sub(NBSP, text) if glue else text
    lines = textwrap.wrap(held, width, break_on_hyphens=False) or [text[:width]]
    return [ln.replace(NBSP, " ") for ln in lines] if glue else lines


def _tallest(pieces: list[list[str]]) -> int:
    return max((len(p) for p in pieces), default=1)


def _fit(
    columns: Sequence[Column], natural: dict[int, int], cols: list[int], width: int
) -> tuple[list[int], dict[int, int]]:
    """Return the columns kept and their widths for a terminal ``width``: text cut to each
    column's ``cut`` first, then the droppable columns dropped (``drop`` 1 first), then the
    others from the right; the first column alone is cut to what is left."""
    keep = list(cols)
    order = sorted((i for i in keep if columns[i].drop), key=lambda i: (columns[i].drop, -i))
    order += [i for i in reversed(keep[1:]) if i not in order]
    while True:
        floors = {i: min(natural[i], columns[i].cut or natural[i]) for i in keep}
        wrapping = {i for i in keep if columns[i].wrap}
        widths = _shrunk(natural, keep, floors, width, wrapping)
        if widths is not None:
            return keep, widths
        if not order:
            return keep, {keep[0]: max(1, width - 4)}
        keep.remove(order.pop(0))


def _shrunk(
    natural: dict[int, int],
    keep: list[int],
    floors: dict[int, int],
    width: int,
    wrapping: set[int],
) -> dict[int, int] | None:
    """Return widths of ``keep`` whose table fits ``width``, the columns that wrap
    (``wrapping``) narrowed first, then the widest cut first, none below its floor; None when
    they cannot fit."""
    widths = {i: natural[i] for i in keep}
    need = sum(widths.values()) + 3 * len(keep) + 1 - width
    if need > sum(widths[i] - floors[i] for i in keep):
        return None
    while need > 0:  # wrapping loses nothing: the columns that wrap narrow first
        room = [k for k in keep if widths[k] > floors[k]]
        i = max([k for k in room if k in wrapping] or room, key=lambda k: widths[k])
        widths[i] -= 1
        need -= 1
    return widths


# ---- what the layouts share


def frame_text(df: pl.DataFrame, style: Style = TABLE) -> str:
    """Return ``df`` as a pipe table in ``style`` with every row and column shown: numbers
    (and text columns that hold only numbers) right-aligned, missing values a dash."""
    cells = [[_value(v) for v in row] for row in df.rows()]
    columns = tuple(
        Column(
            name,
            right=df[name].dtype.is_numeric()
            or (df.height > 0 and all(NUMERIC.match(r[j]) for r in cells)),
        )
        for j, name in enumerate(df.columns)
    )
    return "\n".join(_table(Table(None, columns, cells), style, None, None)[1:])


def _value(v: Any) -> str:
    return number(v) if isinstance(v, int | float) and v is not None else _filled(v)


def section(title: str, df: pl.DataFrame, style: Style) -> list[str]:
    """Return the lines of a titled table: a blank line, ``title`` (a level-3 heading), a blank
    line, then ``df`` as a table in ``style`` (``frame_text``)."""
    return ["", heading(title, style, 3), "", frame_text(df, style)]


def coverage_line(cov: dict[str, Any]) -> str:
    """Return the sentence saying how many hardware executions link to an op; ``cov`` is a
    coverage (``questions.chain.analysis.coverage``)."""
    if not cov["hardware_executions"]:
        return "no hardware executions: nothing ran on a device lane"
    methods = ", ".join(f"{m} {count(n)}" for m, n in cov["by_method"].items()) or "none"
    return (
        f"{count(cov['linked'])} of {count(cov['hardware_executions'])} hardware executions "
        f"({percent(cov['linked_pct'])}) link to a framework op (by {methods}); "
        f"{count(cov['unlinked'])} unlinked"
    )


def first(*values: Any) -> Any:
    """Return the first of ``values`` that is not None (None if all are)."""
    return next((v for v in values if v is not None), None)


def num(v: object) -> str:
    """Return a value ``v`` as a table shows it: floats shortest (``%g``), None as nothing."""
    return "" if v is None else f"{v:g}" if isinstance(v, float) else str(v)
