"""Runs per second of `traceana batch` on many small runs, at several --jobs.

    .venv/bin/python bench/batch_bench.py                    # 1,000 runs, --jobs 1 and 2
    .venv/bin/python bench/batch_bench.py --runs 200 --jobs 1 2 4

Each run is a folder with one small Kineto trace (a host thread launching 20 kernels onto one
GPU stream, ac2g flows, two ProfilerSteps), generated in a temporary folder. Each --jobs value
batches the same folder into a fresh table, timed end to end (discovery, analysis, the
Parquet write) through the `traceana` command in a subprocess. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl


def small_trace(i: int, kernels: int = 20) -> dict:
    """Return a Kineto trace: ``kernels`` launches and kernels, gaps varying with ``i``."""
    events, t = [], 1000.0
    for step in range(2):
        start = t
        for k in range(kernels // 2):
            corr = step * 1000 + k
            events.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{k % 3}", "pid": 1,
                           "tid": 1, "ts": t, "dur": 8})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 1, "tid": 1, "ts": t + 1, "dur": 4,
                           "args": {"correlation": corr}})
            events.append({"ph": "s", "cat": "ac2g", "id": corr, "pid": 1, "tid": 1,
                           "ts": t + 1, "name": "ac2g"})
            kt = t + 6 + (i % 7)
            events.append({"ph": "X", "cat": "kernel", "name": f"kernel{k % 3}", "pid": 0,
                           "tid": 7, "ts": kt, "dur": 5 + (k + i) % 11,
                           "args": {"correlation": corr, "device": 0, "stream": 7}})
            events.append({"ph": "f", "bp": "e", "cat": "ac2g", "id": corr, "pid": 0, "tid": 7,
                           "ts": kt, "name": "ac2g"})
            t += 20 + (i * k) % 13
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}",
                       "pid": 1, "tid": 1, "ts": start - 1, "dur": t - start + 30})
        t += 40
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "bench GPU"}],
            "traceEvents": events}


def make_runs(folder: Path, n: int) -> None:
    for i in range(n):
        run = folder / f"run{i:05d}"
        run.mkdir(parents=True)
        (run / "trace.json").write_text(json.dumps(small_trace(i)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    exe = Path(sys.executable).with_name("traceana")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        make_runs(root, args.runs)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        print(f"{args.runs} runs; {platform.python_implementation()} {platform.python_version()}, "
              f"polars {pl.__version__}, {cores} cores ({platform.machine()})")
        print("| --jobs | runs | failed | seconds | runs/s |")
        print("|---:|---:|---:|---:|---:|")
        for jobs in args.jobs:
            out = Path(tmp) / f"runs-j{jobs}.parquet"
            t0 = time.perf_counter()
            proc = subprocess.run([str(exe), "batch", str(root), "-o", str(out), "--jobs", str(jobs)],
                                  capture_output=True, text=True)
            dt = time.perf_counter() - t0
            if proc.returncode != 0:
                sys.exit(f"--jobs {jobs}: exit {proc.returncode}: {proc.stderr}")
            df = pl.read_parquet(out)
            failed = df.filter(pl.col("error").is_not_null())["run_id"].n_unique()
            print(f"| {jobs} | {df['run_id'].n_unique()} | {failed} | {dt:.1f} | "
                  f"{args.runs / dt:.1f} |")


if __name__ == "__main__":
    main()
