"""Text tables for people: what the table and Markdown renderers share.

Tables are drawn by polars' own formatter. Times are shown in ms or µs, as the headers say.
"""

from __future__ import annotations

import polars as pl

TABLE, MARKDOWN = "ASCII_MARKDOWN", "MARKDOWN"


def frame_text(df: pl.DataFrame, style: str = TABLE) -> str:
    """Return df as a text table with every row and column shown."""
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


def heading(text: str, style: str, level: int = 2) -> str:
    return f"{'#' * level} {text}" if style == MARKDOWN else text


def section(title: str, df: pl.DataFrame, style: str) -> list[str]:
    return ["", heading(title, style, 3), "", frame_text(df, style)]


def bullets(title: str, items: list[str], style: str) -> list[str]:
    return ["", heading(title, style, 3), ""] + [f"- {i}" for i in items] if items else []


def ms(ns: int | None, origin: int | None) -> float | None:
    return None if ns is None or origin is None else round((ns - origin) / 1e6, 3)


def us(ns: int | None) -> float | None:
    return None if ns is None else round(ns / 1000, 1)


def coverage_line(cov: dict) -> str:
    if not cov["hardware_executions"]:
        return "no hardware executions: nothing ran on a device lane"
    methods = ", ".join(f"{m} {n}" for m, n in cov["by_method"].items()) or "none"
    return (
        f"{cov['linked']} of {cov['hardware_executions']} hardware executions "
        f"({cov['linked_pct']} %) link to a framework op (by {methods}); "
        f"{cov['unlinked']} unlinked"
    )


def first(*values):
    return next((v for v in values if v is not None), None)


def num(v) -> str:
    return "" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def signed(v) -> str:
    return "" if v is None else f"{v:+g}"
