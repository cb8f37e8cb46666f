"""CSV: the main table of a result, one row per item, a ``run`` column when several runs.

Names in it are data (docs/output.md): a text cell's control characters are shown as the
text of their escape (``\\x1b``, as the ``table`` format shows them), so that the file is
safe to ``cat`` on a terminal, and a cell a spreadsheet would run as a formula is written
with a leading ``'``. Tabs and line feeds stay as they are (a quoted cell holds them, and a
terminal acts on neither); JSON is the output that keeps every name exactly.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import polars as pl

from trace_analyzer.analyses.results import RunResults
from trace_analyzer.analyses.rows import as_frame
from trace_analyzer.render.safe import CONTROL, visible
from trace_analyzer.render.view import View


def render(result: RunResults[Any], *, options: View = View()) -> str:
    """Return each run's main table of ``result`` (its ``csv_rows``, mostly its type's
    ``csv_table``) as CSV (times in ns, durations in µs as named); ``options`` change nothing
    here."""
    df = table(result)
    return "" if df is None else df.write_csv()


def encoded(result: RunResults[Any], *, options: View = View()) -> Iterator[bytes | memoryview]:
    """Yield the CSV of ``result`` (``render``) as UTF-8 bytes, as polars writes them: what the
    command writes, with no text copy of the table made."""
    df = table(result)
    if df is not None:
        buf = io.BytesIO()
        df.write_csv(buf)
        yield buf.getbuffer()


def table(result: RunResults[Any]) -> pl.DataFrame | None:
    """Return the one table the CSV of ``result`` is (``inert``), or None when no run has a
    row."""
    frames = []
    for run in result.runs:
        data = run.to_json()
        rows = run.csv_rows(data)
        if rows:
            frames.append(as_frame(rows).with_columns(run=pl.lit(data["root"])))
    if not frames:
        return None
    df = pl.concat(frames, how="diagonal_relaxed")
    if len(result.runs) == 1:
        df = df.drop("run")
    lists = [c for c, t in df.schema.items() if isinstance(t, pl.List)]
    df = df.with_columns(pl.col(c).cast(pl.List(pl.String)).list.join(";") for c in lists)
    return inert(df)


# What a spreadsheet reads as the start of a formula (OWASP's list for CSV injection).
FORMULA = r"^[=+\-@\t\r]"


def inert(df: pl.DataFrame) -> pl.DataFrame:
    """Return ``df`` with every text cell's control characters shown as escapes (``shown``)
    and every text cell that a spreadsheet would run as a formula (``=``, ``+``, ``-``,
    ``@``, a tab or a carriage return first) prefixed with ``'``, so that names from a trace
    stay data; numbers stay numbers."""
    text = [c for c, t in df.schema.items() if t in (pl.String, pl.Categorical)]
    df = df.with_columns(shown(df[c].cast(pl.String)) for c in text)
    return df.with_columns(
        pl.when(pl.col(c).str.contains(FORMULA))
        .then(pl.lit("'") + pl.col(c))
        .otherwise(pl.col(c))
        .alias(c)
        for c in text
    )


def shown(column: pl.Series) -> pl.Series:
    """Return ``column`` (text) with each control character (``safe.CONTROL``: a carriage
    return too, which a terminal would act on) shown as its escape (``safe.visible``). A
    column is looked at once by polars; only one that holds a control character somewhere
    (rare: a hostile or broken trace) has its cells rewritten, in Python."""
    if not column.str.contains(CONTROL.pattern).any():
        return column
    return column.map_elements(visible, return_dtype=pl.String, skip_nulls=True)
