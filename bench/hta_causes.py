"""traceana's gap causes against HTA's idle time breakdown, gap by gap, with a raw-JSON referee.

For each Kineto trace file this runs, on the same file:

* HTA (HolisticTraceAnalysis, in its own venv, one subprocess for all traces):
  ``TraceAnalysis(trace_dir=...).get_idle_time_breakdown(ranks, visualize=False,
  consecutive_kernel_delay=N)``, per stream ``host_wait`` / ``kernel_wait`` / ``other``, and the
  category HTA gives each kernel's preceding interval (rebuilt from HTA's own dataframe with the
  three lines of ``BreakdownAnalysis._analyze_idle_time_for_stream``; checked against HTA's
  totals, column ``hta_check``);
* traceana: ``traceana gaps FILE --format json --no-cache`` in a subprocess (any cause names:
  they are just keys), from the checkout given by ``--traceana-root`` (default: this one);
* a referee written here in plain Python from the raw JSON, sharing no code with either tool:
  per lane (device, stream), the union of kernels and memsets (traceana's executions), each gap
  between two busy intervals, and whether the next kernel's launch (the ``cuda_runtime`` /
  ``cuda_driver`` event with its correlation id) began after the previous kernel ended.

Referee classes of a gap (``--latency`` is the back-to-back threshold, default 5 µs):

  launched_after  the launch began after the previous kernel ended: the host was late
  launch_at_end   the launch began exactly when the previous kernel ended (a tie; HTA's rule is
                  strict, so not host_wait)
  graph           queued before, and both kernels come from one graph launch (same correlation)
  queued<=LAT     queued before the previous kernel ended, gap <= LAT: launch/queue latency
  queued>LAT      queued before, started later than LAT: the device waited on something else
  no_launch       no runtime event with the next kernel's correlation id is in the trace

It prints (markdown) per stream: HTA's three categories, traceana's idle per cause, and the
referee's counts; then, per trace, the gaps cross-tabulated as referee class x HTA category x
traceana cause (count and µs); then where each tool disagrees with the referee on host side vs
device side; last, what nsys's gpu_gaps rule (per device, every GPU operation busy, gaps over
500 ms by default) would report on the same events.

    .venv/bin/python bench/hta_causes.py [TRACE ...] [--hta-python /tmp/hta-venv/bin/python]

TRACE is a trace file or a directory (each file in it is compared on its own). Default: the
traces bench/hta_compare.py uses, plus corpus real traces (h100_bert, b200_eager, mi300_resnet,
sglang_decode, torch_compile_triton, param/dlrm_kineto). All times in µs.
"""

from __future__ import annotations

import argparse
import gzip
import json

from hta_venv import PRELUDE  # bench/: the folder of the script run
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_TRACES = [
    "hta/tests/data/critical_path/simple_add",
    "hta/tests/data/critical_path/alexnet",
    "hta/tests/data/trace_filter/sampled_rank-0.json.gz",
    "hta/tests/data/amd_trace",
    "hta/tests/data/triton_example",
    "hta/tests/data/trace_compare/base",
    "real/tracelens/h100_bert",
    "real/tracelens/b200_eager",
    "real/tracelens/mi300_resnet",
    "real/tracelens/sglang_decode",
    "real/tracelens/torch_compile_triton",
    "real/param/dlrm_kineto",
]
EXEC_CATS = {"kernel", "Kernel", "gpu_memset", "Memset"}  # traceana's executions
COPY_CATS = {"gpu_memcpy", "Memcpy"}  # busy for HTA, a possible cause for traceana
LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
COMM = re.compile(r"(?i)\b(nccl|rccl)")
HTA_CATS = ("host_wait", "kernel_wait", "other")

