"""traceana's critical path against HolisticTraceAnalysis's, on the same trace and window.

HTA (``traceinsight`` 0.6.1, or ``HolisticTraceAnalysis``, in its own venv) runs
``TraceAnalysis(trace_dir).critical_path_analysis(rank=0, annotation=A, instance_id=0)`` and
``get_critical_path_breakdown()``: one row per edge of its path, attributed to an event, with
its ``bound_by``. traceana runs ``critical(load(folder), window=A)``. Printed (Markdown):

* the path's time by class in both (HTA's ``bound_by``; traceana's segment kinds grouped the
  same way: ``host``/``call``/``sync``/``before`` are the CPU, device work the GPU,
  ``launch`` the launch overhead, ``unexplained`` the rest);
* the device work on each path, matched by name and start (µs): on both, on one only.

    .venv/bin/python bench/hta_critical.py [--hta-python /tmp/hta6/bin/python]

Default traces: ``../shared/corpus/hta/tests/data/critical_path/{alexnet,simple_add}`` with the
annotation ``[param|pytorch.model.alex_net|0|0|0]`` (both traces record it). Times in µs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections import Counter
from pathlib import Path

from hta_venv import PRELUDE  # bench/: the folder of the script run

import trace_analyzer as ta

CORPUS = Path(__file__).resolve().parents[1].parent / "shared/corpus/hta/tests/data/critical_path"
ANNOTATION = "[param|pytorch.model.alex_net|0|0|0]"
HTA_CODE = PRELUDE + r"""
import json, sys, time
from hta.trace_analysis import TraceAnalysis
folder, annotation = sys.argv[1], sys.argv[2]
t0 = time.time()
cp, ok = TraceAnalysis(trace_dir=folder).critical_path_analysis(
    rank=0, annotation=annotation, instance_id=0)
seconds = time.time() - t0
sym = cp.symbol_table.sym_index[annotation]
window = int(cp.trace_df[cp.trace_df["name"] == sym]["ts"].min())
rows = []
for r in cp.get_critical_path_breakdown().to_dict("records"):
    idx = r.get("event_idx")
    ev = cp.trace_df.loc[int(idx)] if idx == idx and idx is not None else None
    rows.append({"type": r["type"], "bound_by": r["bound_by"], "duration": float(r["duration"]),
                 "name": str(r["s_name"]), "stream": float(r["stream"]),
                 "ts": None if ev is None else int(ev["ts"]) - window})
print(json.dumps({"ok": ok, "seconds": seconds, "version": hta_version(), "rows": rows}))
"""
CLASS = {
    "host": "cpu_bound", "call": "cpu_bound", "sync": "cpu_bound", "before": "cpu_bound",
    "compute": "gpu_compute_bound", "memory": "gpu_compute_bound",
    "communication": "gpu_compute_bound", "launch": "gpu_kernel_launch_overhead",
    "unexplained": "gpu_kernel_kernel_overhead",
}  # fmt: skip


def hta(python: str, folder: Path) -> dict:
    out = subprocess.run([python, "-c", HTA_CODE, str(folder), ANNOTATION], capture_output=True,
                         text=True, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(python: str, folder: Path) -> None:
    theirs = hta(python, folder)
    t0 = time.time()
    ours = ta.critical(ta.load(folder, cache=False), window=ANNOTATION)
    seconds = time.time() - t0
    print(f"\n## {folder.name}: {theirs['version']} {theirs['seconds']:.2f} s, traceana {seconds:.2f} s\n")
    by: Counter[str] = Counter()
    for r in theirs["rows"]:
        by["HTA " + (r["bound_by"] or r["type"])] += r["duration"]
    for r in ours.path.iter_rows(named=True):
        by["traceana " + CLASS[r["kind"]]] += r["duration_ns"] / 1000
    print("| class | HTA µs | traceana µs |\n|---|---:|---:|")
    for c in sorted({k.split(" ", 1)[1] for k in by}):
        print(f"| {c} | {by['HTA ' + c]:,.1f} | {by['traceana ' + c]:,.1f} |")
    print(f"| total | {sum(v for k, v in by.items() if k.startswith('HTA')):,.1f} | "
          f"{ours.steps['window_ns'][0] / 1000:,.1f} (the window) |")  # fmt: skip
    _device(theirs, ours)
    _host(theirs, ours)


def _device(theirs: dict, ours: ta.CriticalResult) -> None:
    """The device work on each path, matched by start (µs after the window's start, ±1)."""
    base = ours.steps["start_ns"][0]
    mine = {round((r["start_ns"] - base) / 1000): r["name"] for r in ours.path.to_dicts()
            if r["kind"] in ("compute", "memory", "communication")}  # fmt: skip
    hta_gpu = {r["ts"]: r["name"] for r in theirs["rows"]
               if r["stream"] >= 0 and r["ts"] is not None and r["duration"] > 0}  # fmt: skip
    both = {t for t in mine if any(abs(t - u) <= 1 for u in hta_gpu)}
    print(f"\ndevice work on the path: {len(mine)} traceana, {len(hta_gpu)} HTA, {len(both)} on "
          "both (by start, ±1 µs)\n")  # fmt: skip
    for label, items in (("HTA only", {t: n for t, n in hta_gpu.items()
                                       if not any(abs(t - u) <= 1 for u in mine)}),
                         ("traceana only", {t: n for t, n in mine.items() if t not in both})):
        for t in sorted(items)[:8]:
            print(f"- {label}: {items[t][:60]} at {t:,} µs")


def _host(theirs: dict, ours: ta.CriticalResult) -> None:
    """The host's time on each path by event: HTA's per op or call it attributes an edge to,
    traceana's per call (its own time) and per op or frame holding host time (its label)."""
    hta_by: Counter[str] = Counter()
    for r in theirs["rows"]:
        if r["bound_by"] == "cpu_bound":
            hta_by[r["name"]] += r["duration"]
    ours_by: Counter[str] = Counter()
    for r in ours.path.to_dicts():
        if r["kind"] in ("call", "sync"):
            ours_by[r["name"]] += r["duration_ns"] / 1000
        elif r["kind"] in ("host", "before"):
            ours_by[r["label"] or "untraced"] += r["duration_ns"] / 1000
    print("\n| host time in | HTA µs | traceana µs |\n|---|---:|---:|")
    for name, _ in (hta_by + ours_by).most_common(12):
        print(f"| {name[:60]} | {hta_by[name]:,.1f} | {ours_by[name]:,.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hta-python", default="/tmp/hta6/bin/python")
    ap.add_argument("folders", nargs="*", type=Path)
    a = ap.parse_args()
    for folder in a.folders or [CORPUS / "alexnet", CORPUS / "simple_add"]:
        compare(a.hta_python, folder)


if __name__ == "__main__":
    main()
