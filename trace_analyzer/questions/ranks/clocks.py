"""The ranks' clocks compared (docs/distributed.md, "Clocks"): each rank's offset after the
first rank's, on the ends of the collectives they share (matched across ranks: matching.py),
else on their steps' starts."""

from __future__ import annotations

from typing import Any

import polars as pl


def clock_offsets(
    done: pl.DataFrame,
    recs: pl.DataFrame,
    windows: pl.DataFrame,
    who: pl.DataFrame,
    notes: list[str],
) -> pl.DataFrame:
    """Return per pid with work (``done``): rank, host, ``offset_ns`` (its clock after the first
    rank's, on the collectives ``recs``: ``matching.keyed``), ``offset_from`` (``collectives``,
    ``steps`` or null) and ``applied``."""
    pids = who.join(done.select("pid").unique(), on="pid", how="semi").sort(
        "rank", "pid", nulls_last=True
    )
    if pids.is_empty():
        return pids.with_columns(
            offset_ns=pl.lit(None, pl.Int64),
            offset_from=pl.lit(None, pl.String),
            applied=pl.lit(None, pl.Boolean),
        )
    ref = pids["pid"][0]
    by_collective, by_step = _on_collectives(recs, ref), _on_steps(windows, ref)
    hosts = pids["host"].drop_nulls().n_unique()
    out = (
        pids.join(by_collective, on="pid", how="left")
        .join(by_step, on="pid", how="left")
        .with_columns(
            offset_from=pl.when(pl.col("offset_ns").is_not_null())
            .then(pl.lit("collectives"))
            .when(pl.col("step_offset_ns").is_not_null())
            .then(pl.lit("steps")),
            offset_ns=pl.coalesce("offset_ns", "step_offset_ns"),
        )
        .with_columns(
            applied=(pl.col("offset_from") == "collectives")
            | ((pl.col("offset_from") == "steps") & pl.lit(hosts > 1))
        )
        .drop("step_offset_ns")
    )
    unmatched = out.filter(pl.col("offset_from").is_null())
    if pids.height > 1 and unmatched.height:
        shown = ", ".join(_rank_name(r) for r in unmatched.iter_rows(named=True))
        notes.append(
            f"{shown}: no collective and no ProfilerStep in common with the first rank; "
            "not compared with the others"
        )
    return out


def _on_collectives(recs: pl.DataFrame, ref: int) -> pl.DataFrame:
    """Return per pid the median of its collectives' ends less the first rank's (``ref``),
    over the collectives the two share, matched across ranks (``key``: matching.py)."""
    theirs = recs.join(
        recs.filter(pl.col("pid") == ref).select("key", ref_end="end_ns"), on="key", how="inner"
    )
    return theirs.group_by("pid").agg(
        offset_ns=(pl.col("end_ns") - pl.col("ref_end")).median().round(0).cast(pl.Int64)
    )


def _on_steps(windows: pl.DataFrame, ref: int) -> pl.DataFrame:
    """Return per pid the median of its steps' starts less the first rank's (``ref``) for the
    steps both have (``step_offset_ns``)."""
    starts = (
        windows.filter(pl.col("step").is_not_null())
        .group_by("pid", "step")
        .agg(s=pl.col("start_ns").min())
    )
    return (
        starts.join(
            starts.filter(pl.col("pid") == ref).select("step", ref_s="s"), on="step", how="inner"
        )
        .group_by("pid")
        .agg(step_offset_ns=(pl.col("s") - pl.col("ref_s")).median().round(0).cast(pl.Int64))
    )


def _rank_name(row: dict[str, Any]) -> str:
    return f"rank {row['rank']}" if row["rank"] is not None else f"pid {row['pid']}"
