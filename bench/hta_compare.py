"""Compare HolisticTraceAnalysis's idle time breakdown with traceana's gaps, per GPU stream.

HTA is not a dependency of traceana: it runs in its own virtual environment, one subprocess
per trace, and hands its per-stream results back as JSON. traceana runs in-process.

    python bench/hta_compare.py --hta-python /tmp/hta-venv/bin/python [TRACE ...]

TRACE is a Kineto trace file (.json / .json.gz) or a directory of them (each file is compared
on its own). Without TRACE, the CUDA traces of HTA's own test data are used, found at
../shared/corpus/hta/tests/data relative to the repository.

All times are printed in µs. diff_us = HTA idle - traceana idle for that stream.
--explain adds a table that rebuilds HTA's number from traceana's events one rule at a time
(see bench/docs/hta-comparison.md for what each step means and the HTA source behind it).
"""

from __future__ import annotations

import argparse
import json

from hta_venv import PRELUDE  # bench/: the folder of the script run
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing

import trace_analyzer as ta  # noqa: E402
from trace_analyzer.questions.gaps.analysis import gaps  # noqa: E402

HTA_DATA = REPO.parent / "shared" / "corpus" / "hta" / "tests" / "data"
DEFAULT_TRACES = [
    "critical_path/simple_add",
    "critical_path/alexnet",
    "trace_filter/sampled_rank-0.json.gz",
    "amd_trace",
    "triton_example",
    "trace_compare/base",
]
# The categories HTA's get_idle_time_breakdown takes as "kernels"
# (hta/analyzers/breakdown_analysis.py, BreakdownAnalysis.get_idle_time_breakdown).
HTA_KERNEL_CATS = ["kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy",
                   "mtia_ccp_events"]
MEMCPY_CATS = ["gpu_memcpy", "Memcpy"]

# Runs under the HTA venv's python: argv = trace, out.json, consecutive_kernel_delay,
# include_last_profiler_step (0/1). Writes {version, ranks, base_ns, min_ts, rows, events}.
HTA_SNIPPET = PRELUDE + r"""
import json, os, sys, tempfile
trace, out, delay, include_last = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
from hta.trace_analysis import TraceAnalysis
KERNEL_CATS = %(cats)r
with tempfile.TemporaryDirectory(prefix="hta-compare-") as d:
    # TraceAnalysis wants a directory; give it one that holds this trace alone.
    os.symlink(os.path.abspath(trace), os.path.join(d, os.path.basename(trace)))
    a = TraceAnalysis(trace_dir=d, include_last_profiler_step=include_last)
    ranks = sorted(a.t.get_ranks())  # the rank comes from distributedInfo, else 0
    df, _ = a.get_idle_time_breakdown(ranks=ranks, visualize=False,
                                      consecutive_kernel_delay=delay)
    t = a.t
    ids = t.symbol_table.get_sym_id_map()
    names = t.symbol_table.get_sym_table()
    cat_ids = [ids.get(c, -1000) for c in KERNEL_CATS]
    events = []
    for rank in ranks:
        tr = t.get_trace(rank)
        # the same selection as BreakdownAnalysis.get_idle_time_breakdown
        k = tr[tr["stream"].ne(-1) & tr["cat"].isin(cat_ids)]
        for r in k.itertuples():
            events.append({"rank": int(rank), "stream": int(r.stream),
                           "correlation": int(r.correlation), "cat": names[r.cat],
                           "ts": float(r.ts) + float(t.min_ts), "dur": float(r.dur)})
    meta = t.meta_data[ranks[0]] if ranks else {}
    from hta.configs.env_options import disable_ns_rounding
    res = {"version": hta_version(), "ranks": [int(r) for r in ranks],
           "ns_rounding": not disable_ns_rounding(),
           "base_ns": meta.get("baseTimeNanoseconds"), "min_ts": float(t.min_ts),
           "rows": [{"rank": int(r["rank"]), "stream": int(r["stream"]),
                     "idle_category": str(r["idle_category"]),
                     "idle_time": float(r["idle_time"])} for r in df.to_dict("records")],
           "events": events}
with open(out, "w") as f:
    json.dump(res, f)
"""