# Runs under HTA's python. argv: out.json, consecutive_kernel_delay, trace files...
HTA_SNIPPET = PRELUDE + r"""
import json, os, sys, tempfile, time
out, delay, traces = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
from hta.trace_analysis import TraceAnalysis
from hta.utils.utils import IdleTimeType
NAMES = {m.value: n.lower() for n, m in IdleTimeType.__members__.items()}
KERNEL_CATS = ["kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy",
               "mtia_ccp_events"]  # BreakdownAnalysis.get_idle_time_breakdown
res = {"version": hta_version(), "delay": delay, "traces": {}}
for trace in traces:
    t0 = time.time()
    try:
        with tempfile.TemporaryDirectory(prefix="hta-causes-") as d:
            os.symlink(os.path.abspath(trace), os.path.join(d, os.path.basename(trace)))
            a = TraceAnalysis(trace_dir=d)
            ranks = sorted(a.t.get_ranks())
            df, _ = a.get_idle_time_breakdown(ranks=ranks, visualize=False,
                                              consecutive_kernel_delay=delay)
            t = a.t
            ids = t.symbol_table.get_sym_id_map()
            names = t.symbol_table.get_sym_table()
            cat_ids = [ids.get(c, -1000) for c in KERNEL_CATS]
            kernels = []
            for rank in ranks:
                tr = t.get_trace(rank)
                # the selection, the runtime join and the rules of
                # BreakdownAnalysis.get_idle_time_breakdown / _analyze_idle_time_for_stream
                k = (tr[tr["stream"].ne(-1) & tr["cat"].isin(cat_ids)].copy()
                     .set_index("index_correlation")
                     .join(tr[["ts", "index"]], on="index_correlation", rsuffix="_runtime"))
                for stream, s in k.groupby("stream"):
                    s = s.sort_values(by="ts")
                    end = s.ts + s.dur
                    prev_end = end.shift(1)
                    interval = s.ts - prev_end
                    host = s.ts_runtime > prev_end
                    kw = ~host & (interval < delay)
                    cat = host.map({True: "host_wait", False: "other"}).where(~kw, "kernel_wait")
                    for r, iv, c, tsr in zip(s.itertuples(), interval, cat, s.ts_runtime):
                        kernels.append({"rank": int(rank), "stream": int(stream),
                                        "correlation": int(r.correlation),
                                        "cat": names[r.cat],
                                        "ts": float(r.ts) + float(t.min_ts),
                                        "interval": None if iv != iv else float(iv),
                                        "runtime_ts": None if tsr != tsr
                                        else float(tsr) + float(t.min_ts),
                                        "hta_cat": c})
            rows = [{"rank": int(r["rank"]), "stream": int(r["stream"]),
                     "idle_category": str(r["idle_category"]),
                     "idle_time": float(r["idle_time"])} for r in df.to_dict("records")]
            res["traces"][trace] = {"rows": rows, "kernels": kernels,
                                    "seconds": time.time() - t0}
    except Exception as exc:  # report it, go on with the next trace
        res["traces"][trace] = {"error": f"{type(exc).__name__}: {exc}"}
with open(out, "w") as f:
    json.dump(res, f)
"""

TRACEANA_MAIN = "import sys; sys.argv[0] = 'traceana'; from trace_analyzer.cli import main; main()"


def find_traces(args: list[str]) -> list[tuple[str, Path]]:
    """Return (label, file) for every trace file to compare."""
    roots = [(a, Path(a)) for a in args] or [(t.split("/", 3)[-1] if t.startswith("hta/")
                                              else t.split("/", 1)[-1], CORPUS / t)
                                             for t in DEFAULT_TRACES]
    out = []
    for label, path in roots:
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.name.endswith((".json", ".json.gz")))
            out += [(label if len(files) == 1 else f"{label}/{f.name.split('.')[0]}", f)
                    for f in files]
        elif path.is_file():
            out.append((label, path))
        else:
            print(f"warning: {path} not found, skipped", file=sys.stderr)
    return out


# ---------------------------------------------------------------------------------------------
# The referee: plain Python on the raw JSON.


