"""What a report of a multi-rank run made a rank at a time keeps of each file's gaps
(docs/distributed.md, "report a rank at a time"): the page lists the 200 longest gaps and a
histogram of every device gap's duration, and its timeline reads the lanes it draws where the
files are (timeline_parts.py), so each file's part holds its longest gaps only (``Keep``,
``kept``), how many it had, and every device gap's duration counted (``durations_of`` adds
them up): its reducer never holds every gap of the run.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from trace_analyzer.questions.gaps.analysis import GapsResult


@dataclass(frozen=True)
class Keep:
    """The rows a report of the run lists, all it keeps of each file's gaps (``report
    --jobs``): the ``top`` longest lane gaps and device gaps (those its lists and timeline
    show; the timeline reads its lanes' other gaps where the files are)."""

    top: int


def kept(r: GapsResult, keep: Keep) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Of a file's gaps ``r``, what a report keeps (``Keep``), in table order: the longest
    lane gaps and device gaps; and every device gap's duration counted per duration and
    cause (``n``, ``idle``)."""
    from trace_analyzer.questions.report.grid import longest

    def top(frame: pl.DataFrame) -> pl.Series:
        rows = frame.select("duration_ns").with_row_index("row")
        return longest(rows, keep.top)["row"]

    gaps = r.gaps[top(r.gaps).sort()]
    device_gaps = r.device_gaps[top(r.device_gaps).sort()]
    durations = r.device_gaps.group_by("duration_ns", "cause").agg(
        n=pl.len(), idle=pl.col("idle_ns").sum()
    )
    return gaps, device_gaps, durations


COUNTED = {"duration_ns": pl.Int64, "cause": pl.String, "n": pl.UInt32, "idle": pl.Int64}


def durations_of(held: list[pl.DataFrame]) -> pl.DataFrame:
    """The files' device gaps' durations counted (``GapsPart.durations``), added up per
    duration and cause (``COUNTED``; none: an empty table)."""
    found = [d for d in held if d.height]
    if not found:
        return pl.DataFrame(schema=COUNTED)
    both = pl.concat(found, how="vertical_relaxed")
    return both.group_by("duration_ns", "cause").agg(pl.col("n").sum(), pl.col("idle").sum())
