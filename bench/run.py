"""Wall time and peak RSS of `traceana gaps` on large Kineto traces, optionally beside HTA's.

    .venv/bin/python bench/run.py /tmp/trace-10mb.json /tmp/trace-100mb.json
    .venv/bin/python bench/run.py --gen 10 100                # generate into a temp folder first
    .venv/bin/python bench/run.py --gen 10 100 --gzip         # ... gzipped (.json.gz)
    .venv/bin/python bench/run.py --hta /tmp/hta-venv/bin/python /tmp/trace-10mb.json
    .venv/bin/python bench/run.py --hta /tmp/hta-venv/bin/python --hta-max-mb 200 \\
        --hta-timeout 1800 --gen 10 100 1000

Each input is analysed --runs times (2 by default), one after the other (cold: the first run,
with the file just written and so in the page cache; warm: the second), by
`traceana gaps FILE --format json -o TMP.json --no-cache` (--format changes the output
format). With --cache, two more runs follow with `--cache-dir` set to a fresh folder: the
first reads the trace and writes the analysis cache, the second is answered from it. Each run happens in a fresh Python wrapper
process that starts traceana and reads `resource.getrusage(RUSAGE_CHILDREN)`, so the peak RSS
is traceana's own (ru_maxrss) and the wall time covers its start-up, the load, the linking,
the gaps and the JSON write. Events are the trace's records (`"ph":` keys).

With --hta PYTHON (the python of a venv with HolisticTraceAnalysis 0.5.0; HTA is not a
dependency of traceana, see bench/README.md), each trace is then also analysed by HTA,
--hta-runs times (1 by default), in the same kind of wrapper: PYTHON runs a small script that
builds `TraceAnalysis(trace_dir=DIR)` over a temporary folder holding only a symlink to the
trace (HTA reads a folder; it takes the rank from the trace's distributedInfo, else 0) and
calls `get_idle_time_breakdown(ranks=..., visualize=False)`. Its wall time covers the
interpreter and HTA's imports, HTA's parse of the whole file and the breakdown. A second table,
printed after the first, gives HTA's seconds, MB/s, events/s, peak RSS and RSS / file size,
and `HTA s / traceana s`: HTA's seconds over traceana's last (warm) run's, i.e. how many
times faster traceana is end to end. An HTA run that passes --hta-timeout (900 s) is killed
and shows as "timeout"; one that fails (HTA raises, or the kernel kills it for memory) shows
as "failed (exit N)" (N < 0: killed by signal -N) and its stderr's end goes to stderr. Traces
over --hta-max-mb (file size) are not given to HTA ("skipped"). Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

# argv: timeout_s, then the command. Runs it once and prints {"wall_s", "maxrss_kb", "rc",
# "timeout", "stdout", "stderr"} as JSON; on timeout the command is killed (subprocess.run).
WRAPPER = r"""
import json, resource, subprocess, sys, time
timeout = float(sys.argv[1])
t0 = time.perf_counter()
try:
    p = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=timeout)
    rc, out, err, timed_out = p.returncode, p.stdout, p.stderr, False
except subprocess.TimeoutExpired as e:
    rc, timed_out = None, True
    out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "maxrss_kb": ru.ru_maxrss, "rc": rc, "timeout": timed_out,
                  "stdout": out[-2000:], "stderr": err[-2000:]}))
"""

# Runs under HTA's python: argv = trace. Prints one JSON line, {"ranks", "streams", "idle_us"}.
# Same approach as bench/hta_compare.py: a folder that holds this trace alone (a symlink),
# the rank from distributedInfo (else 0), no plots.
HTA_SCRIPT = r"""
import json, os, sys, tempfile
trace = os.path.abspath(sys.argv[1])
from hta.trace_analysis import TraceAnalysis
with tempfile.TemporaryDirectory(prefix="hta-bench-") as d:
    os.symlink(trace, os.path.join(d, os.path.basename(trace)))
    a = TraceAnalysis(trace_dir=d)
    ranks = sorted(a.t.get_ranks())
    df, _ = a.get_idle_time_breakdown(ranks=ranks, visualize=False)
    print(json.dumps({"ranks": [int(r) for r in ranks],
                      "streams": int(df[["rank", "stream"]].drop_duplicates().shape[0]),
                      "idle_us": float(df["idle_time"].sum())}))
"""


def size_mb(path: Path) -> float:
    """The input's size in MB: a file's, or the sum of a folder's files (an Explorer export)."""
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
    return path.stat().st_size / 1e6


def count_events(path: Path) -> int:
    """Records in the trace: occurrences of the `"ph":` key, read in chunks; in a folder, the
    rows of its SystemProfileEvents Parquet tables."""
    if path.is_dir():
        files = sorted(path.rglob("SystemProfileEvents*.parquet"))
        return sum(pl.scan_parquet(f).select(pl.len()).collect().item() for f in files)
    opener = gzip.open if path.suffix == ".gz" else open
    n, tail = 0, b""
    with opener(path, "rb") as f:
        while chunk := f.read(1 << 24):
            buf = tail + chunk
            n += buf.count(b'"ph":')
            tail = buf[-4:]
    return n


