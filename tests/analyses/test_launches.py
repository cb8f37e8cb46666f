"""`traceana launches` (questions/launches/analysis.py) against figures this test computes itself: on
real CUDA and ROCm traces from the raw JSON (launches paired with their device work by
``correlation``, per stream), on the Neuron fixture from its generator's constants, and on a
tiny trace whose queue passes CUDA's bound. Nothing here is taken from traceana's output.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import statistics
import sys
from pathlib import Path

import pytest
from conftest import run_cli

import trace_analyzer as ta
from trace_analyzer.questions.launches.analysis import POINTS, launches

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "corpus"
DLRM0 = SHARED / "real/param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json.gz"
MI300 = SHARED / "real/tracelens/mi300_resnet/resnet_act_checkpoint.json.gz"
NAIVE = REPO / "fixtures" / "rmsnorm_naive"
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    return path


def ns(us: float) -> int:
    return round(us * 1000)


def expected(path: Path) -> dict[int, dict[str, int]]:
    """Per stream from the raw JSON: launches, median and max of kernel ts − launch ts (ns),
    and the longest queue (+1 at the launch's ts, −1 at the work's end)."""
    with gzip.open(path, "rt") as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    calls = {e["args"]["correlation"]: e for e in ev
             if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})}  # fmt: skip
    per: dict[int, list[tuple[dict, dict]]] = {}
    for e in ev:
        call = calls.get(e.get("args", {}).get("correlation"))
        if e.get("cat") in DEVICE_CATS and call is not None and e["dur"] > 0:
            per.setdefault(e["args"]["stream"], []).append((call, e))
    out = {}
    for stream, pairs in per.items():
        waits = [ns(k["ts"]) - ns(c["ts"]) for c, k in pairs]
        out[stream] = {"launches": len(pairs), "median": statistics.median(waits),
                       "max": max(waits), "queue": longest_queue(pairs)}  # fmt: skip
    return out


def longest_queue(pairs: list[tuple[dict, dict]]) -> int:
    """A plain sweep: the ends before the launches at one instant (what ended by t is gone)."""
    marks = [(ns(c["ts"]), 1) for c, _ in pairs] + [(ns(k["ts"] + k["dur"]), -1) for _, k in pairs]
    length = peak = 0
    for _, d in sorted(marks):
        length += d
        peak = max(peak, length)
    return peak


def by_stream(result) -> dict[int, dict]:
    return {int(r["lane"].rsplit(":", 1)[1]): r for r in result.lanes.to_dicts()}


@pytest.mark.parametrize("trace", [DLRM0, MI300], ids=["cuda_dlrm_rank0", "rocm_mi300"])
def test_real_traces_against_the_raw_json(trace: Path) -> None:
    want = expected(need(trace))
    result = launches(ta.load(trace))
    got = by_stream(result)
    assert set(got) == set(want)
    for stream, w in want.items():
        g = got[stream]
        assert g["launches"] == w["launches"], stream
        assert abs(g["latency_p50_ns"] - w["median"]) <= 1000, stream  # 1 µs rounding
        assert abs(g["latency_max_ns"] - w["max"]) <= 1000, stream
        assert g["queue_max"] == w["queue"], stream
        assert (g["blocked_ns"] is None) == (g["source"] != "cuda")
    # the JSON keeps at most POINTS change points a lane, and each lane's peak
    doc = result.to_json()
    for lane in {r["lane"] for r in doc["queue"]}:
        points = [p for p in doc["queue"] if p["lane"] == lane]
        assert len(points) <= POINTS
        assert max(p["length"] for p in points) == got[int(lane.rsplit(":", 1)[1])]["queue_max"]


def test_rocm_queue_passes_cudas_bound_and_is_not_called_blocked() -> None:
    want = expected(need(MI300))
    assert max(w["queue"] for w in want.values()) > 1024  # HIP queued past CUDA's bound
    result = launches(ta.load(MI300))
    assert result.lanes["blocked_ns"].null_count() == result.lanes.height
    assert any("ROCm" in n for n in result.notes)


def generator():
    script = REPO / "fixtures" / "make_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_fixtures", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_fixtures", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_neuron_fixture_latency_from_the_generator() -> None:
    g = generator()
    # nrta_execute_schedule starts SCHED_OFF into the dispatch; the NeuronCore starts after
    # the schedule, the submit, kbl_exec_pre and the hardware latency (and the H2D copy).
    base = g.SCHED_DUR + g.SUBMIT_GAP + g.SUBMIT_DUR + g.PRE_GAP + g.PRE_DUR + g.HW_LATENCY
    copies = [op.copy_ns + g.COPY_TAIL if op.copy_ns else 0 for op in g.naive_ops()]
    latencies = sorted(base + c for c in copies)
    truth = json.loads((NAIVE / "truth.json").read_text())
    result = launches(ta.load(NAIVE))
    assert result.lanes.height == 1
    row = result.lanes.row(0, named=True)
    assert row["launches"] == len(truth["executions"]) == len(latencies)
    assert row["latency_p50_ns"] == statistics.median(latencies)
    assert row["latency_max_ns"] == max(latencies)
    assert row["delay_max_ns"] == max(latencies) - g.SCHED_DUR
    assert row["latency_mean_ns"] == round(statistics.mean(latencies))
    assert row["blocked_ns"] is None and any("Neuron" in n for n in result.notes)
    # the queue: each execution launched at its schedule's start, gone at its end
    calls = {c["exec_id"]: c["dispatch_start_ns"] + g.SCHED_OFF for c in truth["calls"]}
    marks = [(calls[x["exec_id"]], 1) for x in truth["executions"]]
    marks += [(x["end_ns"], -1) for x in truth["executions"]]
    length = peak = 0
    for _, d in sorted(marks):
        length += d
        peak = max(peak, length)
    assert row["queue_max"] == peak


def kineto(path: Path, n: int) -> Path:
    """A trace of ``n`` launches 1 µs apart (0.5 µs each) on stream 7, their kernels run one
    after another from 2 ms on, 10 µs each."""
    ev = []
    for i in range(n):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": i, "dur": 0.5, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                   "ts": 2000 + 10 * i, "dur": 10,
                   "args": {"device": 0, "stream": 7, "correlation": i + 1}})  # fmt: skip
    path.mkdir()
    (path / "trace.json").write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return path


def test_full_queue_is_blocked_time(tmp_path: Path) -> None:
    n, bound = 1030, 1024
    result = launches(ta.load(kineto(tmp_path / "run", n)))
    row = result.lanes.row(0, named=True)
    # at bound from the bound-th launch (ts bound − 1 µs) until the (n − bound + 1)-th
    # kernel ends (index n − bound, at 2000 + 10·(n − bound + 1) µs)
    reached = (bound - 1) * 1000
    left = (2000 + 10 * (n - bound + 1)) * 1000
    assert row["launches"] == n and row["queue_max"] == n
    assert row["blocked_ns"] == left - reached == 1_047_000
    assert row["latency_p50_ns"] == statistics.median(2000_000 + 9000 * i for i in range(n))


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "csv"])
def test_cli_formats(fmt: str) -> None:
    code, out, err = run_cli("launches", NAIVE, "--format", fmt)
    assert code == 0, err
    if fmt == "json":
        run = json.loads(out)["runs"][0]
        assert run["lanes"][0]["launches"] == 6 and run["queue"] and run["notes"]
    elif fmt == "csv":
        lines = out.splitlines()
        assert lines[0].startswith("rank,pid,device,lane,source,launches,latency_p50_ns")
        assert len(lines) == 2
    else:
        assert "latency p50" in out and "Neuron documents no launch queue bound" in out


def test_cli_step(tmp_path: Path) -> None:
    code, out, _ = run_cli("launches", NAIVE, "--step", "3", "--format", "json")
    assert code == 0 and json.loads(out)["runs"][0]["lanes"][0]["launches"] == 6
    code, out, err = run_cli("launches", NAIVE, "--step", "9")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "ProfilerStep#9" in err