def find_traces(args: list[str]) -> list[tuple[str, Path]]:
    """Return (label, file) for each trace to compare."""
    if args:
        roots = [(a, Path(a)) for a in args]
    else:
        if not HTA_DATA.is_dir():
            sys.exit(f"HTA test data not found at {HTA_DATA}; pass TRACE paths instead")
        roots = [(t, HTA_DATA / t) for t in DEFAULT_TRACES]
    out = []
    for label, path in roots:
        if path.is_dir():
            files = sorted(p for p in path.iterdir()
                           if p.name.endswith((".json", ".json.gz")))
            if not files:
                print(f"warning: no trace in {path}", file=sys.stderr)
            out += [(label if len(files) == 1 else f"{label}/{f.name}", f) for f in files]
        elif path.is_file():
            out.append((label, path))
        else:
            print(f"warning: {path} not found, skipped", file=sys.stderr)
    return out


def run_hta(hta_python: str, trace: Path, delay: int, include_last: bool,
            timeout: int) -> dict:
    """Return HTA's results for one trace; raise RuntimeError with HTA's own error."""
    with tempfile.TemporaryDirectory(prefix="hta-out-") as d:
        out = Path(d) / "hta.json"
        cmd = [hta_python, "-c", HTA_SNIPPET % {"cats": HTA_KERNEL_CATS}, str(trace.resolve()),
               str(out), str(delay), "1" if include_last else "0"]
        env = {**os.environ, "MPLBACKEND": "Agg"}
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  cwd=d, env=env)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"HTA timed out after {timeout}s") from None
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
            raise RuntimeError(f"HTA exited {proc.returncode}:\n{tail}")
        return json.loads(out.read_text())


def hta_table(label: str, res: dict) -> pl.DataFrame:
    """Return HTA's idle per stream, one column per idle category, in µs."""
    rows = pl.DataFrame(res["rows"], schema={"rank": pl.Int64, "stream": pl.Int64,
                                             "idle_category": pl.String,
                                             "idle_time": pl.Float64})
    wide = (rows.pivot("idle_category", index=["rank", "stream"], values="idle_time",
                       aggregate_function="sum")
            if rows.height else pl.DataFrame(schema={"rank": pl.Int64, "stream": pl.Int64}))
    for c in ("host_wait", "kernel_wait", "other"):
        if c not in wide.columns:
            wide = wide.with_columns(pl.lit(0.0).alias(c))
    ev = pl.DataFrame(res["events"], schema={"rank": pl.Int64, "stream": pl.Int64,
                                             "correlation": pl.Int64, "cat": pl.String,
                                             "ts": pl.Float64, "dur": pl.Float64})
    counts = ev.group_by("rank", "stream").agg(
        hta_events=pl.len(), hta_memcpy=pl.col("cat").is_in(MEMCPY_CATS).sum())
    return (wide.join(counts, on=["rank", "stream"], how="left")
            .select(pl.lit(label).alias("trace"), "rank", "stream",
                    hta_host_wait_us="host_wait", hta_kernel_wait_us="kernel_wait",
                    hta_other_us="other",
                    hta_idle_us=pl.sum_horizontal("host_wait", "kernel_wait", "other"),
                    hta_events=pl.col("hta_events").fill_null(0)))


STREAM_OF = pl.col("lane").str.extract(r"/stream:(-?\d+)$").cast(pl.Int64, strict=False)


def ta_table(label: str, profile) -> pl.DataFrame:
    """Return traceana's per-lane idle and busy of the GPU streams, in µs."""
    lanes = gaps(profile).lanes
    if lanes.is_empty():
        return pl.DataFrame(schema={"trace": pl.String, "stream": pl.Int64})
    us = lambda c: (pl.col(c) / 1000).alias(c.replace("_ns", "_us"))  # noqa: E731
    return lanes.select(pl.lit(label).alias("trace"), STREAM_OF.alias("stream"),
                        pl.col("lane").alias("ta_lane"),
                        *(us(c).name.prefix("ta_") for c in
                          ("idle_ns", "busy_ns", "leading_ns", "trailing_ns")),
                        ta_executions=pl.col("executions"))