def wrapped(cmd: list[str], timeout: float, cwd: str | None = None,
            env: dict | None = None) -> dict:
    """Run cmd in a fresh wrapper process; return the wrapper's JSON."""
    proc = subprocess.run([sys.executable, "-c", WRAPPER, str(timeout), *cmd],
                          capture_output=True, text=True, timeout=timeout + 60, cwd=cwd, env=env)
    if proc.returncode != 0:
        sys.exit(f"wrapper failed on {cmd}: {proc.stderr}")
    return json.loads(proc.stdout)


def run_once(exe: Path, trace: Path, out: Path, timeout: float, fmt: str = "json",
             cache_dir: Path | None = None) -> dict:
    cache = ["--cache-dir", str(cache_dir)] if cache_dir else ["--no-cache"]
    res = wrapped([str(exe), "gaps", str(trace), "--format", fmt, "-o", str(out), *cache], timeout)
    if res["timeout"]:
        sys.exit(f"traceana gaps {trace}: timed out after {timeout:g} s (--timeout)")
    if res["rc"] != 0:
        sys.exit(f"traceana gaps {trace}: exit {res['rc']}: {res['stderr']}")
    return res


def run_hta(python: str, trace: Path, timeout: float) -> dict:
    """One HTA run; adds "status": "ok", "timeout" or "failed (exit N)"."""
    with tempfile.TemporaryDirectory(prefix="hta-cwd-") as cwd:  # whatever HTA writes
        res = wrapped([python, "-c", HTA_SCRIPT, str(trace.resolve())], timeout, cwd=cwd,
                      env={**os.environ, "MPLBACKEND": "Agg"})
    if res["timeout"]:
        res["status"] = "timeout"
    elif res["rc"] != 0:
        res["status"] = f"failed (exit {res['rc']})"
    else:
        try:
            res["result"] = json.loads(res["stdout"].strip().splitlines()[-1])
            res["status"] = "ok"
        except (json.JSONDecodeError, IndexError):
            res["status"] = "failed (no result)"
    if res["status"] != "ok":
        tail = "\n".join(res["stderr"].strip().splitlines()[-8:])
        print(f"HTA on {trace.name}: {res['status']}\n{tail}", file=sys.stderr)
    return res