def _ns(us: float) -> int:
    """µs (Kineto ts/dur) to integer ns, whole µs and fraction apart (as exact as the JSON)."""
    whole = math.floor(us)
    return int(whole) * 1000 + int(round((us - whole) * 1000))


def raw_gaps(path: Path, latency_ns: int) -> dict:
    """Return the referee's gaps of one trace: {(device, stream): [gap, ...]}, and lane info."""
    with (gzip.open(path, "rt") if path.name.endswith(".gz") else open(path)) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    base = int(doc.get("baseTimeNanoseconds") or 0) if isinstance(doc, dict) else 0
    launch: dict[int, tuple[int, str]] = {}
    execs, copies = defaultdict(list), defaultdict(list)
    for e in events:
        if e.get("ph") != "X" or "ts" not in e:
            continue
        cat, args = e.get("cat"), e.get("args") or {}
        corr = args.get("correlation")
        if cat in LAUNCH_CATS and corr is not None:
            t = _ns(e["ts"]) + base
            if corr not in launch or t < launch[corr][0]:
                launch[corr] = (t, e.get("name", ""))
        elif cat in EXEC_CATS or cat in COPY_CATS:
            lane = (args.get("device", e.get("pid")), args.get("stream", e.get("tid")))
            s = _ns(e["ts"]) + base
            rec = (s, s + _ns(e.get("dur", 0) or 0), corr, e.get("name", ""))
            (execs if cat in EXEC_CATS else copies)[lane].append(rec)
    # nsys's gpu_gaps rule, as its SQL reads: per (process, device), every GPU operation
    # (kernels, memcpys, memsets) sorted by start and by end; a gap is the i-th end to the
    # (i+1)-th start when end < start. Kineto has no PROFILER_OVERHEAD rows to add.
    per_dev = defaultdict(list)
    for (dev, _st), recs in [*execs.items(), *copies.items()]:
        per_dev[dev] += recs
    device_gaps = {}
    for dev, recs in per_dev.items():
        starts = sorted(r[0] for r in recs)
        ends = sorted(r[1] for r in recs)
        device_gaps[dev] = [s - e for e, s in zip(ends, starts[1:], strict=False) if e < s]
    lanes = {}
    for lane, ks in execs.items():
        ks.sort(key=lambda k: (k[0], k[1]))
        cps = sorted(copies.get(lane, []))
        gaps, cur_end, cur_corr = [], None, None
        for s, e, corr, _name in ks:
            if cur_end is not None and s > cur_end:
                g0, g1 = cur_end, s
                lt = launch.get(corr)
                if lt is None:
                    cls = "no_launch"
                elif lt[0] > g0:  # strictly after, as HTA's host_wait
                    cls = "launched_after"
                elif lt[0] == g0:  # a tie: common with whole-µs timestamps
                    cls = "launch_at_end"
                elif corr == cur_corr and "graph" in lt[1].lower():
                    cls = "graph"
                elif g1 - g0 <= latency_ns:
                    cls = "queued<=LAT"
                else:
                    cls = "queued>LAT"
                copy_ns = sum(max(0, min(ce, g1) - max(cs, g0)) for cs, ce, *_ in cps
                              if cs < g1 and ce > g0)
                gaps.append({"start_ns": g0, "end_ns": g1, "dur_ns": g1 - g0, "corr": corr,
                             "launch_ns": None if lt is None else lt[0],
                             "launch_after_ns": None if lt is None else lt[0] - g0,
                             "cls": cls, "copy_ns": copy_ns})
            if cur_end is None or e >= cur_end:
                cur_end, cur_corr = e, corr
        lanes[lane] = {"gaps": gaps, "executions": len(ks), "copies": len(cps),
                       "comm": any(COMM.search(k[3]) for k in ks),
                       "kernels": {(k[2], k[0]) for k in ks}}
    return {"lanes": lanes, "base": base, "device_gaps": device_gaps}