def compare(hta: pl.DataFrame, tan: pl.DataFrame) -> pl.DataFrame:
    """Return HTA's and traceana's numbers per (trace, stream), side by side."""
    # HTA keys a stream by its number alone (per rank), so the lanes of several GPUs that
    # share a stream number are one HTA stream: compare HTA with their sum (ta_lanes > 1).
    tan = tan.with_columns(
        ta_lanes=pl.len().over("trace", "stream"),
        _ta_stream_idle=pl.col("ta_idle_us").sum().over("trace", "stream"))
    t = hta.join(tan, on=["trace", "stream"], how="full", coalesce=True)
    diff = pl.col("hta_idle_us") - pl.col("_ta_stream_idle")
    return t.with_columns(
        diff_us=diff, diff_pct=(100 * diff / pl.col("_ta_stream_idle")).round(2),
    ).drop("_ta_stream_idle").sort("trace", "stream", "ta_lane")


# ---------------------------------------------------------------------------------------------
# --explain: rebuild HTA's number from traceana's events, one HTA rule at a time.


def _idle_per_stream(events: pl.DataFrame, name: str) -> pl.DataFrame:
    """Return traceana's idle (µs) per stream number, summed over the lanes with that number."""
    lanes = gaps(events).lanes
    if lanes.is_empty():
        return pl.DataFrame(schema={"stream": pl.Int64, name: pl.Float64})
    return (lanes.with_columns(stream=STREAM_OF)
            .group_by("stream").agg((pl.col("idle_ns").sum() / 1000).alias(name)))


