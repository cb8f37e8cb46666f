"""The floor for `traceana gaps` on a Neuron Explorer export: per-lane device gaps in plain polars.

    .venv/bin/python bench/floor.py /tmp/scale/neuron-10000000 [--runs 3]

Reads only the columns a device gap needs from every ``SystemProfileEvents*.parquet`` of the
export, keeps the executions (``neuron_hw`` rows named ``nc_exec_running``), and per lane
(instance, process, logical core) takes each execution's start against the latest end before
it: the idle gaps, their count and their total. No causes, no links, no host side: what any
reader of the format pays at least. Prints the wall seconds of each run and the peak RSS of
this process (docs/benchmarks.md compares traceana against it, as a ratio, in the same run).
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import polars as pl


def floor(export: Path) -> tuple[int, int]:
    """Return the count and total ns of the device gaps of every lane of ``export``."""
    files = sorted(export.rglob("SystemProfileEvents*.parquet"))
    lane = ["instance_id", "process_id", "nc_idx"]
    hw = (
        pl.scan_parquet(files)
        .select(*lane, "name", "trace_event_source", "start_ts", "end_ts")
        .filter((pl.col("trace_event_source") == "neuron_hw") & (pl.col("name") == "nc_exec_running"))
        .sort(*lane, "start_ts")
        .with_columns(prev=pl.col("end_ts").cum_max().shift(1).over(lane))
        .filter(pl.col("start_ts") > pl.col("prev"))
        .select(n=pl.len(), idle=(pl.col("start_ts") - pl.col("prev")).sum())
        .collect()
    )
    return int(hw["n"][0]), int(hw["idle"][0] or 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("export", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    for _ in range(args.runs):
        t = time.perf_counter()
        n, idle = floor(args.export)
        wall = time.perf_counter() - t
        print(f"floor {args.export.name}: {n} gaps, {idle} ns idle, {wall:.3f} s")
    print(f"peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
