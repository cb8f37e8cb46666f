"""Where `traceana gaps PATH --no-cache` spends its time, stage by stage, in one process.

    .venv/bin/python bench/stages.py /tmp/scale/neuron-10000000 [/tmp/scale/kineto-100.json ...]

Each input runs in a fresh process (this script started again with ``--one``), from the
system's temporary folder, the command's output to /dev/null. Each stage is the library
function the command calls, wrapped: its wall time and the CPU time of every thread of the
process (user and system, from ``getrusage``) while it ran, and the minor page faults. Stages
that run beside others (the read's key lift, the labels beside the sort, the chains beside
the busy pass) are inside the stage that waits for them, so the CPU of a stage is that of
everything the process did meanwhile. ``process`` is the command from its first line to its
last (imports before it not counted: ``import`` gives those). Results: docs/benchmarks.md.
"""

from __future__ import annotations

import importlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

# (module, function, label): the stages of a gaps run, in the order they start
STAGES = [
    ("trace_analyzer.readers.registry", "read_source", "read (every reader; the lanes below)"),
    ("trace_analyzer.readers.explorer_parquet", "lanes_in_order", "  Explorer lanes, steps, sort"),
    ("trace_analyzer.loading.profile", "numbered", "sort by start (numbered)"),
    ("trace_analyzer.loading.profile", "link", "link"),
    ("trace_analyzer.questions.gaps.analysis", "_gaps", "gaps (all of it; parts below)"),
    ("trace_analyzer.questions.gaps.analysis", "_attributed", "  attribution"),
    ("trace_analyzer.questions.gaps.analysis", "by_step", "  per step"),
    ("trace_analyzer.cli.common", "emit", "render and write"),
]


def _one(path: str) -> None:
    rows: list[tuple[str, float, float, float, int]] = []

    def wrap(modname: str, name: str, label: str) -> None:
        mod = importlib.import_module(modname)
        f: Callable[..., Any] = getattr(mod, name)

        def timed(*a: Any, **k: Any) -> Any:
            r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                r1 = resource.getrusage(resource.RUSAGE_SELF)
                rows.append((label, time.perf_counter() - t0, r1.ru_utime - r0.ru_utime,
                             r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt))

        setattr(mod, name, timed)

    from trace_analyzer.cli import main

    for modname, name, label in STAGES:
        wrap(modname, name, label)
    # the command module took emit by name when it was imported: wrap its own reference
    wrap("trace_analyzer.questions.gaps.command", "emit", "render and write")
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    sys.argv = ["traceana", "gaps", path, "--no-cache"]
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the process ends here)
    try:
        main()
    except SystemExit:
        pass
    sys.stdout = sys.__stdout__
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    total = ("process", time.perf_counter() - t0, r1.ru_utime - r0.ru_utime,
             r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt)
    print(f"\n**{path}**\n")
    print("| stage | wall s | user s | system s | page faults |")
    print("|---|---:|---:|---:|---:|")
    seen: dict[str, list[float]] = {label: [] for _, _, label in STAGES}  # in their order
    for label, w, u, s, f in rows:  # a stage called more than once: summed
        acc = seen[label] = seen[label] or [0.0, 0.0, 0.0, 0.0]
        for i, v in enumerate((w, u, s, f)):
            acc[i] += v
    for label, (w, u, s, f) in [*((k, v) for k, v in seen.items() if v), (total[0], total[1:])]:
        print(f"| {label} | {w:.2f} | {u:.2f} | {s:.2f} | {f / 1e6:.2f} M |")


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        _one(sys.argv[2])
        return
    for path in sys.argv[1:]:
        subprocess.run([sys.executable, os.path.abspath(__file__), "--one", os.path.abspath(path)],
                       cwd=tempfile.gettempdir(), check=True)


if __name__ == "__main__":
    main()