def hta_version(python: str) -> str:
    try:
        p = subprocess.run([python, "-c", "from importlib.metadata import version as v; "
                            "from importlib.metadata import PackageNotFoundError as E\n"
                            "def h():\n"
                            " for n in ('traceinsight', 'HolisticTraceAnalysis'):\n"
                            "  try: return v(n)\n"
                            "  except E: pass\n"
                            "print(h(), v('pandas'))"],
                           capture_output=True, text=True, timeout=60)
    except OSError as exc:
        sys.exit(f"--hta {python}: {exc}")
    if p.returncode != 0:
        sys.exit(f"--hta {python}: cannot read HolisticTraceAnalysis's version:\n{p.stderr}")
    hta, pandas = p.stdout.split()
    if int(pandas.split(".")[0]) >= 3:
        print(f"warning: {python} has pandas {pandas}. HTA 0.5.0 predates pandas 3 and fails "
              "under it (TypeError: Invalid value ... for dtype 'int16' in "
              "transform_correlation_to_index) on traces of over 32767 events whose correlation "
              "ids stay under 32768, e.g. the generated 10 and 100 MB ones; "
              "pip install 'pandas<3' in that venv", file=sys.stderr)
    return f"HTA {hta} (pandas {pandas})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*", type=Path,
                    help="Kineto traces (.json, .json.gz) or profile folders (Explorer Parquet)")
    ap.add_argument("--gen", type=float, nargs="+", default=[], metavar="MB",
                    help="also generate traces of these sizes with bench/gen_kineto.py")
    ap.add_argument("--gzip", action="store_true", help="gzip the generated traces")
    ap.add_argument("--format", default="json", choices=["json", "table", "markdown", "csv"],
                    help="traceana's output format (written to a temporary file)")
    ap.add_argument("--cache", action="store_true",
                    help="after the runs without the cache, run twice with --cache-dir (a fresh "
                         "temporary folder): the first writes the cache, the second reads it")
    ap.add_argument("--runs", type=int, default=2, help="traceana runs per trace (first is 'cold')")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per traceana run")
    ap.add_argument("--hta", metavar="PYTHON",
                    help="python of a venv with HolisticTraceAnalysis 0.5.0: also time HTA's "
                         "get_idle_time_breakdown on each trace")
    ap.add_argument("--hta-runs", type=int, default=1, help="HTA runs per trace (default 1)")
    ap.add_argument("--hta-timeout", type=float, default=900,
                    help="seconds per HTA run; past it HTA is killed (default 900)")
    ap.add_argument("--hta-max-mb", type=float, metavar="MB",
                    help="skip HTA on traces larger than this (file size, MB)")
    args = ap.parse_args()
    if args.runs < 1 or args.hta_runs < 1:
        ap.error("--runs and --hta-runs must be at least 1")
    if args.hta and not Path(args.hta).exists():
        ap.error(f"--hta {args.hta} does not exist")
    exe = Path(sys.executable).with_name("traceana")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with tempfile.TemporaryDirectory() as tmp:
        traces = list(args.traces)
        if args.gen:
            sys.path.insert(0, str(Path(__file__).parent))
            import gen_kineto
            for mb in args.gen:
                p = Path(tmp) / f"trace-{mb:g}mb.json{'.gz' if args.gzip else ''}"
                gen_kineto.write(p, mb, gz=args.gzip)
                traces.append(p)
        if not traces:
            ap.error("give TRACE files or --gen MB")
        print(f"{platform.python_implementation()} {platform.python_version()}, "
              f"polars {pl.__version__}, {cores} cores ({platform.machine()})"
              + (f"; {hta_version(args.hta)}" if args.hta else ""))
        print("| trace | file MB | events | run | seconds | MB/s | events/s | peak RSS MB "
              "| RSS / file |")
        print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
        out = Path(tmp) / "gaps.json"
        hta_rows = []
        for trace in traces:
            mb = size_mb(trace)
            events = count_events(trace)
            cache_dir = Path(tmp) / f"cache-{trace.name}"
            plan = [("cold" if i == 0 else "warm" if args.runs == 2 else f"warm {i}", None)
                    for i in range(args.runs)]
            if args.cache:
                plan += [("cache: first", cache_dir), ("cache: second", cache_dir)]
            for label, cdir in plan:
                res = run_once(exe, trace, out, args.timeout, args.format, cdir)
                rss_mb = res["maxrss_kb"] * 1024 / 1e6  # Linux reports ru_maxrss in KiB
                print(f"| {trace.name} | {mb:.1f} | {events:,} | {label} | {res['wall_s']:.2f} "
                      f"| {mb / res['wall_s']:.1f} | {events / res['wall_s']:,.0f} "
                      f"| {rss_mb:,.0f} | {rss_mb / mb:.1f}× |", flush=True)
                if label == plan[args.runs - 1][0]:
                    ta_s = res["wall_s"]  # the last run without the cache
                if label == "cache: second":
                    print(f"(second analysis with the cache: {ta_s / res['wall_s']:.1f}× faster "
                          "than without)", file=sys.stderr, flush=True)
            if not args.hta:
                continue
            if args.hta_max_mb is not None and mb > args.hta_max_mb:
                hta_rows.append(f"| {trace.name} | {mb:.1f} | {events:,} | | skipped "
                                f"(> --hta-max-mb {args.hta_max_mb:g}) | | | | | {ta_s:.1f} | |")
                continue
            for i in range(args.hta_runs):
                print(f"HTA on {trace.name} ({mb:.1f} MB), run {i + 1}/{args.hta_runs}...",
                      file=sys.stderr, flush=True)
                h = run_hta(args.hta, trace, args.hta_timeout)
                label = "cold" if i == 0 else "warm" if args.hta_runs == 2 else f"warm {i}"
                rss_mb = h["maxrss_kb"] * 1024 / 1e6
                if h["status"] == "ok":
                    s = h["wall_s"]
                    r = h["result"]
                    print(f"HTA on {trace.name}: {s:.1f} s, ranks {r['ranks']}, "
                          f"{r['streams']} streams, idle {r['idle_us']:,.1f} µs",
                          file=sys.stderr, flush=True)
                    hta_rows.append(
                        f"| {trace.name} | {mb:.1f} | {events:,} | {label} | {s:.1f} "
                        f"| {mb / s:.2f} | {events / s:,.0f} | {rss_mb:,.0f} "
                        f"| {rss_mb / mb:.1f}× | {ta_s:.1f} | {s / ta_s:.1f}× |")
                else:  # the peak RSS is still HTA's, up to where it stopped
                    hta_rows.append(
                        f"| {trace.name} | {mb:.1f} | {events:,} | {label} | {h['status']} "
                        f"(after {h['wall_s']:.0f} s) | | | {rss_mb:,.0f} | {rss_mb / mb:.1f}× "
                        f"| {ta_s:.1f} | |")
                    break  # a second try would only fail the same way
        if args.hta:
            print()
            print("| trace | file MB | events | HTA run | HTA seconds | HTA MB/s | HTA events/s "
                  "| HTA peak RSS MB | RSS / file | traceana s (last run) | HTA s / traceana s |")
            print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
            print("\n".join(hta_rows), flush=True)


if __name__ == "__main__":
    main()
