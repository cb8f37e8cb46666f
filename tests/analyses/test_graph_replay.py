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
