"""CUDA/HIP graph replay (issue 15): the kernels of a graph launch that no op contains belong
to the Python function the replay was called from, as ``graph replay (<function>)``.

Expectations come from the trace the test writes (or, for the corpus, from the raw JSON:
the kernels whose ``correlation`` is the graph launch's), never from traceana's output.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import X, kineto, write_trace

import trace_analyzer as ta

BASE = 1_793_620_800_000_000_000
HOST = 4242
REPLAY = "torch/cuda/graphs.py(139): replay"
SGLANG = Path(__file__).resolve().parents[2].parent / "shared/corpus/real/tracelens/sglang_decode"


def replay_trace(tmp_path: Path, *, inside_op: bool) -> tuple[Path, dict[str, int]]:
    """A step that replays a graph of three kernels from Python (or from inside aten::copy_),
    and one ordinary kernel of aten::mm; returns the trace and the kernels' durations by op."""
    outer = [X("python_function", "model_runner.py(10): forward", 0, 2000, pid=HOST, tid=HOST),
             X("python_function", REPLAY, 100, 900, pid=HOST, tid=HOST)]
    if inside_op:
        outer.append(X("cpu_op", "aten::copy_", 150, 500, pid=HOST, tid=HOST,
                       **{"External id": 5}))
    events = [
        *outer,
        X("cuda_runtime", "cudaGraphLaunch", 200, 300, pid=HOST, tid=HOST, correlation=40),
        *(X("kernel", f"k{i}", 600 + 100 * i, 50, pid=0, tid=7, device=0, stream=7,
            correlation=40) for i in range(3)),
        X("cpu_op", "aten::mm", 1100, 100, pid=HOST, tid=HOST, **{"External id": 9}),
        X("cuda_runtime", "cudaLaunchKernel", 1110, 5, pid=HOST, tid=HOST, correlation=41,
          **{"External id": 9}),
        X("kernel", "gemm", 1300, 70, pid=0, tid=7, device=0, stream=7, correlation=41),
    ]
    replayed = "aten::copy_" if inside_op else f"graph replay ({REPLAY})"
    path = write_trace(tmp_path / "trace.json", kineto(events, baseTimeNanoseconds=BASE))
    return path, {replayed: 3 * 50, "aten::mm": 70}


@pytest.mark.parametrize("inside_op", [False, True])
def test_replayed_kernels_belong_to_the_launch_s_op_or_function(tmp_path, inside_op):
    path, device_us = replay_trace(tmp_path, inside_op=inside_op)
    p = ta.load(path)
    chain = ta.chains(p)
    assert chain.coverage["linked_pct"] == 100.0
    rows = {r["hw_name"]: (r["op"], r["link_method"]) for r in chain.table.to_dicts()}
    replayed = next(op for op in device_us if op != "aten::mm")
    for k in ("k0", "k1", "k2"):
        assert rows[k] == (replayed, "time" if inside_op else "graph"), rows  # the weakest hop
    assert rows["gemm"][0] == "aten::mm"
    got = {r["name"]: r["device_us"] for r in ta.ops(p).table.to_dicts() if r["device_us"]}
    assert got == pytest.approx(device_us)


def test_no_gap_between_replayed_kernels_is_uncorrelated(tmp_path):
    path, _ = replay_trace(tmp_path, inside_op=False)
    g = ta.gaps(ta.load(path))
    assert g.gaps.height == 3  # between k0, k1, k2 and gemm
    assert g.gaps["next_op"].null_count() == 0
    assert "uncorrelated" not in g.gaps["cause"].to_list()


def test_sglang_decode_links_its_graph_replay():
    files = sorted(SGLANG.glob("*.json.gz")) if SGLANG.is_dir() else []
    if not files:
        pytest.skip(f"{SGLANG} is absent: the shared corpus is not checked out beside the repo")
    raw = json.loads(gzip.decompress(files[0].read_bytes()))["traceEvents"]
    (launch,) = [e for e in raw if e.get("name") == "hipGraphLaunch"]
    replayed = sum(1 for e in raw if e.get("cat") == "kernel"
                   and e["args"].get("correlation") == launch["args"]["correlation"])
    kernels = sum(1 for e in raw if e.get("cat") == "kernel")
    chain = ta.chains(ta.load(SGLANG))
    ops = chain.table.group_by("op").len().rows()
    assert (f"graph replay ({REPLAY})", replayed) in ops, ops
    assert chain.coverage["hardware_executions"] == kernels
    assert chain.coverage["linked_pct"] >= 99.0, chain.coverage


