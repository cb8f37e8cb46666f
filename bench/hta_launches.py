"""traceana launches against HTA 0.5.0's queue length and kernel launch statistics, per stream.

HTA is not a dependency of traceana: it runs in its own virtual environment, in a subprocess,
on a temporary folder holding a copy of the one trace (HTA wants a folder of rank traces), and
hands back JSON. traceana runs in-process. For each stream it prints (µs, markdown):

* HTA ``get_queue_length_summary``: the count of the time series' rows and their plain mean
  and max; the time-weighted mean of HTA's own step function (worked out here from
  ``get_queue_length_time_series``, to show where the means part); and
  ``get_time_spent_blocked_on_full_queue`` (bound 1024);
* HTA ``get_cuda_kernel_launch_stats``: pairs, median and max ``launch_delay`` (kernel start
  less the launch call's end, clipped at 0), per stream by the kernels' correlation;
* traceana ``launches``: launches, queue mean (time-weighted) and max, blocked, delay p50
  and max.

    .venv/bin/python bench/hta_launches.py --hta-python /tmp/hta-venv-l/bin/python TRACE ...

Default TRACE: the DLRM rank 0 and MI300 ResNet traces of ../shared/corpus/real.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing

import trace_analyzer as ta  # noqa: E402
from trace_analyzer.questions.launches.analysis import launches  # noqa: E402

REAL = REPO.parent / "shared" / "corpus" / "real"
DEFAULT = [
    REAL / "param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json.gz",
    REAL / "tracelens/mi300_resnet/resnet_act_checkpoint.json.gz",
]

# Runs under HTA's python: argv = folder, out.json. Times as HTA holds them (µs).
HTA_SNIPPET = r"""
import json, sys
from hta.trace_analysis import TraceAnalysis
folder, out = sys.argv[1], sys.argv[2]
a = TraceAnalysis(trace_dir=folder)
ranks = sorted(a.t.traces.keys())
series = a.get_queue_length_time_series(ranks)
summary = a.get_queue_length_summary(ranks)
blocked = a.get_time_spent_blocked_on_full_queue(series)
stats = a.get_cuda_kernel_launch_stats(ranks, visualize=False)
rows = {}
for rank, ql in series.items():
    for stream, s in ql.groupby("stream"):
        dt = s["ts"].shift(-1) - s["ts"]
        span = s["ts"].max() - s["ts"].min()
        weighted = (s["queue_length"] * dt).sum() / span if span else None
        rows[f"{rank}/{stream}"] = {"samples": int(len(s)),
            "sample_mean": float(s["queue_length"].mean()),
            "max": int(s["queue_length"].max()), "weighted_mean": weighted}
for r in blocked.to_dict("records") if blocked is not None else []:
    rows.setdefault(f"{r['rank']}/{r['stream']}", {})["blocked"] = float(
        r["duration_at_max_queue_length"])
for rank, df in stats.items():
    gpu = a.t.get_trace(rank)
    gpu = gpu[gpu["stream"].ne(-1)][["correlation", "stream"]]
    joined = df.merge(gpu, on="correlation", how="left")
    for stream, g in joined.groupby("stream"):
        rows.setdefault(f"{rank}/{int(stream)}", {}).update(
            pairs=int(len(g)), delay_median=float(g["launch_delay"].median()),
            delay_max=float(g["launch_delay"].max()))
json.dump(rows, open(out, "w"))
"""


def hta(python: str, trace: Path) -> dict[str, dict]:
    """Return HTA's figures per 'rank/stream' for one trace file."""
    with tempfile.TemporaryDirectory(prefix="hta-launches-") as d:
        folder = Path(d) / "trace"
        folder.mkdir()
        shutil.copy(trace, folder / trace.name)
        out = Path(d) / "out.json"
        subprocess.run(
            [python, "-c", HTA_SNIPPET, str(folder), str(out)],
            check=True,
            capture_output=True,
            timeout=900,
        )
        return json.loads(out.read_text())


def _us(ns: float | None) -> str:
    return "–" if ns is None else f"{ns / 1000:,.1f}"


def _v(x: object, digits: int = 1) -> str:
    if x is None:
        return "–"
    return f"{x:,.{digits}f}" if isinstance(x, float) else f"{x:,}"


def compare(python: str, trace: Path) -> list[str]:
    """Return the markdown lines of one trace's comparison."""
    theirs = hta(python, trace)
    ours = launches(ta.load(trace)).lanes.to_dicts()
    lines = [
        f"### {trace.name}",
        "",
        "| stream | HTA rows | HTA mean (rows) | HTA mean (time) | HTA max | HTA blocked "
        "| HTA pairs | HTA delay p50 | HTA delay max | traceana launches | traceana mean "
        "| traceana max | traceana blocked | traceana delay p50 | traceana delay max |",
        "|---|" + "---:|" * 14,
    ]
    for r in ours:
        stream = r["lane"].rsplit(":", 1)[1]
        h = theirs.get(f"{r['rank'] or 0}/{stream}", {})
        lines.append(
            f"| {stream} | {_v(h.get('samples'))} | {_v(h.get('sample_mean'), 3)} "
            f"| {_v(h.get('weighted_mean'), 3)} | {_v(h.get('max'))} | {_v(h.get('blocked'))} "
            f"| {_v(h.get('pairs'))} | {_v(h.get('delay_median'))} | {_v(h.get('delay_max'))} "
            f"| {r['launches']:,} | {_v(r['queue_mean'], 3)} | {r['queue_max']:,} "
            f"| {_us(r['blocked_ns'])} | {_us(r['delay_p50_ns'])} | {_us(r['delay_max_ns'])} |"
        )
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", type=Path, default=DEFAULT)
    ap.add_argument("--hta-python", default="/tmp/hta-venv-l/bin/python")
    args = ap.parse_args(argv)
    print("All times in µs; HTA's as it holds them (µs), traceana's from ns.\n")
    for trace in args.traces:
        print("\n".join(compare(args.hta_python, trace)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