def explain(label: str, profile, res: dict, include_last: bool) -> pl.DataFrame:
    """Return, per stream, how each HTA rule moves traceana's idle to HTA's.

    A  traceana's idle (union of kernels+memsets, memcpy not busy, ns)
    B  A with memcpy counted busy                          -> memcpy_us      = B - A
    C1 B less the GPU events HTA dropped that have no host
       event with their correlation id in the trace        -> no_launch_us   = C1 - B
    C  B on exactly the events HTA's breakdown used
       (the rest it dropped: launched in/after the last
       ProfilerStep)                                       -> last_step_us   = C - C1
    D  C with HTA's parse rounding (ceil ts, floor end)    -> rounding_us    = D - C
    E  HTA's formula on D's events: per stream number (all
       devices together), sum in ts order of ts[i] -
       end[i-1], no merging of overlaps                    -> hta_formula_us = E - D
       residual_us = HTA - E (0 when the rules above are the whole story)
    """
    ev = profile.events
    kind_t = ev.schema["lane_kind"]
    kind = pl.col("lane_kind").cast(pl.String)
    gpu = pl.col("lane").str.contains(r"/stream:-?\d+$")
    ev_b = ev.with_columns(
        lane_kind=pl.when(pl.col("category").is_in(MEMCPY_CATS) & gpu)
        .then(pl.lit("hardware")).otherwise(kind).cast(kind_t),
        _stream=STREAM_OF, _corr=pl.col("correlation").fill_null(-1))
    hw = (kind == "hardware") & gpu

    # Match HTA's events to traceana's by (stream, correlation, n-th in time).
    h = pl.DataFrame(res["events"], schema={"rank": pl.Int64, "stream": pl.Int64,
                                            "correlation": pl.Int64, "cat": pl.String,
                                            "ts": pl.Float64, "dur": pl.Float64})
    h = h.sort("ts").with_columns(
        nth=pl.int_range(pl.len()).over("stream", "correlation"), hta=pl.lit(True))
    keyed = (ev_b.filter(hw).sort("start_ns")
             .with_columns(nth=pl.int_range(pl.len()).over("_stream", "_corr"))
             .select("event_id", "start_ns", stream="_stream", correlation="_corr", nth="nth")
             .join(h.select("stream", "correlation", "nth", "hta"),
                   on=["stream", "correlation", "nth"], how="left")
             .with_columns(pl.col("hta").fill_null(False)))
    unmatched_hta = h.height - keyed["hta"].sum()

    # Why HTA dropped the others: no host event with that correlation in the trace, or the
    # host event (the launch) starts at/after the last ProfilerStep's start (its end with
    # --include-last-profiler-step): Trace._filter_irrelevant_gpu_kernels.
    launch = (ev_b.filter(~gpu & (pl.col("_corr") >= 0))
              .group_by(correlation="_corr").agg(launch_ns=pl.col("start_ns").min()))
    steps = ev.filter(pl.col("name").str.starts_with("ProfilerStep"))
    last = (steps["end_ns"].max() if include_last else steps["start_ns"].max()) \
        if steps.height else None
    dropped = keyed.filter(~pl.col("hta")).join(launch, on="correlation", how="left")
    no_launch = dropped.filter(pl.col("launch_ns").is_null())
    late_expr = ((pl.col("launch_ns") > last) if include_last
                 else (pl.col("launch_ns") >= last)) if last is not None else pl.lit(False)
    late = dropped.filter(pl.col("launch_ns").is_not_null() & late_expr)
    counts = (keyed.group_by("stream").agg(
        ta_events=pl.len(), hta_kept=pl.col("hta").sum(),
        dropped_no_launch=pl.col("event_id").is_in(no_launch["event_id"].implode()).sum(),
        dropped_late=pl.col("event_id").is_in(late["event_id"].implode()).sum()))

    ev_c1 = ev_b.filter(~pl.col("event_id").is_in(no_launch["event_id"].implode()))
    ev_c = ev_b.filter(~hw | pl.col("event_id").is_in(
        keyed.filter("hta")["event_id"].implode()))

    base = int(res.get("base_ns") or 0)
    rel_s, rel_e = pl.col("start_ns") - base, pl.col("end_ns") - base
    ceil_s = base - (-rel_s // 1000) * 1000  # ceil to the µs, as math.ceil(ts)
    floor_e = base + (rel_e // 1000) * 1000  # floor to the µs, as math.floor(ts + dur)
    rounds = hw & pl.lit(bool(res.get("ns_rounding", True)))  # off: HTA_DISABLE_NS_ROUNDING=1
    ev_d = ev_c.with_columns(
        start_ns=pl.when(rounds).then(ceil_s).otherwise(pl.col("start_ns")),
        end_ns=pl.when(rounds).then(floor_e).otherwise(pl.col("end_ns")))
    # HTA keeps negative durations (a sub-µs event whose ceil(ts) > floor(end)); a union
    # cannot, so D clamps them to length 0 and E, HTA's formula, uses them as they are.
    ev_d_union = ev_d.with_columns(end_ns=pl.max_horizontal("start_ns", "end_ns"))
    e = (ev_d.filter(hw).sort("start_ns", maintain_order=True)
         .with_columns(iv=pl.col("start_ns") - pl.col("end_ns").shift(1).over("_stream"))
         .group_by(stream="_stream").agg(E=pl.col("iv").sum() / 1000))

    hta_idle = (pl.DataFrame(res["rows"], schema={"rank": pl.Int64, "stream": pl.Int64,
                                                  "idle_category": pl.String,
                                                  "idle_time": pl.Float64})
                .group_by("stream").agg(HTA=pl.col("idle_time").sum()))
    drop = ["_stream", "_corr"]
    t = _idle_per_stream(ev, "A")
    for part in (_idle_per_stream(ev_b.drop(drop), "B"), _idle_per_stream(ev_c1.drop(drop), "C1"),
                 _idle_per_stream(ev_c.drop(drop), "C"),
                 _idle_per_stream(ev_d_union.drop(drop), "D"), e, hta_idle, counts):
        t = t.join(part, on="stream", how="full", coalesce=True)
    z = lambda c: pl.col(c).fill_null(0.0)  # noqa: E731  (no lane at that step: 0 idle)
    return (t.select(pl.lit(label).alias("trace"), "stream",
                     ta_idle_us=z("A"),
                     memcpy_us=z("B") - z("A"),
                     no_launch_us=z("C1") - z("B"),
                     last_step_us=z("C") - z("C1"),
                     rounding_us=z("D") - z("C"),
                     hta_formula_us=z("E") - z("D"),
                     residual_us=(z("HTA") - z("E")).round(2),
                     hta_idle_us=z("HTA"),
                     ta_events="ta_events", hta_kept="hta_kept",
                     dropped_no_launch="dropped_no_launch", dropped_late="dropped_late",
                     hta_unmatched=pl.lit(unmatched_hta))
            .sort("stream"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="*", metavar="TRACE")
    ap.add_argument("--hta-python", default=os.environ.get("HTA_PYTHON"),
                    help="python of a venv with holistictraceanalysis (or $HTA_PYTHON)")
    ap.add_argument("--consecutive-kernel-delay", type=int, default=30,
                    help="HTA's kernel_wait threshold, in the trace's ts unit (µs); "
                         "HTA's default 30")
    ap.add_argument("--include-last-profiler-step", action="store_true",
                    help="let HTA keep the kernels of the last ProfilerStep (its default drops them)")
    ap.add_argument("--explain", action="store_true",
                    help="also print the step-by-step decomposition of each difference")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per HTA run")
    ap.add_argument("--json", metavar="FILE", help="also write the tables to FILE as JSON")
    a = ap.parse_args(argv)
    if not a.hta_python:
        ap.error("--hta-python is required (the python of HTA's own venv)")
    if not Path(a.hta_python).exists():
        ap.error(f"--hta-python {a.hta_python} does not exist")

    traces = find_traces(a.traces)
    if not traces:
        sys.exit("no traces to compare")
    hta_parts, ta_parts, why_parts, failed, versions = [], [], [], [], set()
    for label, path in traces:
        print(f"[{label}] {path}", file=sys.stderr)
        try:
            profile = ta.load(str(path))
            ta_parts.append(ta_table(label, profile))
        except Exception as exc:  # noqa: BLE001  (report it, go on with the next trace)
            print(f"[{label}] traceana failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed.append(f"{label} (traceana)")
            continue
        try:
            res = run_hta(a.hta_python, path, a.consecutive_kernel_delay,
                          a.include_last_profiler_step, a.timeout)
        except (RuntimeError, json.JSONDecodeError, OSError) as exc:
            print(f"[{label}] HTA failed: {exc}", file=sys.stderr)
            failed.append(f"{label} (HTA)")
            continue
        versions.add(res["version"])
        hta_parts.append(hta_table(label, res))
        if a.explain:
            why_parts.append(explain(label, profile, res, a.include_last_profiler_step))

    hta = pl.concat(hta_parts, how="diagonal_relaxed") if hta_parts else pl.DataFrame(
        schema={"trace": pl.String, "rank": pl.Int64, "stream": pl.Int64,
                "hta_idle_us": pl.Float64})
    tan = pl.concat(ta_parts, how="diagonal_relaxed") if ta_parts else pl.DataFrame(
        schema={"trace": pl.String, "stream": pl.Int64, "ta_lane": pl.String,
                "ta_idle_us": pl.Float64})
    table = compare(hta, tan)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=400, fmt_str_lengths=60,
                   tbl_hide_dataframe_shape=True, float_precision=3):
        print(f"HTA {', '.join(sorted(versions)) or '(no run succeeded)'} "
              f"get_idle_time_breakdown(consecutive_kernel_delay={a.consecutive_kernel_delay}"
              f", include_last_profiler_step={a.include_last_profiler_step}) vs traceana gaps()"
              " per GPU stream; times in µs, diff = HTA idle - traceana idle")
        print(table.drop("rank", "ta_executions", "hta_events", strict=False))
        print(table.select(*(c for c in ("trace", "stream", "ta_lane", "rank", "hta_events",
                                         "ta_executions", "ta_lanes") if c in table.columns)))
        if why_parts:
            print("decomposition of diff_us = memcpy + no_launch + last_step + rounding + "
                  "hta_formula + residual (see bench/docs/hta-comparison.md)")
            why = pl.concat(why_parts, how="diagonal_relaxed")
            print(why)
    if failed:
        print(f"HTA failed on: {', '.join(failed)}", file=sys.stderr)
    if a.json:
        out = {"table": table.to_dicts()}
        if why_parts:
            out["explain"] = why.to_dicts()
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 1 if failed and len(failed) == len(traces) else 0


if __name__ == "__main__":
    sys.exit(main())
