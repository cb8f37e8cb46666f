"""Text tables for people: what the table and Markdown renderers share.

Tables are drawn by polars' own formatter. Times are shown in ms or µs, as the headers say.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import polars as pl

# The two text styles, as polars' table formatter names them: a terminal table, Markdown.
Style: TypeAlias = Literal["ASCII_MARKDOWN", "MARKDOWN"]
TABLE: Style = "ASCII_MARKDOWN"
MARKDOWN: Style = "MARKDOWN"


def frame_text(df: pl.DataFrame, style: Style = TABLE) -> str:
    """Return ``df`` as a text table in ``style`` with every row and column shown."""
    with pl.Config(
        tbl_formatting=style,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=1000,
        fmt_str_lengths=200,
        fmt_table_cell_list_len=10,
        tbl_cell_numeric_alignment="RIGHT",
        float_precision=None,
        fmt_float="full",
    ):
        return str(df)


def heading(text: str, style: Style, level: int = 2) -> str:
    """Return ``text`` as a heading in ``style``: in Markdown of ``level`` (``##``), else the
    text alone."""
    return f"{'#' * level} {text}" if style == MARKDOWN else text


def section(title: str, df: pl.DataFrame, style: Style) -> list[str]:
    """Return the lines of a titled table: a blank line, ``title`` (a level-3 heading), a blank
    line, then ``df`` as a table in ``style``."""
    return ["", heading(title, style, 3), "", frame_text(df, style)]


def bullets(title: str, items: list[str], style: Style) -> list[str]:
    """Return the lines of a titled list of ``items`` (none when there are no items); ``title``
    is a level-3 heading in ``style``."""
    return ["", heading(title, style, 3), ""] + [f"- {i}" for i in items] if items else []


def ms(ns: int | None, origin: int | None) -> float | None:
    """Return the time ``ns`` in ms after ``origin`` (µs resolution); None if either is None."""
    return None if ns is None or origin is None else round((ns - origin) / 1e6, 3)


def us(ns: float | None) -> float | None:
    """Return a duration ``ns`` in µs, one decimal; None stays None."""
    return None if ns is None else round(ns / 1000, 1)


def coverage_line(cov: dict[str, Any]) -> str:
    """Return the sentence saying how many hardware executions link to an op; ``cov`` is a
    coverage (``analyses.chain.coverage``)."""
    if not cov["hardware_executions"]:
        return "no hardware executions: nothing ran on a device lane"
    methods = ", ".join(f"{m} {n}" for m, n in cov["by_method"].items()) or "none"
    return (
        f"{cov['linked']} of {cov['hardware_executions']} hardware executions "
        f"({cov['linked_pct']} %) link to a framework op (by {methods}); "
        f"{cov['unlinked']} unlinked"
    )


def first(*values: Any) -> Any:
    """Return the first of ``values`` that is not None (None if all are)."""
    return next((v for v in values if v is not None), None)


def num(v: object) -> str:
    """Return a value ``v`` as a table shows it: floats shortest (``%g``), None as nothing."""
    return "" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def signed(v: float | None) -> str:
    """Return a change ``v`` with its sign (``+1.5``, ``-2``), None as nothing."""
    return "" if v is None else f"{v:+g}"
