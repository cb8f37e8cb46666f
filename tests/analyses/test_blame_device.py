"""The device's side of each idle interval (issue 35): a kernel queued in time that then sat
on the device behind a stream wait, or while a collective ran on another stream of its GPU.

Every expectation is computed here from the raw JSON in a few plain lines (each GPU's busy
union over its compute streams, the next kernel's launch call by correlation, the stream
waits on the launching thread, the NCCL/RCCL kernels over the wait), never from traceana's
output; the figures are written in words with the same ``duration`` every output uses.
"""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

import trace_analyzer as ta
from trace_analyzer.numbers import duration

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
HW = {"kernel", "gpu_memset"}
CALLS = {"cuda_runtime", "cuda_driver"}
COMM = re.compile(r"(?i)nccl|rccl")


def trace_file(trace: str, name: str = "*.json.gz") -> tuple[list[dict], int, Path]:
    folder = CORPUS / trace
    files = sorted(folder.glob(name)) if folder.is_dir() else []
    if not files:
        pytest.skip(f"{folder} is absent: the shared corpus is not checked out beside the repo")
    doc = json.loads(gzip.decompress(files[0].read_bytes()))
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    return xs, int(doc.get("baseTimeNanoseconds", 0)), folder


def span(e: dict, base: int) -> tuple[int, int]:
    t = int(Decimal(repr(e["ts"])) * 1000) + base
    return t, t + round(Decimal(repr(e["dur"])) * 1000)


def union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def covered(spans: list[tuple[int, int]], a: int, b: int) -> int:
    return sum(max(0, min(e, b) - max(s, a)) for s, e in union(spans))


def longest_gap(xs: list[dict], base: int, device: int) -> tuple[int, int, dict]:
    """The longest gap of one GPU's compute streams (streams mostly of NCCL/RCCL kernels are
    communication lanes, outside the device's busy time), over 1 ns, and its next kernel."""
    hw = [e for e in xs if e.get("cat") in HW and e["args"].get("device") == device]
    streams: dict[int, list[dict]] = {}
    for e in hw:
        streams.setdefault(e["args"]["stream"], []).append(e)
    compute = [e for es in streams.values()
               if sum(bool(COMM.search(e["name"])) for e in es) < len(es) / 2 for e in es]
    spans = sorted((span(e, base) + (e,) for e in compute), key=lambda s: s[:2])
    best, end = None, spans[0][1]
    for s0, s1, e in spans[1:]:
        if s0 - end > 1 and (best is None or s0 - end > best[1] - best[0]):
            best = (end, s0, e)
        end = max(end, s1)
    assert best is not None
    return best


def launch_of(xs: list[dict], kernel: dict) -> dict:
    corr = kernel["args"]["correlation"]
    (call,) = [e for e in xs if e.get("cat") in CALLS and e["args"].get("correlation") == corr]
    return call


def row_at(folder: Path, g0: int) -> dict:
    got = ta.gaps(ta.load(folder)).device_gaps
    return got.filter(pl.col("start_ns") == g0).row(0, named=True)


def test_sglang_s_463_ms_is_a_stream_wait_with_the_host_blocked_in_the_copy():
    xs, base, folder = trace_file("real/tracelens/sglang_decode")
    g0, g1, nxt = longest_gap(xs, base, device=9)
    call = launch_of(xs, nxt)
    l0, l1 = span(call, base)
    waits = [span(e, base)[0] for e in xs if e.get("cat") in CALLS and e["tid"] == call["tid"]
             and e["name"] == "hipStreamWaitEvent" and g0 <= span(e, base)[0] < l0]
    host = [span(e, base) + (e["name"],) for e in xs if e.get("cat") in CALLS
            and e["tid"] == call["tid"] and 2 * covered([span(e, base)], g0, g1) > g1 - g0]
    assert l0 > g0 and g1 - l1 > (g1 - g0) / 2  # launched late, then held on the device
    assert waits and [h[2] for h in host] == ["hipMemcpyWithStream"]
    row = row_at(folder, g0)
    assert (row["end_ns"], row["cause"]) == (g1, "event_wait")
    assert row["device_wait_ns"] == g1 - l1 and row["wait_call_ns"] == waits[-1] - g0
    words = row["evidence"]
    assert f"queued {duration(l1 - g0)} after the lane went idle, then waited " \
           f"{duration(g1 - l1)} on the device behind hipStreamWaitEvent (called " \
           f"{duration(waits[-1] - g0)} after the lane went idle)" in words
    s, e, _ = host[0]
    assert f"meanwhile the host was in hipMemcpyWithStream for {duration(min(e, g1) - max(s, g0))}" in words


