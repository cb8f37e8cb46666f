"""How `traceana gaps` grows with the trace: CPU time per event across sizes (issue 19).

    .venv/bin/python bench/scaling.py --neuron 1000000 3000000 10000000 --kineto 30 100 300 1000

Generates what is missing under --dir (/tmp by default: ``neuron-<N>`` with bench/gen_parquet.py
``--cores 8 --lnc 1``, ``kineto-<MB>.json`` with bench/gen_kineto.py), then runs
``traceana gaps PATH --no-cache`` (table output, to /dev/null) --runs times per input, each in a
fresh process started from the system's temporary folder (so that the working directory's
checkout is not imported instead of the installed one). For every run it records the wall time,
the child's CPU time (user + system, all threads, from ``os.wait4``) and its peak RSS, and, for
the Kineto traces, the same for ``json.load`` of the file in a fresh process (the floor any
reader that builds Python objects pays).

Start-up (the interpreter, polars, traceana's CLI and the format's reader) is the same for every
size, so the CPU time per event is given both whole and with the start-up taken off: the CPU
time of the same command on the smallest input of the format, measured in the same run (the
median of 3): for Neuron the bundled fixture (fixtures/rmsnorm_naive, 170 events), for Kineto a
0.1 MB trace of gen_kineto.py (about 330 records; the fixture is no Kineto run, and imports
another reader). The last column is each size's CPU per event over the smallest such figure
of its format: cost that grows at most n log n keeps it near 1 (issue 19 asks for within
1.3×). Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = Path(sys.executable)
TRACEANA = PY.parent / "traceana"


def measure(cmd: list[str]) -> tuple[float, float, float, float]:
    """Return the wall seconds, CPU seconds, peak RSS (MB) and system (kernel) CPU seconds
    of one command."""
    t = time.perf_counter()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, cwd=tempfile.gettempdir())
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed: {err.strip()[-400:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, ru.ru_stime


def events(path: Path) -> int:
    """Return the events of a run: an export's rows, or a Kineto trace's records."""
    if path.is_dir():
        import polars as pl

        return sum(pl.scan_parquet(p).select(pl.len()).collect().item()
                   for p in path.rglob("SystemProfileEvents*.parquet"))
    with open(path, "rb") as f:
        return sum(block.count(b'"ph":') for block in iter(lambda: f.read(1 << 24), b""))


def inputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    out = []
    for n in args.neuron:
        p = args.dir / f"neuron-{n}"
        if not p.exists():
            subprocess.run([PY, REPO / "bench/gen_parquet.py", str(n), p, "--cores", "8",
                            "--lnc", "1"], check=True, stdout=subprocess.DEVNULL)
        out.append(("neuron", p))
    for mb in args.kineto:
        p = args.dir / f"kineto-{mb}.json"
        if not p.exists():
            subprocess.run([PY, REPO / "bench/gen_kineto.py", str(mb), p], check=True,
                           stdout=subprocess.DEVNULL)
        out.append(("kineto", p))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--neuron", type=int, nargs="*", default=[], metavar="EVENTS")
    ap.add_argument("--kineto", type=int, nargs="*", default=[], metavar="MB")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    tiny = args.dir / "kineto-0.1.json"
    if not tiny.exists():
        subprocess.run([PY, REPO / "bench/gen_kineto.py", "0.1", tiny], check=True,
                       stdout=subprocess.DEVNULL)
    start = {}
    for fmt, path in (("neuron", REPO / "fixtures/rmsnorm_naive"), ("kineto", tiny)):
        base = [measure([str(TRACEANA), "gaps", str(path), "--no-cache"]) for _ in range(3)]
        start[fmt] = statistics.median(r[1] for r in base)
        print(f"start-up, {fmt}: {start[fmt]:.2f} s CPU (median of 3, {path.name})")
    print()
    print("| format | input | MB | events | wall s | CPU s | of which system | peak MB | "
          "CPU µs/event | less start-up | × smallest | json.load wall s / peak MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    rows = []
    for fmt, path in inputs(args):
        n = events(path)
        runs = [measure([str(TRACEANA), "gaps", str(path), "--no-cache"]) for _ in range(args.runs)]
        wall, cpu, peak, system = (min(r[i] for r in runs) for i in range(4))
        peer = ""
        if fmt == "kineto":
            w, _, m, _ = measure([str(PY), "-c", f"import json; json.load(open({str(path)!r}))"])
            peer = f"{w:.2f} / {m:,.0f}"
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() \
            else path.stat().st_size
        rows.append((fmt, path, size / 1e6, n, wall, cpu, system, peak,
                     (cpu - start[fmt]) / n * 1e6, peer))
    least = {}
    for r in rows:
        least[r[0]] = min(least.get(r[0], r[8]), r[8])
    for fmt, path, mb, n, wall, cpu, system, peak, per, peer in rows:
        print(f"| {fmt} | {path.name} | {mb:,.1f} | {n:,} | {wall:.2f} | {cpu:.2f} | "
              f"{system:.2f} | {peak:,.0f} | {cpu / n * 1e6:.2f} | {per:.2f} | "
              f"{per / least[fmt]:.2f} | {peer} |")


if __name__ == "__main__":
    main()
