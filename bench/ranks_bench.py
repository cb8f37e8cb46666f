"""`traceana ranks` (or `gaps`, `report`: --command) a rank at a time (--jobs 2, a Dask LocalCluster of
2 workers) beside the run read whole, on bench/gen_ranks.py runs of 8, 64 and 256 ranks.

    .venv/bin/python bench/ranks_bench.py /tmp/ranks-bench [--ranks 8 64 256] [--kernels 3600]
        [--command gaps [--option --min-gap=20us]] [--command report --option --no-images]

Per size, in this order, each command its own process (``--no-cache``, JSON or the page to a file): the
run read whole (the floor and peer: today's path; ``--whole-max`` ranks at most), ``--jobs
2``, then ``--scheduler`` on a LocalCluster of 2 worker processes started by this script
(its start-up not timed). The reducer's peak is the traceana process's own VmHWM, written as
it exits; a worker's peak is its VmHWM, read every 0.1 s while the command runs (a high-water
mark: the last reading is its peak but for the last 0.1 s, when it only writes its answer).
The three JSON outputs are compared. Results: docs/benchmarks.md, "Ranks, a rank at a time".
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXIT_STATUS = (
    "import atexit, os; atexit.register(lambda: open(os.environ['PEAK_FILE'], 'w')"
    ".write(open('/proc/self/status').read())); "
)
TRACEANA = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"


def hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            kids = []
        out += kids
        todo += kids
    return out


class Watch(threading.Thread):
    """The VmHWM of ``pids()``' processes, read every 0.1 s until stopped."""

    def __init__(self, pids) -> None:  # type: ignore[no-untyped-def]
        super().__init__(daemon=True)
        self.pids, self.peak, self.done = pids, {}, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            for p in self.pids():
                self.peak[p] = max(self.peak.get(p, 0), hwm_kb(p))


COMMAND = ["ranks"]  # --command, then --option's


def command(run: Path, out: Path, options: list[str], workers=None) -> tuple[float, int, int]:  # type: ignore[no-untyped-def]
    """Return (seconds, reducer peak MiB, largest worker peak MiB) of `traceana ranks`."""
    env = dict(os.environ, PEAK_FILE=str(out) + ".status")
    args = [sys.executable, "-c", EXIT_STATUS + TRACEANA, COMMAND[0], str(run), "--no-cache",
            *COMMAND[1:]]  # fmt: skip
    t = time.perf_counter()
    fmt = [] if COMMAND[0] == "report" else ["--format", "json"]  # a page, not JSON
    proc = subprocess.Popen([*args, *fmt, "-o", str(out), *options], env=env,
                            cwd=REPO)  # fmt: skip
    watch = Watch(workers or (lambda: descendants(proc.pid)))
    watch.start()
    if proc.wait() != 0:
        raise SystemExit(f"traceana {COMMAND[0]} {options} failed")
    seconds = time.perf_counter() - t
    watch.done.set()
    watch.join()
    reducer = next(
        int(x.split()[1]) for x in Path(env["PEAK_FILE"]).read_text().splitlines()
        if x.startswith("VmHWM:")
    )  # fmt: skip
    return seconds, reducer // 1024, max(watch.peak.values(), default=0) // 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--ranks", type=int, nargs="+", default=[8, 64, 256])
    ap.add_argument("--kernels", type=int, default=3600, help="per rank and step (~5 MB/rank)")
    ap.add_argument("--whole-max", type=int, default=256, help="the run read whole up to this")
    ap.add_argument("--command", default="ranks", choices=["ranks", "gaps", "report"])
    ap.add_argument("--option", nargs="*", default=[], help="given to every command (--min-gap=20us; report: --no-images)")
    a = ap.parse_args()
    COMMAND[:] = [a.command, *a.option]
    sys.path.insert(0, str(REPO))  # the cluster's scheduler and workers unpickle traceana's tasks
    os.environ["PYTHONPATH"] = str(REPO)
    import distributed

    print("| ranks | MB of traces | command | seconds | reducer peak MiB | reducer / traces | "
          "largest worker peak MiB | same JSON |")  # fmt: skip
    print("|---:|---:|---|---:|---:|---:|---:|---|")
    for n in a.ranks:
        run = a.folder / f"ranks-{n}"
        if not (run / "truth.json").exists():
            gen = [sys.executable, str(REPO / "bench/gen_ranks.py"), str(run)]
            subprocess.run([*gen, "--ranks", str(n), "--kernels", str(a.kernels)], check=True)
        mb = sum(f.stat().st_size for f in run.glob("rank-*")) / 1e6
        with tempfile.TemporaryDirectory() as tmp:
            outs = {}
            suffix = "html" if a.command == "report" else "json"
            rows = []
            if n <= a.whole_max:
                outs["whole"] = Path(tmp) / f"whole.{suffix}"
                rows.append(("read whole", command(run, outs["whole"], [])))
            outs["jobs"] = Path(tmp) / f"jobs.{suffix}"
            rows.append(("--jobs 2", command(run, outs["jobs"], ["--jobs", "2"])))
            local = {"host": "127.0.0.1", "dashboard_address": None}
            with distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, **local
            ) as cluster:
                pids = [w.process.pid for w in cluster.workers.values()]
                outs["dask"] = Path(tmp) / f"dask.{suffix}"
                address = ["--scheduler", cluster.scheduler_address]
                took = command(run, outs["dask"], address, lambda pids=pids: pids)
                rows.append(("--scheduler (LocalCluster, 2)", took))
            first = next(iter(outs.values()))
            same = all(filecmp.cmp(first, o, shallow=False) for o in outs.values())
            for name, (s, red, worker) in rows:
                share = red * 1.048576 / mb
                print(f"| {n} | {mb:,.0f} | {name} | {s:.1f} | {red:,} | {share:.1%} | "
                      f"{worker or '–'} | {'yes' if same else 'NO'} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