@pytest.mark.parametrize(("trace", "name", "device"), [
    ("real/param/dlrm_kineto", "worker1_*.json.gz", 1),
    ("real/tracelens/mi300_resnet", "*.json.gz", 2),
])
def test_a_kernel_held_while_a_collective_ran_is_exposed_communication(trace, name, device):
    xs, base, folder = trace_file(trace, name)
    g0, g1, nxt = longest_gap(xs, base, device)
    call = launch_of(xs, nxt)
    queued = max(span(call, base)[1], g0)
    comm = [span(e, base) for e in xs if e.get("cat") in HW
            and e["args"].get("device") == device and COMM.search(e["name"])]
    inside = covered(comm, queued, g1)
    assert 2 * (g1 - queued) >= g1 - g0 and 2 * inside >= g1 - queued  # held, by communication
    run = ta.load_runs(folder, cache=False)
    rows = [r for p in run for r in ta.gaps(p).device_gaps.filter(pl.col("start_ns") == g0)
            .filter(pl.col("end_ns") == g1).to_dicts()]
    (row,) = rows
    assert row["cause"] == "collective"
    assert (row["device_wait_ns"], row["comm_ns"]) == (g1 - queued, inside)
    assert f"then waited {duration(g1 - queued)} on the device while " in row["evidence"]
    assert "exposed communication" in row["evidence"]


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_every_gap_of_every_fixture_says_why(fixture):
    g = ta.gaps(ta.load(FIXTURES / fixture))
    for table in (g.gaps, g.device_gaps):
        assert table.height == 0 or table["evidence"].str.len_chars().min() > 0, fixture


def test_device_to_device_copies_are_not_told_to_pin_host_memory():
    folder = CORPUS / "real3/particle_transformer/a100_fwd_bs128"
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        pytest.skip(f"{folder} is absent: the shared corpus is not checked out beside the repo")
    xs = [e for e in json.loads(files[0].read_bytes())["traceEvents"] if e.get("ph") == "X"]
    names = {e["name"] for e in xs if e.get("cat") == "gpu_memcpy"}
    assert names == {"Memcpy DtoD (Device -> Device)"}  # the raw file's copies: device to device
    g = ta.gaps(ta.load(folder))
    copied = g.device_gaps.filter(pl.col("cause") == "transfer")["transfer_event"].unique().to_list()
    assert copied and all("DtoD" in c for c in copied)
    said = [h["hint"] for h in g.hints if h["cause"] == "transfer"]
    assert said and all("device-to-device" in h and "pin" not in h for h in said), said


def test_mtia_dma_requests_and_event_records_are_not_executions():
    xs, base, folder = trace_file("hta/tests/data/mtia_inference_trace")
    work = [span(e, base) for e in xs if e.get("cat") == "mtia_ccp_events"
            and e["name"] not in ("dma_request", "event_record", "event_wait")]
    assert any(e["name"] == "dma_request" for e in xs)  # the raw file has DMAs
    g = ta.gaps(ta.load(folder))
    assert g.summary["busy_ns"] == sum(e - s for s, e in union(work))  # one device here
    assert not g.device_gaps.filter(pl.col("next_name").is_in(["dma_request", "event_wait"])).height


@pytest.mark.parametrize("trace", ["hta/tests/data/mtia_inference_trace", "hta/tests/data/amd_trace",
                                   "real/tracelens/mi300_resnet", "real/tracelens/sglang_decode"])
def test_no_cuda_advice_off_cuda(trace):
    xs, _, folder = trace_file(trace)
    work = {e.get("cat") for e in xs if e.get("cat") in ("kernel", "mtia_ccp_events")}
    assert work  # the executions are HIP kernels (rocm) or MTIA's
    said = [h["hint"] for h in ta.gaps(ta.load(folder)).hints]
    # on ROCm the profiler's activity is still ProfilerActivity.CUDA: only CUDA graphs are out
    wrong = "CUDA" if "mtia_ccp_events" in work else "CUDA graph"
    assert said and not [h for h in said if wrong in h], said
