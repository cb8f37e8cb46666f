"""Peak memory and time of `traceana gaps` on one trace, beside reading the same file with
`json.load` and `orjson.loads` in the same run (the peers: what holding the parsed JSON costs).

    .venv/bin/python bench/peak.py /tmp/k5m.json [--traceana-root DIR] [--repeat 2] [--export]

`--export` adds `traceana export --no-cache -o FILE` (FILE a temporary in the system's
temporary folder, removed after each run), each run of it right after one of `gaps`, and what
export does before its document, each in its own process: the run loaded with its args
(`load(args=LATER)` as export loads it, `args=True` in a checkout without it: gaps loads none), then its gaps and critical path
(export without the document: the floor of its peak). It prints the ratio of each export's
peak and time to the gaps run before it (docs/benchmarks.md, "Export: streaming the
document").

Each command is its own process; its peak is its own VmHWM, written by the process as it
exits (a child's rusage would count from this script's size at the fork). `--traceana-root`
runs another checkout of traceana (a `git worktree` of an older commit) for a before/after
row. Results: docs/benchmarks.md, "Peak memory".
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXIT_STATUS = (
    "import atexit, os; atexit.register(lambda: open(os.environ['PEAK_FILE'], 'w')"
    ".write(open('/proc/self/status').read())); "
)
PEERS = {
    "json.load": "import json, sys; json.load(open(sys.argv[1], 'rb'))",
    "orjson.loads": "import orjson, sys; orjson.loads(open(sys.argv[1], 'rb').read())",
}
TRACEANA = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"
# as export loads it: a Kineto trace's args read as they are written (LATER), where the
# checkout has it; an older checkout's export holds them (args=True)
LOAD_ARGS = (
    "import sys, trace_analyzer as ta\n"
    "try:\n    from trace_analyzer.model.schema import LATER as A\n"
    "except ImportError:\n    A = True\n"
    "p = ta.load(sys.argv[1], args=A)"
)
ANALYSED = (
    LOAD_ARGS + "\nfrom trace_analyzer.questions.gaps.analysis import gaps; g = gaps(p)"
    "; from trace_analyzer.questions.critical.analysis import critical; c = critical(p)"
)


def measure(code: str, args: list[str], root: Path | None = None) -> tuple[float, int]:
    """Return (seconds, peak MiB) of ``python -c code args`` with ``root`` first on the path."""
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = str(root)
    with tempfile.NamedTemporaryFile("r") as peak:
        env["PEAK_FILE"] = peak.name
        t = time.perf_counter()
        # run in the checkout: `python -c` puts the working directory first on the path
        subprocess.run([sys.executable, "-c", EXIT_STATUS + code, *args], env=env, check=True,
                       stdout=subprocess.DEVNULL, cwd=root or REPO)
        seconds = time.perf_counter() - t
        hwm = next(x for x in peak.read().splitlines() if x.startswith("VmHWM:"))
    return seconds, int(hwm.split()[1]) // 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--traceana-root", type=Path, default=REPO)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--export", action="store_true", help="measure `traceana export` too")
    a = ap.parse_args()
    mb = a.trace.stat().st_size / 1e6
    print(f"{a.trace} ({mb:,.1f} MB)")
    print("| command | seconds | peak MiB | peak / file |")
    print("|---|---:|---:|---:|")
    gaps = (f"traceana gaps --no-cache ({a.traceana_root.name})", TRACEANA,
            ["gaps", str(a.trace), "--no-cache"], a.traceana_root)
    if a.export:
        export_vs_gaps(a, gaps, mb)
    else:
        for _ in range(a.repeat):
            row(gaps, mb)
    for name, code in PEERS.items():
        for _ in range(a.repeat):
            row((name, code, [str(a.trace)], None), mb)


Row = tuple[str, str, list[str], "Path | None"]


def row(r: Row, mb: float) -> tuple[float, int]:
    """Measure one command and print its row; return its (seconds, peak MiB)."""
    name, code, args, root = r
    s, peak = measure(code, args, root)
    print(f"| {name} | {s:.2f} | {peak:,} | {peak * 1.048576 / mb:.2f}× |", flush=True)
    return s, peak


def export_vs_gaps(a: argparse.Namespace, gaps: Row, mb: float) -> None:
    """Each repeat: gaps, then export to a temporary; print export's peak and time over gaps's."""
    ratios = []
    for _ in range(a.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            out = str(Path(tmp) / "out.json")
            export = (f"traceana export --no-cache -o out.json ({a.traceana_root.name})", TRACEANA,
                      ["export", str(a.trace), "--no-cache", "-o", out], a.traceana_root)
            gs, gp = row(gaps, mb)
            es, ep = row(export, mb)
        root, args = a.traceana_root, [str(a.trace)]
        _, fp = row((f"load(args as export), gaps, critical ({root.name})", ANALYSED, args, root), mb)
        row((f"load(args as export) ({root.name})", LOAD_ARGS, args, root), mb)
        ratios.append(f"peak {ep / gp:.2f}× (without the document {fp / gp:.2f}×), "
                      f"time {es / gs:.2f}×")
    print("export / gaps: " + "; ".join(ratios), flush=True)


if __name__ == "__main__":
    main()
