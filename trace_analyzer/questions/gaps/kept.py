"""What a report of a multi-rank run made a rank at a time keeps of each file's gaps
(docs/distributed.md, "report a rank at a time"): the page lists the 200 longest gaps, draws
at most 64 lanes and a histogram of every device gap's duration, so each file's part holds
the gaps of the lanes drawn and its longest only (``Keep``, ``kept``), how many it had, and
every device gap's duration counted (``durations_of`` adds them up): its reducer grows with
the lanes drawn, not with every gap of the run.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from trace_analyzer.questions.gaps.analysis import GapsResult


@dataclass(frozen=True)
class Keep:
    """The rows a report of the run draws, all it keeps of each file's gaps (``report
    --jobs``): every gap of the lanes it draws (``lanes``) and the ``top`` longest lane gaps
    and device gaps (those its lists and timeline show)."""

    lanes: frozenset[str]
    top: int


def drawn(hardware: set[str], top: int) -> Keep:
    """What a report keeps of a run's gaps (``Keep``): the lanes its timeline draws (the
    first ``timeline.MAX_LANES`` of the run's ``hardware`` lanes, in natural order) and the
    ``top`` longest gaps."""
    from trace_analyzer.questions.report.timeline import MAX_LANES, _natural

    names = sorted(hardware, key=_natural)
    return Keep(frozenset(names[:MAX_LANES]), top)


def kept(r: GapsResult, keep: Keep) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Of a file's gaps ``r``, what a report keeps (``Keep``), in table order: the lane gaps
    of the lanes drawn and the longest, the longest device gaps; and every device gap's
    duration counted per duration and cause (``n``, ``idle``)."""
    from trace_analyzer.questions.report.grid import longest

    def top(frame: pl.DataFrame) -> pl.Series:
        rows = frame.select("duration_ns").with_row_index("row")
        return longest(rows, keep.top)["row"]

    lanes = pl.col("lane").cast(pl.String).is_in(list(keep.lanes))
    on = pl.int_range(pl.len(), dtype=pl.UInt32).is_in(top(r.gaps).implode())
    gaps = r.gaps.filter(lanes | on)
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
