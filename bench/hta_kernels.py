"""traceana's kernel breakdown (`traceana kernels`) beside HTA 0.5.0's
``get_gpu_kernel_breakdown`` on the same Kineto trace (docs/kernels.md says why they differ).

For one trace file this runs:

* HTA (HolisticTraceAnalysis, in its own venv, a subprocess): ``TraceAnalysis(trace_dir=D)``
  on a folder holding a copy of the trace, then ``get_gpu_kernel_breakdown(visualize=False,
  include_memory_kernels=True)`` twice: with HTA's defaults (``num_kernels=10,
  duration_ratio=0.8``: the rest grouped as ``others``) and with every kernel kept
  (``num_kernels=10**6, duration_ratio=1.0``); also, from HTA's own loaded frame, how many
  kernels of each name it kept (its breakdown has no count) and its kernel type of each;
* traceana: ``ta.kernels`` from this checkout, on the whole trace;
* a referee from the raw JSON, sharing no code with either: per name, the device records
  (kernels, copies, sets), and those whose launch (a ``cuda_runtime``/``cuda_driver`` event
  of the same correlation) is in the trace, with the sum of their durations rounded as HTA's
  parser does (``round_down_time_stamps``: start rounded up, end down, to whole µs).

It prints (Markdown) the time per kernel type, then per kernel HTA's count, sum and max
beside traceana's and the referee's, and how many names agree with the referee's account of
each. HTA's times are µs; traceana's ns, shown as µs.

    PYTHONPATH=. .venv/bin/python bench/hta_kernels.py TRACE [--hta-python PYTHON]

``--hta-python``: the python of HTA's venv (default /tmp/hta-venv-k/bin/python).
"""

from __future__ import annotations

import argparse
import gzip
import json

from hta_venv import PRELUDE  # bench/: the folder of the script run
import math
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH = ("cuda_runtime", "cuda_driver")
HTA_SNIPPET = PRELUDE + r"""
import json, sys
from hta.trace_analysis import TraceAnalysis
from hta.utils.utils import get_kernel_type
out, folder = sys.argv[1], sys.argv[2]
a = TraceAnalysis(trace_dir=folder)
res = {"version": hta_version()}
for label, kw in (("default", {}), ("all", {"num_kernels": 10**6, "duration_ratio": 1.0})):
    types, metrics = a.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True, **kw)
    res[label] = {"types": types.to_dict("records"), "metrics": metrics.to_dict("records")}
names = a.t.symbol_table.get_sym_table()
kept = {}
for rank in a.t.get_ranks():
    tr = a.t.get_trace(rank)
    k = tr[tr["stream"].ne(-1)]
    for n, g in k.groupby("name"):
        name = names[n]
        kept[f"{rank}|{name}"] = {"count": int(len(g)), "type": get_kernel_type(name),
                                  "cats": sorted({names[c] for c in g["cat"]})}
res["kept"] = kept
with open(out, "w") as f:
    json.dump(res, f, default=float)
"""


def hta(trace: Path, python: str) -> dict:
    """Run HTA on a folder holding a copy of ``trace``; return what HTA_SNIPPET wrote."""
    with tempfile.TemporaryDirectory(prefix="hta-kernels-") as d:
        shutil.copy(trace, Path(d) / trace.name)
        out = Path(d) / "out.json.result"
        subprocess.run([python, "-c", HTA_SNIPPET, str(out), d], check=True)
        return json.loads(out.read_text())


def ours(trace: Path) -> dict:
    """Return traceana's rows by name (``ta.kernels`` over the whole trace)."""
    import trace_analyzer as ta
    from trace_analyzer.questions.kernels.analysis import kernels

    return {r["name"]: r for r in kernels(ta.load(trace)).kernels.to_dicts()}


