"""The Chrome array form (issue 38): a trace written as a bare JSON array of events, read by one
reader (readers/chrome_array.py), through the CLI (in-process). Early Kineto (real3/kineto_array, Dec 2020:
SOURCE.md read GPU 0 idle 40.2 % of 1,086 ms by hand), named or in its folder: its GPU idle is
the figure computed here from the raw array, and its kernels reach their runtime calls through
the old flows (``cat: "async"``, ``tid: "stream 7"``). The legacy autograd profiler's
``export_chrome_trace`` (PyTorch <= 1.7), written here in its shape, reads as host ops."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import run_cli, union_of

REAL3 = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "real3"
ARRAY = REAL3 / "kineto_array" / "resnet50_num_workers_4"


@pytest.fixture(scope="module")
def raw() -> list[dict]:
    files = sorted(ARRAY.glob("*.json.gz")) if ARRAY.is_dir() else []
    if not files:
        pytest.skip(f"{ARRAY} absent (../shared/corpus/real3: see its SOURCE.md)")
    doc = json.loads(gzip.decompress(files[0].read_bytes()))
    assert isinstance(doc, list)  # the array form: no traceEvents
    return doc


def _json(*args: object) -> dict:
    code, out, err = run_cli(*args, "--no-cache", "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    return run


def _union(spans: list[tuple[int, int]]) -> int:
    """The length of the union of ``spans`` (those that overlap or touch are one)."""
    return sum(e - s for s, e in union_of(spans, apart=0))


@pytest.mark.parametrize("named", ["file", "folder"])
def test_gpu_idle_is_the_window_less_the_kernels(raw, named):
    # ns from the raw epoch µs (integers: exact); one device, GPU 0
    xs = [(e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000, e["cat"]) for e in raw
          if e.get("ph") == "X" and e.get("cat") in ("Kernel", "Memset")]
    assert {e["args"]["device"] for e in raw if e.get("cat") == "Kernel"} == {0}
    # the window: first execution's start to the last's end (docs/gaps.md); executions are
    # kernels and memsets, and only kernels compute (a memset is memory, as a copy is)
    lo, hi = min(s for s, _, _ in xs), max(e for _, e, _ in xs)
    no_compute = (hi - lo) - _union([(s, e) for s, e, c in xs if c == "Kernel"])
    assert round(100 * no_compute / (hi - lo), 1) == 40.2 and round((hi - lo) / 1e6) == 1086
    run = _json("gaps", ARRAY / "worker0.pt.trace.json.gz" if named == "file" else ARRAY)
    s = run["summary"]
    assert s["window_ns"] == hi - lo
    assert s["idle_ns"] + s["memory_ns"] == no_compute  # idle, and copying (or memset) alone


def test_kernels_reach_their_launches_through_the_old_flows(raw, tmp_path):
    point = lambda e: (e.get("pid"), str(e.get("tid")), e.get("ts"))  # noqa: E731
    runtime = {point(e) for e in raw if e.get("ph") == "X" and e.get("cat") == "Runtime"}
    starts = {e["id"] for e in raw if e.get("ph") == "s" and e.get("cat") == "async"
              and point(e) in runtime}  # fmt: skip
    ends = {point(e): e["id"] for e in raw if e.get("ph") == "f" and e.get("cat") == "async"}
    hw = [e for e in raw if e.get("ph") == "X" and e.get("cat") in ("Kernel", "Memset")]
    flowed = sum(ends.get(point(e)) == e["args"]["correlation"] in starts for e in hw)
    assert flowed == 9042
    # the correlation args taken away: the flows alone link a kernel to its runtime call
    bare = [{**e, "args": {k: v for k, v in e["args"].items() if k != "correlation"}}
            if isinstance(e.get("args"), dict) else e for e in raw]  # fmt: skip
    (tmp_path / "trace.json").write_text(json.dumps(bare))
    for path in (ARRAY, tmp_path / "trace.json"):
        run = _json("chain", path)
        assert run["coverage"]["hardware_executions"] == len(hw)
        assert sum(r["runtime"] is not None for r in run["rows"]) == flowed
    info = _json("info", ARRAY)
    (src,) = info["sources"]
    assert src["format"] == "chrome-array"
    assert not [n for n in src["notes"] if "async" in n and "flow records" in n]  # all bound
    assert not [n for n in info["notes"] if "matched no event" in n]


# The legacy autograd profiler's export_chrome_trace (torch/autograd/profiler.py, 1.5 to 1.7):
# every op an X record with no cat under pid "CPU functions" (tid: the thread), with use_cuda
# a cpu_to_cuda flow and an X record under pid "CUDA functions" (tid: the device) per kernel
# it timed with CUDA events; ts in µs from the profile's start.
def legacy() -> list[dict]:
    def op(name, ts, dur, tid=1):
        return {"name": name, "ph": "X", "ts": ts, "dur": dur, "tid": tid,
                "pid": "CPU functions", "args": {}}  # fmt: skip

    def flow(ph, name, ts, tid, pid):
        return {"name": name, "ph": ph, "ts": ts, "tid": tid, "pid": pid, "id": 0,
                "cat": "cpu_to_cuda", "args": {}}  # fmt: skip

    return [op("aten::randn", 10.5, 20.25), op("aten::add", 40.0, 8.0),
            flow("s", "aten::add", 40.0, 1, "CPU functions"),
            flow("f", "aten::add", 45.0, 0, "CUDA functions"),
            {"name": "aten::add", "ph": "X", "ts": 45.0, "dur": 3.0, "tid": 0,
             "pid": "CUDA functions", "args": {}},
            op("aten::mul", 60.0, 5.0, tid=2)]  # fmt: skip


@pytest.mark.parametrize("named", ["file", "folder"])
def test_the_legacy_autograd_export_reads_as_host_ops(tmp_path, named):
    doc = legacy()
    (tmp_path / "trace.json").write_text(json.dumps(doc))
    path = tmp_path / "trace.json" if named == "file" else tmp_path
    ops = _json("ops", path)
    host = [e for e in doc if e["pid"] == "CPU functions" and e["ph"] == "X"]
    assert {r["name"]: r["calls"] for r in ops["rows"]} == {e["name"]: 1 for e in host}
    info = _json("info", path)
    (src,) = info["sources"]
    assert src["format"] == "chrome-array" and src["events"] == len(host)
    assert info["hardware_lanes"] == 0 and not info["warnings"]
    said = " ".join(src["notes"])
    assert "legacy autograd profiler" in said and "1 CUDA-event interval " in said
    assert "µs from the profile's start" in said
