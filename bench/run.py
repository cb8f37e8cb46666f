"""Wall time and peak RSS of `traceana gaps` on large Kineto traces.

    .venv/bin/python bench/run.py /tmp/trace-10mb.json /tmp/trace-100mb.json
    .venv/bin/python bench/run.py --gen 10 100                # generate into a temp folder first

Each input is analysed twice, one after the other (cold: the first run, with the file just
written and so in the page cache; warm: the second), by
`traceana gaps FILE --format json -o TMP.json`. Each run happens in a fresh Python wrapper
process that starts traceana and reads `resource.getrusage(RUSAGE_CHILDREN)`, so the peak RSS
is traceana's own (ru_maxrss) and the wall time covers its start-up, the load, the linking,
the gaps and the JSON write. Events are the trace's records (`"ph":` keys). Results:
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

# Runs traceana once and prints {"wall_s", "maxrss_kb", "rc", "stderr"} as JSON.
WRAPPER = r"""
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "maxrss_kb": ru.ru_maxrss, "rc": p.returncode,
                  "stderr": p.stderr[-2000:]}))
"""


def count_events(path: Path) -> int:
    """Records in the trace: occurrences of the `"ph":` key, read in chunks."""
    opener = gzip.open if path.suffix == ".gz" else open
    n, tail = 0, b""
    with opener(path, "rb") as f:
        while chunk := f.read(1 << 24):
            buf = tail + chunk
            n += buf.count(b'"ph":')
            tail = buf[-4:]
    return n


def run_once(exe: Path, trace: Path, out: Path, timeout: float) -> dict:
    cmd = [sys.executable, "-c", WRAPPER, str(exe), "gaps", str(trace),
           "--format", "json", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        sys.exit(f"wrapper failed on {trace}: {proc.stderr}")
    res = json.loads(proc.stdout)
    if res["rc"] != 0:
        sys.exit(f"traceana gaps {trace}: exit {res['rc']}: {res['stderr']}")
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", type=Path, help="Kineto traces (.json, .json.gz)")
    ap.add_argument("--gen", type=float, nargs="+", default=[], metavar="MB",
                    help="also generate traces of these sizes with bench/gen_kineto.py")
    ap.add_argument("--gzip", action="store_true", help="gzip the generated traces")
    ap.add_argument("--runs", type=int, default=2, help="runs per trace (first is 'cold')")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run")
    args = ap.parse_args()
    exe = Path(sys.executable).with_name("traceana")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with tempfile.TemporaryDirectory() as tmp:
        traces = list(args.traces)
        if args.gen:
            sys.path.insert(0, str(Path(__file__).parent))
            import gen_kineto
            for mb in args.gen:
                p = Path(tmp) / f"trace-{mb:g}mb.json{'.gz' if args.gzip else ''}"
                gen_kineto.write(p, mb, gz=args.gzip)
                traces.append(p)
        if not traces:
            ap.error("give TRACE files or --gen MB")
        print(f"{platform.python_implementation()} {platform.python_version()}, "
              f"polars {pl.__version__}, {cores} cores ({platform.machine()})")
        print("| trace | file MB | events | run | seconds | MB/s | events/s | peak RSS MB "
              "| RSS / file |")
        print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
        out = Path(tmp) / "gaps.json"
        for trace in traces:
            mb = trace.stat().st_size / 1e6
            events = count_events(trace)
            for i in range(args.runs):
                res = run_once(exe, trace, out, args.timeout)
                rss_mb = res["maxrss_kb"] * 1024 / 1e6  # Linux reports ru_maxrss in KiB
                label = "cold" if i == 0 else "warm" if args.runs == 2 else f"warm {i}"
                print(f"| {trace.name} | {mb:.1f} | {events:,} | {label} | {res['wall_s']:.1f} "
                      f"| {mb / res['wall_s']:.2f} | {events / res['wall_s']:,.0f} "
                      f"| {rss_mb:,.0f} | {rss_mb / mb:.1f}× |", flush=True)


if __name__ == "__main__":
    main()
