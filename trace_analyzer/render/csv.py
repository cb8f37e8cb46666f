"""CSV: the main table of a result, one row per item, a ``run`` column when several runs."""

from __future__ import annotations

from typing import Any

import polars as pl

from trace_analyzer.analyses.results import RunResults
from trace_analyzer.analyses.rows import as_frame
from trace_analyzer.render.view import View


def render(result: RunResults[Any], *, options: View = View()) -> str:
    """Return each run's main table of ``result`` (its type's ``csv_table``) as CSV (times in ns,
    durations in µs as named); ``options`` change nothing here."""
    frames = []
    for run in result.runs:
        data = run.to_json()
        rows = data[run.csv_table]
        if rows:
            frames.append(as_frame(rows).with_columns(run=pl.lit(data["root"])))
    if not frames:
        return ""
    df = pl.concat(frames, how="diagonal_relaxed")
    if len(result.runs) == 1:
        df = df.drop("run")
    lists = [c for c, t in df.schema.items() if isinstance(t, pl.List)]
    df = df.with_columns(pl.col(c).cast(pl.List(pl.String)).list.join(";") for c in lists)
    return inert(df).write_csv()


# What a spreadsheet reads as the start of a formula (OWASP's list for CSV injection).
FORMULA = r"^[=+\-@\t\r]"


def inert(df: pl.DataFrame) -> pl.DataFrame:
    """Return ``df`` with every text cell that a spreadsheet would run as a formula (``=``,
    ``+``, ``-``, ``@``, a tab or a carriage return first) prefixed with ``'``, so that names
    from a trace stay data; numbers stay numbers."""
    text = [c for c, t in df.schema.items() if t in (pl.String, pl.Categorical)]
    return df.with_columns(
        pl.when(pl.col(c).cast(pl.String).str.contains(FORMULA))
        .then(pl.lit("'") + pl.col(c).cast(pl.String))
        .otherwise(pl.col(c).cast(pl.String))
        .alias(c)
        for c in text
    )
