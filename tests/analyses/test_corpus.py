"""`traceana info` on the shared corpus of real Kineto traces (HTA's sample data, ../shared/corpus).

Expected values come from the raw files, read here independently, and from the corpus's
SOURCE.md; never from traceana's own output.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS_DATA, one_line_error, run_cli

import trace_analyzer as ta

ABSENT = (f"../shared/corpus is absent: no {CORPUS_DATA}; the corpus tests need the shared HTA "
          "sample traces checked out beside the repository")
FILES = (sorted(str(p.relative_to(CORPUS_DATA)) for p in CORPUS_DATA.rglob("*.json*"))
         if CORPUS_DATA.is_dir() else [])
ET_FILE = "execution_trace/benchmark_simple_add_et.json.gz"

# Kineto activity types that run on a device (their pid is the device, their tid the stream).
DEVICE_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "cuda_sync",
               "gpu_user_annotation", "mtia_ccp_events"}
HARDWARE_CATS = {"kernel", "Kernel", "gpu_memset", "Memset", "mtia_ccp_events"}
NOT_EVENTS = {"Trace"}  # the profiler's own span (pid "Spans")

# From SOURCE.md: which accelerator each trace comes from (None: CPU only).
ACCELERATOR = {
    "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz": "rocm",
    "mtia_inference_trace/mtia_inference_rank_0.json.gz": "mtia",
    "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": None,
    "rank_non_gpu/rank_non_gpu.json.gz": None,
}
# SOURCE.md: these have no distributedInfo; the rank is in the file name, when anywhere.
RANK_IN_NAME = {"mtia_inference_trace/mtia_inference_rank_0.json.gz": 0}


@functools.lru_cache(maxsize=None)
def raw(rel: str) -> object:
    data = (CORPUS_DATA / rel).read_bytes()
    return orjson.loads(gzip.decompress(data) if rel.endswith(".gz") else data)


def complete_events(doc: dict) -> list[dict]:
    return [e for e in doc["traceEvents"]
            if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") not in NOT_EVENTS]


def expected_hardware_lanes(doc: dict) -> set[tuple]:
    """The (device, stream) pairs that execute kernels or memsets."""
    out = set()
    for e in complete_events(doc):
        if e.get("cat") in HARDWARE_CATS:
            args = e.get("args") or {}
            out.add((args.get("device", e["pid"]), args.get("stream", e["tid"])))
    return out


def expected_host_pids(doc: dict) -> set[int]:
    """Pids of complete events that are not a device (deviceProperties ids, device activities)."""
    devices = {d.get("id") for d in doc.get("deviceProperties") or []}
    events = complete_events(doc)
    devices |= {e["pid"] for e in events if e.get("cat") in DEVICE_CATS}
    return {e["pid"] for e in events} - devices


@functools.lru_cache(maxsize=None)
def _info_text(path: str) -> tuple[int, str, str]:
    return run_cli("info", path, "--format", "json")


def info(path: Path) -> dict:
    """``traceana info PATH --format json``, parsed (the run is cached: the corpus is read-only)."""
    code, out, err = _info_text(str(path))
    assert code == 0, f"exit {code}: {err}"
    assert err == ""
    return json.loads(out)


def only_run(path: Path) -> dict:
    runs = info(path)["runs"]
    assert len(runs) == 1
    return runs[0]


def params(*, kineto_only: bool = False):
    if not FILES:
        return [pytest.param(None, marks=pytest.mark.skip(reason=ABSENT))]
    out = []
    for rel in FILES:
        if kineto_only and rel == ET_FILE:
            continue
        out.append(pytest.param(rel, id=rel))
    return out


@pytest.mark.parametrize("rel", params())
def test_info_on_each_corpus_file(corpus, rel):
    doc = raw(rel)
    if not (isinstance(doc, dict) and "traceEvents" in doc):
        # SOURCE.md: the Chakra execution trace is not a Kineto trace: named alone, it is
        # refused with a line that says what it is (issue 15)
        assert rel == ET_FILE
        line = one_line_error(*run_cli("info", corpus / rel))
        assert "a PyTorch execution trace (Chakra), not a timing trace" in line, line
        return
    run = only_run(corpus / rel)
    events = complete_events(doc)
    assert run["events"] == len(events)
    assert run["dropped"] == {}
    assert run["warnings"] == []  # every corpus trace has a base or epoch-µs timestamps

    # lanes by kind: consistent with the lane list, kinds known to the schema
    lanes = {lane["lane"]: lane for lane in run["lanes"]}
    assert set(run["lanes_by_kind"]) <= set(ta.LANE_KINDS)
    for kind, names in run["lanes_by_kind"].items():
        for name in names:
            assert kind in lanes[name]["kinds"]
    assert sum(lane["events"] for lane in lanes.values()) == len(events)

    # hardware lanes: one per device stream that runs kernels, from the right accelerator
    hw = expected_hardware_lanes(doc)
    assert run["hardware_lanes"] == len(hw)
    accel = ACCELERATOR.get(rel, "cuda")
    assert (accel is None) == (len(hw) == 0)  # SOURCE.md and the raw file agree
    hw_lanes = run["lanes_by_kind"].get("hardware", [])
    assert {lanes[name]["source"] for name in hw_lanes} == ({accel} if accel else set())
    for device, stream in hw:
        assert any(name.endswith(f":{device}/stream:{stream}") for name in hw_lanes), (device, stream)
    if not hw:
        assert any("no hardware lanes" in n for n in run["notes"])

    # clock: epoch ns, from baseTimeNanoseconds or from epoch-µs timestamps
    base = doc.get("baseTimeNanoseconds") or 0
    starts = [base + round(e["ts"] * 1000) for e in events]
    ends = [s + round(e.get("dur", 0) * 1000) for s, e in zip(starts, events)]
    assert run["start_ns"] == min(starts)
    assert run["end_ns"] == max(ends)
    assert run["start_ns"] > 1_500_000_000 * 10**9  # after 2017: really epoch-aligned

    # rank: distributedInfo when present, else the file name, else none
    dist = (doc.get("distributedInfo") or {}).get("rank")
    if dist is not None:
        want = (dist, "distributedInfo")
    elif rel in RANK_IN_NAME:
        want = (RANK_IN_NAME[rel], "file name")
    else:
        want = (None, None)
    assert {(p["rank"], p["rank_origin"]) for p in run["processes"]} == {want}


@pytest.mark.parametrize("rel", params(kineto_only=True))
def test_processes_are_the_host_processes(corpus, rel):
    doc = raw(rel)
    run = only_run(corpus / rel)
    assert {p["pid"] for p in run["processes"]} == expected_host_pids(doc)


def test_cpu_only_traces_have_no_hardware_lanes(corpus):
    for rel in ("cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
                "rank_non_gpu/rank_non_gpu.json.gz"):
        cats = {e.get("cat") for e in complete_events(raw(rel))}
        assert cats <= {"cpu_op", "user_annotation"}  # SOURCE.md: CPU only
        run = only_run(corpus / rel)
        assert run["hardware_lanes"] == 0 and "hardware" not in run["lanes_by_kind"]
        assert any("no hardware lanes" in n for n in run["notes"])


def test_old_kineto_names_kernel_is_hardware(corpus):
    rel = "trace_file_list/inference_rank_1.json.gz"
    events = complete_events(raw(rel))
    kernels = [e for e in events if e["cat"] == "Kernel"]
    host_pid = {e["pid"] for e in events if e["cat"] == "Runtime"}.pop()
    assert kernels and "baseTimeNanoseconds" not in raw(rel)
    run = only_run(corpus / rel)
    want = {f"PID:{host_pid}/GPU:{k['args']['device']}/stream:{k['args']['stream']}"
            for k in kernels}
    assert set(run["lanes_by_kind"]["hardware"]) == want
    assert run["lanes_by_kind"]["runtime"] == [f"PID:{host_pid}/TID:{host_pid}"]
    # the async_gpu flows (old name of ac2g) end on each kernel: id == the kernel's correlation
    ev = ta.load(corpus / rel).events
    flows = {r["correlation"]: r["flow_ids"] for r in ev.filter(ev["category"] == "Kernel").to_dicts()}
    ends = {e["id"] for e in raw(rel)["traceEvents"] if e.get("ph") == "f"}
    assert {c: f for c, f in flows.items() if c in ends} == {c: [c] for c in ends}


def test_triton_launch_and_kernel_share_the_flow(corpus):
    rel = "triton_example/triton_example.json.gz"
    doc = raw(rel)
    starts = {e["id"]: e for e in doc["traceEvents"] if e.get("ph") == "s"}
    finishes = {e["id"]: e for e in doc["traceEvents"] if e.get("ph") == "f"}
    ev = ta.load(corpus / rel).events
    for fid, s in starts.items():
        launch = ev.filter((ev["tid"] == s["tid"]) & ev["flow_ids"].list.contains(fid))
        assert launch["category"].to_list() in (["cuda_runtime"], ["cuda_driver"]), fid
        if fid in finishes:
            dev = ev.filter(ev["lane_kind"].cast(str).is_in(["hardware", "transfer", "sync"])
                            & ev["flow_ids"].list.contains(fid))
            assert dev.height == 1, fid


def test_trace_filter_folder_is_one_run_of_two_ranks(corpus):
    folder = corpus / "trace_filter"
    want = {}
    for p in sorted(folder.glob("*.json.gz")):
        doc = raw(str(p.relative_to(corpus)))
        pids = {e["pid"] for e in complete_events(doc) if e.get("cat") == "cpu_op"}
        assert len(pids) == 1
        want[pids.pop()] = doc["distributedInfo"]["rank"]
    assert sorted(want.values()) == [0, 1]
    run = only_run(folder)
    got = {p["pid"]: (p["rank"], p["rank_origin"]) for p in run["processes"]}
    assert got == {pid: (rank, "distributedInfo") for pid, rank in want.items()}


def test_execution_trace_folder_succeeds(corpus):
    folder = corpus / "execution_trace"
    doc = raw(ET_FILE)
    assert "traceEvents" not in doc and "nodes" in doc  # SOURCE.md: Chakra ET
    run = only_run(folder)
    by_path = {Path(s["path"]).name: s for s in run["sources"]}
    et = by_path["benchmark_simple_add_et.json.gz"]
    trace = by_path["benchmark_simple_add_trace.json.gz"]
    assert (et["format"], et["read"], et["events"]) == ("execution-trace", False, 0)
    assert (trace["format"], trace["read"]) == ("kineto-json", True)
    n = len(complete_events(raw("execution_trace/benchmark_simple_add_trace.json.gz")))
    assert run["events"] == n


def test_whole_corpus_folder(corpus):
    runs = info(corpus)["runs"]
    kineto = [rel for rel in FILES if isinstance(raw(rel), dict) and "traceEvents" in raw(rel)]
    assert sum(r["events"] for r in runs) == sum(len(complete_events(raw(rel))) for rel in kineto)
    # one run per folder holding traces
    assert len(runs) == len({str(Path(rel).parent) for rel in FILES})
