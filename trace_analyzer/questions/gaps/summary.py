"""The totals of a run's gaps over its devices (``GapsResult.summary``): what ``--fail-on``,
diff and the verdict read, made from the devices' rows and the device gaps alone, so that a
run read whole and a run reduced from its ranks' parts (``per_rank.py``) sum alike.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from trace_analyzer.analyses.rows import counted_quantile
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.questions.gaps.tally import Tally

TOTALS = (
    "busy_ns", "idle_ns", "leading_ns", "trailing_ns", "window_ns", "active_ns", "executions",
    "gap_count", "exposed_communication_ns", "memory_ns",
)  # fmt: skip


def run_summary(
    devices: pl.DataFrame,
    device_gaps: pl.DataFrame,
    every: Tally,
    counted: tuple[int, int],
    durations: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """Return the totals over devices: what --fail-on and the verdict read (``every`` device
    gap, tallied: the idle per cause and in the DataLoader); ``counted``: the lanes, and the
    launch-latency threshold the causes used. ``durations``: every device gap's duration as
    its distinct values and how often each came (``duration_ns``, ``n``), where
    ``device_gaps`` holds only some of them (a report a rank at a time)."""
    n_lanes, latency_ns = counted
    # Python's integers: the devices' windows, each up to int64, may add up past it.
    total = {c: exact_sum(devices[c]) for c in TOTALS}
    if durations is None:
        d = device_gaps.get_column("duration_ns", default=pl.Series("duration_ns", [], pl.Int64))
        durations = d.to_frame().group_by("duration_ns").agg(n=pl.len())
    c = durations.sort("duration_ns")

    def q(p: float) -> int | None:
        value = c.select(counted_quantile(p)).item() if c.height else None
        return None if value is None else int(round(float(value)))

    # one pass over the gaps, in 128 bits: exact, as Python's integers are (Int64 wraps)
    sums = every.sums.group_by("cause").agg(pl.col("idle_ns").cast(pl.Int128).sum())
    found: dict[str, int] = dict(sums.iter_rows()) if every.gaps else {}
    by_cause = {c: found.get(c, 0) for c in CAUSES}
    window, active = total["window_ns"], total["active_ns"]
    unsaid = not every.gaps or bool(every.sums["loader_nulls"].sum())
    return {
        **total,
        "idle_pct": round(100 * total["idle_ns"] / window, 2) if window else None,
        "active_idle_pct": round(100 * total["idle_ns"] / active, 2) if active else None,
        "exposed_communication_pct": pct(total["exposed_communication_ns"], window),
        "memory_pct": pct(total["memory_ns"], window),
        "gap_p50_ns": q(0.5),
        "gap_p90_ns": q(0.9),
        "gap_p99_ns": q(0.99),
        "gap_max_ns": int(c["duration_ns"][-1]) if c.height else None,
        "idle_by_cause_ns": by_cause,
        # the idle inside a DataLoader's __next__ (null: the run records none)
        "idle_in_data_loader_ns": None if unsaid else exact_sum(every.sums["loader_ns"]),
        "devices": devices.height,
        "lanes": n_lanes,
        "latency_ns": latency_ns,
    }


def pct(part: int, whole: int) -> float | None:
    """Return ``part`` as a % of ``whole``, to 0.01 (None where ``whole`` is 0)."""
    return round(100 * part / whole, 2) if whole else None


def exact_sum(values: pl.Series) -> int:
    """Return the exact sum of a column of ns (polars' Int64 sum wraps past 2**63)."""
    return sum(v for v in values.to_list() if v is not None)


# the summary's figures that a run without hardware lanes has none of
NO_WINDOW = ("idle_pct", "active_idle_pct", "exposed_communication_pct", "memory_pct",
             "gap_p50_ns", "gap_p90_ns", "gap_p99_ns", "gap_max_ns")  # fmt: skip