def referee(trace: Path) -> dict:
    """Per device record's name, from the raw JSON: all of them (count, summed ns), and those
    whose launch (a runtime event of the same correlation) is in the trace (count, and the
    sum of their durations as HTA's parser rounds them: start up, end down, to whole µs)."""
    with gzip.open(trace, "rt") if trace.suffix == ".gz" else open(trace) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") in LAUNCH and "correlation" in e.get("args", {})}  # fmt: skip
    out: dict[str, dict] = defaultdict(lambda: {"n": 0, "ns": 0, "launched": 0, "floor_us": 0})
    for e in events:
        if e.get("cat") not in DEVICE or e["dur"] <= 0:
            continue
        r = out[e["name"]]
        r["n"] += 1
        r["ns"] += round(e["dur"] * 1000)
        if e.get("args", {}).get("correlation") in launched:
            r["launched"] += 1
            r["floor_us"] += math.floor(e["ts"] + e["dur"]) - math.ceil(e["ts"])
    return dict(out)


def us(ns: float | None) -> str:
    return "–" if ns is None else f"{ns / 1000:,.3f}"


def report(trace: Path, h: dict, mine: dict, ref: dict) -> None:
    print(f"## {trace.name}: HTA {h['version']} beside traceana\n")
    print("### time per kernel type (HTA: each type's union of intervals, overlaps apart; µs)\n")
    print("| HTA kernel_type | HTA sum | HTA % |\n|---|---:|---:|")
    for r in h["all"]["types"]:
        print(f"| {r['kernel_type']} | {r['sum']:,.0f} | {r['percentage']} |")
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in mine.values():
        kinds[r["kind"]][0] += r["count"]
        kinds[r["kind"]][1] += r["total_ns"]
    print("\n| traceana kind | count | summed µs |\n|---|---:|---:|")
    for k, (c, t) in sorted(kinds.items()):
        print(f"| {k} | {c:,} | {us(t)} |")
    metrics = {m["name"]: m for m in h["all"]["metrics"]}
    kept = {k.split("|", 1)[1]: v for k, v in h["kept"].items()}
    print("\n### per kernel, the 12 largest by traceana's total (µs)\n")
    print(
        "| kernel | HTA type | ours | HTA n | ours n | launch in trace | HTA sum "
        "| Σ(⌊end⌋-⌈ts⌉) launched | ours total | HTA max | ours max |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in sorted(mine.items(), key=lambda kv: -kv[1]["total_ns"])[:12]:
        m, c, x = metrics.get(name, {}), kept.get(name, {}), ref.get(name, {})
        print(f"| {name[:48]} | {c.get('type', '–')} | {r['kind']} | {c.get('count', 0)} "
              f"| {r['count']} | {x.get('launched')} | {m.get('sum (us)', 0):,.0f} "
              f"| {x.get('floor_us', 0):,} | {us(r['total_ns'])} | {m.get('max (us)', '–')} "
              f"| {us(r['max_ns'])} |")  # fmt: skip
    same_n = sum(kept.get(n, {}).get("count", 0) == x["launched"] for n, x in ref.items())
    same_sum = sum(round(metrics.get(n, {}).get("sum (us)", 0)) == x["floor_us"]
                   for n, x in ref.items())  # fmt: skip
    ours_n = sum(mine.get(n, {}).get("count") == x["n"] for n, x in ref.items())
    ours_sum = sum(abs(mine.get(n, {}).get("total_ns", 0) - x["ns"]) <= x["n"]
                   for n, x in ref.items())  # fmt: skip
    print(
        f"\nof {len(ref)} names: HTA's count = the launched records' for {same_n}, HTA's sum "
        f"= Σ(⌊end⌋-⌈ts⌉) of the launched for {same_sum}; traceana's count = all records' for "
        f"{ours_n}, its total = Σ dur (within 1 ns a record) for {ours_sum}"
    )
    lost = sum(x["n"] - x["launched"] for x in ref.values())
    print(f"records with no launch in the trace (HTA leaves them out): {lost}")
    print(
        f"HTA's default view (num_kernels=10, duration_ratio=0.8): "
        f"{len(h['default']['metrics'])} rows, "
        f"{sum(m['name'] == 'others' for m in h['default']['metrics'])} of them 'others'"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--hta-python", default="/tmp/hta-venv-k/bin/python")
    args = parser.parse_args()
    h = hta(args.trace, args.hta_python)
    report(args.trace, h, ours(args.trace), referee(args.trace))


if __name__ == "__main__":
    sys.exit(main())