# ---------------------------------------------------------------------------------------------
# The two tools.


def run_hta(hta_python: str, files: list[Path], delay: int, timeout: int) -> dict:
    """Return HTA's results for all files (one subprocess); {} entries carry 'error'."""
    with tempfile.TemporaryDirectory(prefix="hta-causes-out-") as d:
        out = Path(d) / "hta.json"
        cmd = [hta_python, "-c", HTA_SNIPPET, str(out), str(delay), *map(str, files)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=d,
                              env={**os.environ, "MPLBACKEND": "Agg"})
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
            raise RuntimeError(f"HTA exited {proc.returncode}:\n{tail}")
        return json.loads(out.read_text())


def traceana_python(root: Path) -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run_traceana(root: Path, path: Path, extra: list[str], timeout: int) -> dict:
    """Return ``traceana gaps PATH --format json --no-cache`` from the checkout at root."""
    cmd = [traceana_python(root), "-c", TRACEANA_MAIN, "gaps", str(path), "--format", "json",
           "--no-cache", *extra]
    with tempfile.TemporaryDirectory(prefix="traceana-causes-") as d:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=d,
                              env={**os.environ, "PYTHONPATH": str(root)})
    if proc.returncode not in (0, 1):  # 1: a --fail-on held
        raise RuntimeError(f"traceana exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return json.loads(proc.stdout)


def traceana_version(root: Path) -> str:
    """Say which traceana the numbers come from (read-only git plumbing, no index writes)."""
    try:
        ver = re.search(r'__version__ = "([^"]+)"',
                        (root / "trace_analyzer" / "_version.py").read_text()).group(1)
    except (OSError, AttributeError):
        ver = "?"
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "diff-index", "--quiet", "HEAD", "--",
                                "trace_analyzer"], capture_output=True).returncode != 0
        where = f"commit {head}{' + uncommitted changes in trace_analyzer/' if dirty else ''}"
    except (OSError, subprocess.CalledProcessError):
        where = "not a git checkout"
    return f"traceana {ver} from {root} ({where})"


LANE_RE = re.compile(r"GPU:(-?\d+)/stream:(-?\d+)$")


# ---------------------------------------------------------------------------------------------
# Putting them side by side.


def us(ns: float) -> str:
    return f"{ns / 1000:,.3f}"


