"""CSV: the main table of a result, one row per item, a ``run`` column when several runs."""

from __future__ import annotations

import polars as pl

from trace_analyzer.analyses.rows import as_frame

# The table each result kind puts in its CSV form.
MAIN_TABLE = {
    "info": "lanes",
    "ops": "rows",
    "chain": "rows",
    "gaps": "gaps",
    "diff": "metrics",
    "trend": "rows",
}


def render(kind: str, data: dict) -> str:
    """Return the result's main table as CSV (times in ns, durations in µs as named)."""
    frames = []
    for run in data["runs"]:
        rows = run[MAIN_TABLE[kind]]
        if rows:
            frames.append(as_frame(rows).with_columns(run=pl.lit(run["root"])))
    if not frames:
        return ""
    df = pl.concat(frames, how="diagonal_relaxed")
    if len(data["runs"]) == 1:
        df = df.drop("run")
    lists = [c for c, t in df.schema.items() if isinstance(t, pl.List)]
    df = df.with_columns(pl.col(c).cast(pl.List(pl.String)).list.join(";") for c in lists)
    return df.write_csv()
