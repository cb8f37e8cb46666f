"""Peak memory and time of `traceana gaps` on one trace, beside reading the same file with
`json.load` and `orjson.loads` in the same run (the peers: what holding the parsed JSON costs).

    .venv/bin/python bench/peak.py /tmp/k5m.json [--traceana-root DIR] [--repeat 2]

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
    a = ap.parse_args()
    mb = a.trace.stat().st_size / 1e6
    print(f"{a.trace} ({mb:,.1f} MB)")
    print("| command | seconds | peak MiB | peak / file |")
    print("|---|---:|---:|---:|")
    rows = [(f"traceana gaps --no-cache ({a.traceana_root.name})", TRACEANA,
             ["gaps", str(a.trace), "--no-cache"], a.traceana_root)]
    rows += [(name, code, [str(a.trace)], None) for name, code in PEERS.items()]
    for name, code, args, root in rows:
        for _ in range(a.repeat):
            s, peak = measure(code, args, root)
            print(f"| {name} | {s:.2f} | {peak:,} | {peak * 1.048576 / mb:.2f}× |")


if __name__ == "__main__":
    main()
