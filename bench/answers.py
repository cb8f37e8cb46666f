"""Time a command's second run answered from the cache (docs/cache.md, "Answers"), beside its
first run and a second run with the stored answer removed (the cached tables read back).

    .venv/bin/python bench/answers.py /tmp/c100 [--format table] [--rounds 3]

PATH must be a folder (the cache goes in it). Each round deletes PATH/.traceana-cache first.
Output goes to /dev/null, as a user's pipe would take it; each run is the console script in
a process of its own, timed from outside. Results: docs/benchmarks.md, "Answers".
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACEANA = REPO / ".venv" / "bin" / "traceana"


def timed(args: list[str]) -> float:
    start = time.monotonic()
    subprocess.run([str(TRACEANA), *args], stdout=subprocess.DEVNULL, check=True)
    return time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--command", default="gaps")
    ap.add_argument("--format", default="table")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    cache = a.path / ".traceana-cache"
    args = [a.command, str(a.path), "--format", a.format]
    print(f"| {a.command} {a.path} --format {a.format} | first | answered | tables only |")
    print("|---|---:|---:|---:|")
    for i in range(a.rounds):
        shutil.rmtree(cache, ignore_errors=True)
        first, answered = timed(args), timed(args)
        for answer in cache.glob("answer-*"):
            answer.unlink()
        tables = timed(args)
        print(f"| round {i + 1} | {first:.2f} s | {answered:.2f} s | {tables:.2f} s |")


if __name__ == "__main__":
    main()
