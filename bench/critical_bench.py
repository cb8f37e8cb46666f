"""The cost of `traceana critical` against `traceana gaps` on the same input (issue 36: the
critical path and the replay together should cost at most what gaps does).

Per input, in one process: the run loaded once, then the best of five of ``ta.gaps(p)`` and
of ``ta.critical(p)``, the two taking turns, (the graph, the replay as recorded, every window's path, and each
what-if replayed), and of the graph and one replay alone; then each command's wall time and
peak memory as a user runs it (``--no-cache``, a fresh process, output to /dev/null), the
fastest of five runs, the two commands taking turns.

    .venv/bin/python bench/critical_bench.py [PATH ...]

Default inputs: ``/tmp/scale/kineto-100.json`` (bench/gen_kineto.py 100) and
``/tmp/scale/neuron-1000000`` (bench/gen_parquet.py 1000000 --cores 8 --lnc 1).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import trace_analyzer as ta
from trace_analyzer.questions.critical.graph import build
from trace_analyzer.questions.critical.replay import replay

DEFAULT = [Path("/tmp/scale/kineto-100.json"), Path("/tmp/scale/neuron-1000000")]
TRACEANA = str(Path(sys.executable).parent / "traceana")


# Each command is run this many times, the two taking turns (the machine's noise is some 5 %
# from one run to the next), and the fastest run of each kept.
RUNS = 5


def best(f, n: int = 5) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def command(name: str, path: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (MB) of ``traceana NAME PATH --no-cache``."""
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", TRACEANA, name, str(path), "--no-cache"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall, kb = out.stderr.strip().splitlines()[-1].split()
    return float(wall), int(kb) // 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    paths = [p for p in (ap.parse_args().paths or DEFAULT) if p.exists()]
    print("| input | events | nodes | gaps s | critical s | ratio | graph s | one replay s |"
          " gaps command s (MB) | critical command s (MB) | ratio |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for path in paths:
        p = ta.load(path, cache=False)
        g = build(p)
        pairs = [(best(lambda: ta.gaps(p), 1), best(lambda: ta.critical(p), 1)) for _ in range(5)]
        gaps_s, crit_s = min(a for a, _ in pairs), min(b for _, b in pairs)
        graph_s, replay_s = best(lambda: build(p)), best(lambda: replay(g))
        runs = [(command("gaps", path), command("critical", path)) for _ in range(RUNS)]
        (gw, gm), (cw, cm) = min(r[0] for r in runs), min(r[1] for r in runs)
        print(f"| {path.name} | {p.events.height:,} | {g.n:,} | {gaps_s:.2f} | {crit_s:.2f} | "
              f"{crit_s / gaps_s:.2f} | {graph_s:.2f} | {replay_s:.2f} | {gw:.2f} ({gm:,}) | "
              f"{cw:.2f} ({cm:,}) | {cw / gw:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
