"""Wall time, CPU time, peak RSS and output size of `traceana report` on a large Kineto trace.

    .venv/bin/python bench/report_bench.py                    # /tmp/k150.json (made if absent)
    .venv/bin/python bench/report_bench.py --runs 3 /tmp/k150.json /tmp/k100.json
    .venv/bin/python bench/report_bench.py --base             # also: the trace against itself

Each trace is reported --runs times (2 by default) in a fresh `traceana` process each:
`traceana report TRACE -o TMP/report.html --no-cache`, then the same with `-o TMP/report.md`
(the Markdown report and its PNG plots), and with --base `traceana report TRACE --base TRACE`
(two runs loaded, the diff, two timelines). The wall time covers start-up, the load, the
analyses, the plots and the write; the peak RSS and CPU time are the child's own
(`os.wait4`); the size is the page's (or the .md's and its PNGs', together). A missing
/tmp/k150.json is first written by `bench/gen_kineto.py 150` (a few seconds). Results:
docs/benchmarks.md, "traceana report on 150 MB".
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = Path("/tmp/k150.json")


def run(cmd: list[str]) -> dict[str, float]:
    """Run ``cmd`` once; return its wall s, CPU s (user + sys) and peak RSS (MB)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err}")
    # Linux reports ru_maxrss in KiB
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss * 1024 / 1e6}


def cases(trace: Path, out: Path, base: bool) -> list[tuple[str, list[str], list[Path]]]:
    """The commands timed for ``trace``: (label, arguments after `traceana`, files written)."""
    page, md = out / "report.html", out / "report.md"
    shown = [
        ("html", ["report", str(trace), "-o", str(page), "--no-cache"], [page]),
        ("markdown + PNGs", ["report", str(trace), "-o", str(md), "--no-cache"], [md]),
    ]
    if base:
        args = ["report", str(trace), "--base", str(trace), "-o", str(page), "--no-cache"]
        shown.append(("html, --base itself", args, [page]))
    return shown


def written_mb(files: list[Path]) -> float:
    """Return the size of ``files`` and of the plots beside a .md (``<stem>.*.png``), MB."""
    every = set(files)
    for f in files:
        if f.suffix == ".md":
            every |= set(f.parent.glob(f"{f.stem}.*.png"))
    return sum(f.stat().st_size for f in every) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="*", type=Path, default=[DEFAULT])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--base", action="store_true", help="also time the trace against itself")
    a = ap.parse_args()
    exe = str(Path(sys.executable).parent / "traceana")
    for trace in a.traces:
        if trace == DEFAULT and not trace.exists():
            subprocess.run([sys.executable, str(HERE / "gen_kineto.py"), "150", str(trace)],
                           check=True)
    print(f"machine: {os.cpu_count()} cores ({platform.machine()}), "
          f"CPython {platform.python_version()}")
    print("| trace | file MB | output | run | wall s | CPU s | peak RSS MB | written MB |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for trace in a.traces:
            mb = trace.stat().st_size / 1e6
            for label, args, files in cases(trace, Path(tmp), a.base):
                for i in range(a.runs):
                    r = run([exe, *args])
                    print(f"| {trace.name} | {mb:.1f} | {label} | {i + 1} | {r['wall']:.2f} | "
                          f"{r['cpu']:.2f} | {r['rss']:,.0f} | {written_mb(files):.2f} |",
                          flush=True)


if __name__ == "__main__":
    main()