def table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def compare(label: str, ref: dict, hta: dict | None, tan: dict | None, latency_ns: int) -> dict:
    """Return the per-stream rows and the per-gap rows of one trace."""
    lanes = ref["lanes"]
    # HTA's per-kernel category, keyed (stream, correlation, start ns): HTA's ts are rounded
    # to the µs, so match the n-th kernel with that (stream, correlation) in time order.
    hta_cat: dict[tuple, tuple] = {}
    hta_rows: dict[int, dict] = defaultdict(lambda: dict.fromkeys(HTA_CATS, 0.0))
    hta_streams: dict[int, set] = defaultdict(set)
    if hta and "error" not in hta:
        by_sc = defaultdict(list)
        for k in hta["kernels"]:
            if k["cat"] not in COPY_CATS:
                by_sc[(k["stream"], k["correlation"])].append(k)
        ours = defaultdict(list)
        for (dev, st), info in lanes.items():
            for corr, s in info["kernels"]:
                ours[(st, corr)].append((s, dev))
        for key, ks in by_sc.items():
            ks.sort(key=lambda k: k["ts"])
            mine = sorted(ours.get(key, []))
            for k, (s, dev) in zip(ks, mine, strict=False):  # HTA may drop some
                hta_cat[(dev, key[0], key[1], s)] = (k["hta_cat"], k["interval"])
        for r in hta["rows"]:
            hta_rows[r["stream"]][r["idle_category"]] += r["idle_time"] * 1000  # µs -> ns
        # HTA's own total vs the rebuilt per-kernel intervals (the check of the rebuild)
        rebuilt = defaultdict(float)
        for k in hta["kernels"]:
            if k["interval"] is not None:
                rebuilt[k["stream"]] += k["interval"] * 1000
        for st in hta_rows:
            hta_rows[st]["check"] = abs(sum(hta_rows[st][c] for c in HTA_CATS)
                                        - rebuilt[st]) < 20  # HTA rounds to 0.01 µs per row
        for (dev, st) in lanes:
            hta_streams[st].add(dev)
    # traceana's gaps, keyed (device, stream, gap end ns)
    ta_cause: dict[tuple, tuple] = {}
    ta_lane_cause: dict[tuple, dict] = defaultdict(lambda: defaultdict(int))
    ta_label: dict[tuple, str] = {}
    causes: list[str] = []
    if tan:
        for run in tan["runs"]:
            causes += [c for c in run["summary"].get("idle_by_cause_ns", {}) if c not in causes]
            for g in run["gaps"]:
                m = LANE_RE.search(g["lane"])
                if not m:
                    continue
                key = (int(m.group(1)), int(m.group(2)))
                ta_label[key] = g["lane"]
                ta_cause[(*key, g["end_ns"])] = (g["cause"], g["duration_ns"])
                ta_lane_cause[key][g["cause"]] += g["duration_ns"]
            for lane in run.get("lanes", []):
                m = LANE_RE.search(lane["lane"])
                if m:
                    ta_label.setdefault((int(m.group(1)), int(m.group(2))), lane["lane"])
    stream_rows, gap_rows = [], []
    for (dev, st), info in sorted(lanes.items(), key=lambda x: (str(x[0][0]), str(x[0][1]))):
        try:
            key = (int(dev), int(st))
        except (TypeError, ValueError):
            key = (dev, st)
        ref_count = defaultdict(lambda: [0, 0])
        for g in info["gaps"]:
            ref_count[g["cls"]][0] += 1
            ref_count[g["cls"]][1] += g["dur_ns"]
            hc, hiv = hta_cat.get((dev, st, g["corr"], g["end_ns"]), ("(dropped)", None))
            if not hta or "error" in hta:
                hc = "(no HTA)"
            tc, tdur = ta_cause.get((*key, g["end_ns"]), ("(not a gap)", None))
            gap_rows.append({"trace": label, "lane": ta_label.get(key, f"GPU:{dev}/stream:{st}"),
                             **g, "hta": hc, "hta_interval_us": hiv, "ta": tc,
                             "ta_dur_ns": tdur})
        matched = {(*key, g["end_ns"]) for g in info["gaps"]}
        unmatched_ta = sum(1 for k in ta_cause if k[:2] == key and k not in matched)
        h = hta_rows.get(st) if hta and "error" not in hta else None
        stream_rows.append({
            "trace": label, "lane": ta_label.get(key, f"GPU:{dev}/stream:{st}"),
            "comm": info["comm"], "executions": info["executions"], "copies": info["copies"],
            "gaps": len(info["gaps"]),
            "ref": {c: tuple(v) for c, v in ref_count.items()},
            "hta": None if h is None else {c: h[c] for c in HTA_CATS},
            "hta_check": None if h is None else h.get("check"),
            "hta_shared_stream": len(hta_streams.get(st, ())) > 1,
            "ta": dict(ta_lane_cause.get(key, {})), "ta_unmatched": unmatched_ta})
    return {"streams": stream_rows, "gaps": gap_rows, "causes": causes,
            "device_gaps": {label: ref["device_gaps"]}}


REF_CLASSES = ("launched_after", "launch_at_end", "graph", "queued<=LAT", "queued>LAT",
               "no_launch")
SIDES = {"launched_after": "host", "launch_at_end": "tie", "no_launch": "none"}


