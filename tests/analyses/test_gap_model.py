"""The gap model on real GPU traces (issue 16), checked against figures this test computes
from the raw JSON in a few plain lines: per stream, the kernels' busy intervals, each gap,
the next kernel's launch (the runtime call with its correlation) against the previous end.

- a gap most of which the next kernel's launch call still held, the call's time in it at
  least 5 times the run's median launch call (and over 5 µs), is ``launch_blocked``;
- a gap whose next kernel was launched after the previous one ended but then sat queued for
  most of it (over 5 µs) is not ``host_dispatch``: the device held it;
- else a gap whose next kernel was launched after the previous one ended is ``host_dispatch``;
- a gap inside one graph replay (both kernels carry the graph launch's correlation) is
  ``graph``; a queued gap of at most 5 µs is ``launch_latency``;
- no gap is ``transfer`` unless a copy ran on its stream during it;
- a stream of NCCL/RCCL kernels is a communication lane: its gaps are ``collective``;
- no gap of 1 ns or less is listed (below the clock's resolution).
"""

from __future__ import annotations

import gzip
import json
import statistics
from decimal import Decimal
from pathlib import Path

import pytest

import trace_analyzer as ta

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
TRACES = [
    "hta/tests/data/critical_path/simple_add",
    "hta/tests/data/critical_path/alexnet",
    "hta/tests/data/amd_trace",
    "hta/tests/data/nccl_parser_config",
    "real/tracelens/b200_eager",
    "real/tracelens/h100_bert",
    "real/tracelens/mi300_resnet",
    "real/tracelens/sglang_decode",
    "real/tracelens/torch_compile_triton",
    "real/param/dlrm_kineto",
]
HW = {"kernel", "Kernel", "gpu_memset", "Memset"}
COPIES = {"gpu_memcpy", "Memcpy"}
LAUNCHES = {"cuda_runtime", "cuda_driver", "Runtime"}
LATENCY_NS = 5_000


def ns(ts: float, base: int) -> int:
    return int(Decimal(repr(ts)) * 1000) + base


def raw_gaps(path: Path) -> list[dict]:
    """Every gap of every stream of one trace file, from the raw JSON: start, end, whether
    the next kernel was launched after the previous ended, whether both come from one graph
    launch, and whether a copy ran on the stream during the gap."""
    doc = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
    base = int(doc.get("baseTimeNanoseconds", 0))
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    launch = {e["args"]["correlation"]: e for e in xs
              if e.get("cat") in LAUNCHES and "correlation" in e.get("args", {})}
    streams: dict[tuple, list] = {}
    copies: dict[tuple, list] = {}
    for e in xs:
        where = (e["pid"], e["tid"])
        span = (ns(e["ts"], base), ns(e["ts"], base) + round(e["dur"] * 1000), e)
        if e.get("cat") in HW:
            streams.setdefault(where, []).append(span)
        elif e.get("cat") in COPIES:
            copies.setdefault(where, []).append(span)
    out = []
    for where, spans in streams.items():
        spans.sort(key=lambda s: (s[0], s[1]))
        end, last = spans[0][1], spans[0][2]
        names = [s[2]["name"] for s in spans]
        comm = sum("nccl" in n.lower() or "rccl" in n.lower() for n in names) >= len(names) / 2
        for s0, s1, e in spans[1:]:
            if s0 > end:
                nxt = launch.get(e.get("args", {}).get("correlation"))
                prev = launch.get(last.get("args", {}).get("correlation"))
                out.append({
                    "stream": where, "start": end, "end": s0, "comm": comm,
                    "launch": None if nxt is None else ns(nxt["ts"], base),
                    "launch_end": None if nxt is None
                    else ns(nxt["ts"], base) + round(nxt["dur"] * 1000),
                    "graph": nxt is not None and nxt is prev and "GraphLaunch" in nxt["name"],
                    "copy": any(c0 < s0 and c1 > end for c0, c1, _ in copies.get(where, [])),
                })
            if s1 >= end:
                end, last = s1, e
    return out


def launch_times(path: Path) -> list[int]:
    """The times (ns) of the launch calls of one trace file that launch a kernel or memset."""
    doc = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    launched = {e.get("args", {}).get("correlation") for e in xs if e.get("cat") in HW}
    return [round(e["dur"] * 1000) for e in xs if e.get("cat") in LAUNCHES
            and e.get("args", {}).get("correlation") in launched - {None}]


def traceana_gaps(folder: Path) -> dict[tuple[int, int], str]:
    """traceana's lane gaps of every run under ``folder``: (start, end) -> cause."""
    got = {}
    for p in ta.load_runs(folder, cache=False):
        g = ta.gaps(p).gaps
        if g.height:
            got.update({(a, b): c for a, b, c in g.select("start_ns", "end_ns", "cause").rows()})
    return got


@pytest.mark.parametrize("trace", TRACES)
def test_causes_follow_the_launch_times_in_the_raw_file(trace):
    folder = CORPUS / trace
    files = sorted(folder.glob("*.json*")) if folder.is_dir() else []
    if not files:
        pytest.skip(f"{folder} is absent: the shared corpus is not checked out beside the repo")
    got = traceana_gaps(folder)
    raw = [g for f in files for g in raw_gaps(f)]
    listed = [g for g in raw if g["end"] - g["start"] > 1]
    assert {(g["start"], g["end"]) for g in listed} <= set(got), "a gap traceana does not list"
    assert all(b - a > 1 for a, b in got), "a gap of 1 ns or less is listed"
    typical = statistics.median(t for f in files for t in launch_times(f))
    wrong = []
    for g in listed:
        cause = got[(g["start"], g["end"])]
        if g["launch"] is not None:  # the launch call's own time inside the gap
            held = min(g["launch_end"], g["end"]) - max(g["launch"], g["start"])
        if g["comm"]:
            expect = "collective"
        elif g["launch"] is None:
            continue  # nothing says when it was launched
        elif 2 * held >= g["end"] - g["start"] and held >= 5 * typical and held > LATENCY_NS:
            expect = "launch_blocked"
        elif 2 * (wait := g["end"] - max(g["launch_end"], g["start"])) >= g["end"] - g["start"] \
                and wait > LATENCY_NS and g["launch"] >= g["start"]:
            # launched late, then held on the device for most of the gap: not the host
            assert cause not in ("host_dispatch", "launch_latency"), g
            continue
        elif g["launch"] >= g["start"]:
            expect = "host_dispatch"
        elif g["graph"]:
            expect = "graph"
        elif g["end"] - g["start"] <= LATENCY_NS:
            expect = "launch_latency"
        else:
            assert cause != "host_dispatch", g
            assert cause != "transfer" or g["copy"], g
            continue
        if cause != expect:
            wrong.append((g["stream"], g["start"], g["end"] - g["start"], cause, expect))
    assert not wrong, f"{len(wrong)} of {len(listed)} gaps: {wrong[:5]}"