def test_a_kernel_launched_from_python_outside_every_op_belongs_to_its_caller(tmp_path):
    """A Triton or custom kernel launched from Python, outside every aten op: its op is the
    innermost Python frame around the launch (built-in frames and Triton's launcher
    skipped)."""
    caller = "jit_kernel/clamp.py(27): clamp_position"
    events = [
        X("python_function", caller, 0, 1000, pid=HOST, tid=HOST),
        X("python_function", "triton/runtime/jit.py(708): run", 60, 900, pid=HOST, tid=HOST),
        X("python_function", "triton/backends/nvidia/driver.py(699): __call__", 80, 850,
          pid=HOST, tid=HOST),
        X("python_function", "<built-in function launch>", 100, 800, pid=HOST, tid=HOST),
        X("cuda_runtime", "hipModuleLaunchKernel", 200, 50, pid=HOST, tid=HOST, correlation=7),
        X("cuda_runtime", "hipDeviceSynchronize", 400, 50, pid=HOST, tid=HOST, correlation=8),
        X("kernel", "clamp_kernel", 300, 40, pid=0, tid=7, device=0, stream=7, correlation=7),
        X("kernel", "clamp_kernel_2", 900, 60, pid=0, tid=7, device=0, stream=7, correlation=7),
    ]
    p = ta.load(write_trace(tmp_path / "trace.json", kineto(events, baseTimeNanoseconds=BASE)))
    rows = {r["hw_name"]: (r["op"], r["link_method"]) for r in ta.chains(p).table.to_dicts()}
    assert rows == {"clamp_kernel": (f"python launch ({caller})", "python"),
                    "clamp_kernel_2": (f"python launch ({caller})", "python")}
    got = {r["name"]: r["device_us"] for r in ta.ops(p).table.to_dicts()}
    assert got == {f"python launch ({caller})": pytest.approx(40 + 60)}  # µs
    # the sync call launched nothing, so it is not linked to the frame
    names = dict(zip(p.events["event_id"], p.events["name"]))
    assert "hipDeviceSynchronize" not in {names[d] for d in p.edges["dst"]}


def test_sglang_decode_has_no_uncorrelated_gap():
    """Besides the graph replay, three kernels are launched from Python outside every op
    (found here from the raw file: launches that no cpu_op on their thread contains); each
    belongs to the innermost Python frame around its launch that is neither built-in nor
    Triton's launcher (triton/runtime/jit.py, triton/backends/.../driver.py)."""
    files = sorted(SGLANG.glob("*.json.gz")) if SGLANG.is_dir() else []
    if not files:
        pytest.skip(f"{SGLANG} is absent: the shared corpus is not checked out beside the repo")
    raw = json.loads(gzip.decompress(files[0].read_bytes()))["traceEvents"]
    xs = [e for e in raw if e.get("ph") == "X"]

    def around(e, cat):  # events of ``cat`` on e's thread containing e's start, innermost last
        found = [o for o in xs if o.get("cat") == cat and o["tid"] == e["tid"]
                 and o["pid"] == e["pid"] and o["ts"] <= e["ts"] <= o["ts"] + o["dur"]]
        return sorted(found, key=lambda o: (o["ts"], -o["dur"]))

    launches = {e["args"]["correlation"]: e for e in xs if e.get("cat") == "cuda_runtime"
                and "correlation" in e.get("args", {})}
    want = {}
    for k in (e for e in xs if e.get("cat") == "kernel"):
        launch = launches.get(k["args"].get("correlation"))
        if launch is None or "Graph" in launch["name"] or around(launch, "cpu_op"):
            continue
        frames = [f for f in around(launch, "python_function")
                  if not f["name"].startswith("<built-in")
                  and not any(f"triton/{d}/" in f["name"] for d in ("runtime", "backends"))]
        want[k["name"]] = f"python launch ({frames[-1]['name']})"
    assert len(want) == 3
    p = ta.load(SGLANG, cache=False)
    rows = {r["hw_name"]: r["op"] for r in ta.chains(p).table.to_dicts() if r["hw_name"] in want}
    assert rows == want
    g = ta.gaps(p)
    assert "uncorrelated" not in g.gaps["cause"].to_list()
    assert g.gaps["next_op"].null_count() == 0