def report(results: list[dict], versions: dict, latency_ns: int, delay: int,
           nsys_gap_ms: float) -> str:
    lat = f"{latency_ns / 1000:g}us"
    name = lambda c: c.replace("LAT", lat)  # noqa: E731
    causes: list[str] = []
    for r in results:
        causes += [c for c in r["causes"] if c not in causes]
    out = [f"HTA {versions.get('hta', '?')} get_idle_time_breakdown(consecutive_kernel_delay="
           f"{delay}) vs {versions.get('traceana', '?')}; referee: raw JSON, latency {lat}. "
           "Times in µs.", ""]
    head = ["trace", "lane", "gaps", "HTA host_wait", "HTA kernel_wait", "HTA other",
            *(f"ta {c}" for c in causes),
            *(f"ref {name(c)} n/µs" for c in REF_CLASSES), "ta gaps not in ref"]
    rows = []
    for r in results:
        for s in r["streams"]:
            h = s["hta"]
            hcols = [us(h[c]) for c in HTA_CATS] if h else ["—"] * 3
            if h and s["hta_shared_stream"]:
                hcols = [c + " (stream shared by GPUs)" for c in hcols]
            lane = s["lane"] + (" [comm]" if s["comm"] else "")
            rows.append([s["trace"], lane, s["gaps"], *hcols,
                         *(us(s["ta"].get(c, 0)) for c in causes),
                         *(f"{s['ref'][c][0]} / {us(s['ref'][c][1])}" if c in s["ref"] else "0"
                           for c in REF_CLASSES), s["ta_unmatched"]])
    out += ["## Per stream", "", table(head, rows), ""]
    checks = [(s["trace"], s["lane"]) for r in results for s in r["streams"]
              if s["hta_check"] is False]
    out += [f"HTA rebuild check: {'FAILED on ' + repr(checks) if checks else 'ok'} (the "
            "per-kernel categories add up to HTA's totals on every stream).", ""]

    out += ["## Gaps by referee class x HTA category x traceana cause", ""]
    rows = []
    for r in results:
        agg = defaultdict(lambda: [0, 0])
        for g in r["gaps"]:
            a = agg[(g["cls"], g["hta"], g["ta"])]
            a[0] += 1
            a[1] += g["dur_ns"]
        for (c, h, t), (n, d) in sorted(agg.items(), key=lambda x: (-x[1][1])):
            rows.append([r["streams"][0]["trace"] if r["streams"] else "?", name(c), h, t, n,
                         us(d)])
    out += [table(["trace", "referee", "HTA", "traceana", "gaps", "µs"], rows), ""]

    out += ["## Host side or device side: agreement with the referee", "",
            "host = the referee's launched_after; tie = launch_at_end; device = queued (graph, "
            f"queued<={lat}, queued>{lat}); none = no_launch. Each cell: gaps / of them HTA "
            "host_wait (of those HTA kept) / of them traceana host_dispatch (of those traceana "
            "listed).", ""]
    rows = []
    for r in results:
        if not r["streams"]:
            continue
        c = defaultdict(int)
        for g in r["gaps"]:
            side = SIDES.get(g["cls"], "device")
            c[side] += 1
            if g["hta"] not in ("(dropped)", "(no HTA)"):
                c[f"{side}_hta"] += 1
                c[f"{side}_hta_host"] += g["hta"] == "host_wait"
            if g["ta"] != "(not a gap)":
                c[f"{side}_ta"] += 1
                c[f"{side}_ta_host"] += g["ta"] == "host_dispatch"
        rows.append([r["streams"][0]["trace"], *(
            f"{c[s]} / {c[s + '_hta_host']} ({c[s + '_hta']}) / {c[s + '_ta_host']} "
            f"({c[s + '_ta']})" for s in ("host", "tie", "device", "none"))])
    out += [table(["trace", "host", "tie", "device", "none"], rows), ""]

    thr = round(nsys_gap_ms * 1e6)
    out += [f"## nsys gpu_gaps rule on the same events (gap > {nsys_gap_ms:g} ms)", "",
            "Per device: every GPU operation (kernels, memsets, memcpys) of the file; the rule "
            "reports gaps longer than its threshold and gives no cause.", ""]
    rows = []
    for r in results:
        for label, devs in r["device_gaps"].items():
            for dev, gs in sorted(devs.items(), key=lambda x: str(x[0])):
                big = [g for g in gs if g > thr]
                rows.append([label, dev, f"{len(big)} / {us(sum(big))}",
                             f"{len(gs)} / {us(sum(gs))}"])
    out += [table(["trace", "device", f"gaps > {nsys_gap_ms:g} ms n/µs", "all gaps n/µs"],
                  rows), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="*", metavar="TRACE")
    ap.add_argument("--hta-python",
                    default=os.environ.get("HTA_PYTHON", "/tmp/hta-venv/bin/python"),
                    help="python of a venv with holistictraceanalysis (default $HTA_PYTHON, "
                         "else /tmp/hta-venv/bin/python)")
    ap.add_argument("--consecutive-kernel-delay", type=int, default=30,
                    help="HTA's kernel_wait threshold (its default 30, in the trace's ts unit: µs)")
    ap.add_argument("--latency", type=float, default=5.0,
                    help="the referee's back-to-back threshold in µs (default 5, traceana's "
                         "launch_latency default)")
    ap.add_argument("--traceana-root", type=Path, default=REPO,
                    help="checkout whose trace_analyzer/ to run (default: this repository)")
    ap.add_argument("--traceana-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for 'traceana gaps' (repeat; e.g. --traceana-arg=--latency"
                         " --traceana-arg=5us)")
    ap.add_argument("--nsys-gap-ms", type=float, default=500.0,
                    help="threshold of the nsys gpu_gaps rule, ms (its default 500)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per subprocess")
    ap.add_argument("--json", metavar="FILE", help="also write every gap row to FILE")
    a = ap.parse_args(argv)
    t0 = time.time()
    traces = find_traces(a.traces)
    if not traces:
        sys.exit("no traces to compare")
    latency_ns = round(a.latency * 1000)
    versions = {"traceana": traceana_version(a.traceana_root.resolve())}
    with ThreadPoolExecutor(max_workers=8) as pool:
        hta_future = None
        if Path(a.hta_python).exists():
            hta_future = pool.submit(run_hta, a.hta_python, [p for _, p in traces],
                                     a.consecutive_kernel_delay, a.timeout)
        else:
            print(f"warning: {a.hta_python} not found: no HTA columns", file=sys.stderr)
        ta_futures = {p: pool.submit(run_traceana, a.traceana_root.resolve(), p,
                                     a.traceana_arg, a.timeout) for _, p in traces}
        refs = {p: pool.submit(raw_gaps, p, latency_ns) for _, p in traces}
        hta = {}
        if hta_future:
            try:
                res = hta_future.result()
                versions["hta"] = res["version"]
                hta = {Path(k): v for k, v in res["traces"].items()}
            except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                print(f"HTA failed: {exc}", file=sys.stderr)
        results = []
        for label, p in traces:
            try:
                tan = ta_futures[p].result()
            except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                print(f"[{label}] traceana failed: {exc}", file=sys.stderr)
                tan = None
            h = hta.get(p)
            if h and "error" in h:
                print(f"[{label}] HTA failed: {h['error']}", file=sys.stderr)
            results.append(compare(label, refs[p].result(), h, tan, latency_ns))
    print(report(results, versions, latency_ns, a.consecutive_kernel_delay, a.nsys_gap_ms))
    print(f"({len(traces)} trace files in {time.time() - t0:.1f} s)")
    if a.json:
        Path(a.json).write_text(json.dumps(
            {"versions": versions, "latency_ns": latency_ns,
             "consecutive_kernel_delay": a.consecutive_kernel_delay,
             "streams": [s for r in results for s in r["streams"]],
             "gaps": [g for r in results for g in r["gaps"]]}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
