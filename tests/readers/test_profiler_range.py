"""Kineto's CUPTI range profiler events (``cat: "cuda_profiler_range"``) are device activity.

The traces here are written in the shape Kineto gives them (libkineto's ActivityType string
table names the category ``cuda_profiler_range``; ``CuptiRangeProfilerSession::addRangeEvents``
in CuptiRangeProfiler.cpp makes one GenericTraceActivity per range, or per kernel with
``CUPTI_PROFILER_ENABLE_PER_KERNEL``, named after the range or the kernel, with
``device`` = the GPU and one metadata entry per counter; the Chrome trace logger writes it
with ``pid`` = the device, ``tid`` = its resource, 0, and the metadata in ``args``). Kineto
does not time the ranges: it splits the profiled span evenly between them, as below. The
kernel and range names and the two counters are those of Kineto's own test
(CuptiRangeProfilerTest.cpp). Expected values are computed here from the numbers written.
"""

from __future__ import annotations

import json

import polars as pl
from conftest import (
    X,
    busy_model,
    check_busy_and_idle,
    gaps_doc,
    info_json,
    kineto,
    union_of,
    write_trace,
)

import trace_analyzer as ta
from trace_analyzer.inputs.discover import discover
from trace_analyzer.readers import kineto as kineto_reader
from trace_analyzer.readers.common import load_json

BASE = 1_793_620_800_000_000_000  # baseTimeNanoseconds, epoch ns
HOST = 4242
RANGE = "cuda_profiler_range"
PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
TENSOR = "sm__inst_executed_pipe_tensor.sum"
KERNELS = {0: ["foo", "bar", "baz"], 1: ["mercury", "venus", "earth"]}
SPAN_US = (1000.0, 1600.0)  # the profiled span, µs after the base


def ranges(names_by_device: dict[int, list[str]], span_us=SPAN_US) -> list[dict]:
    """Kineto's range events: the span split evenly per device, counters in args."""
    out = []
    start, end = span_us
    for device, names in names_by_device.items():
        step = (end - start) / len(names)
        for i, name in enumerate(names):
            counters = {PCT: round(10.5 * (i + 1) + device, 3), TENSOR: 1000 * i + device}
            out.append(X(RANGE, name, start + step * i, step, pid=device, tid=0,
                         **{"External id": 0, **counters}))
    return out


def ns(us: float) -> int:
    return BASE + round(us * 1000)


def expected_hw(events: list[dict], host_pid: int) -> list[tuple[str, str, int, int]]:
    """(lane, device, start, end) of each range or kernel written, with the labels of
    docs/formats.md: PID:<host>/GPU:<device>/stream:<tid>."""
    out = []
    for e in events:
        if e["cat"] in (RANGE, "kernel"):
            device = f"PID:{host_pid}/GPU:{e['pid']}"
            out.append((f"{device}/stream:{e['tid']}", device, ns(e["ts"]), ns(e["ts"] + e["dur"])))
    return out


def write(tmp_path, events, name="range.json"):
    return write_trace(tmp_path / name, kineto(events, baseTimeNanoseconds=BASE))


def per_kernel_trace() -> list[dict]:
    """Per-kernel mode: PyTorch adds the CPU activities, so a cpu_op runs on the host."""
    return [X("cpu_op", "aten::mm", 990.0, 620.0, pid=HOST, tid=HOST), *ranges(KERNELS)]


def test_range_events_are_hardware_on_their_gpu(tmp_path):
    events = per_kernel_trace()
    path = write(tmp_path, events)
    ev = ta.load(path).events.filter(pl.col("category") == RANGE).sort("device", "start_ns")
    want = sorted((e["pid"], ns(e["ts"]), e["name"]) for e in events if e["cat"] == RANGE)
    assert list(zip(ev["device"], ev["start_ns"], ev["name"], strict=True)) == want
    assert set(ev["lane_kind"].cast(pl.String)) == {"hardware"}
    assert set(ev["source"]) == {"cuda"}
    assert set(ev["pid"]) == {HOST}  # the device pid belongs to the host process
    assert sorted(set(ev["lane"])) == [f"PID:{HOST}/GPU:{d}/stream:0" for d in KERNELS]
    # both read paths (streaming and exact) label them alike
    (run,) = discover(path)
    (src,) = run.sources
    fast = kineto_reader.read_fast(src)
    exact = kineto_reader.read(src, load_json(src.path))
    assert fast is not None
    assert fast.events.drop("args_json").equals(exact.events.drop("args_json"))


def test_info_is_no_longer_host_activity_only(tmp_path):
    path = write(tmp_path, ranges(KERNELS))  # range events alone: the device pids only
    (doc,) = info_json(path)["runs"]
    assert not any("host activity only" in n for n in doc["notes"]), doc["notes"]
    lanes = sorted(f"PID:{d}/GPU:{d}/stream:0" for d in KERNELS)  # no host process to own them
    assert doc["hardware_lanes"] == len(KERNELS)
    assert sorted(doc["lanes_by_kind"]["hardware"]) == lanes
    assert doc["links"]["hardware_executions"] == sum(len(v) for v in KERNELS.values())
    (source,) = doc["sources"]
    assert any(RANGE in n and "not measured" in n for n in source["notes"]), source["notes"]


def test_gaps_finds_the_device_lanes_busy_over_the_ranges(tmp_path):
    events = per_kernel_trace()
    path = write(tmp_path, events)
    hw = expected_hw(events, HOST)
    w0, w1 = min(h[2] for h in hw), max(h[3] for h in hw)
    (run,) = gaps_doc([ta.load(path)], path)["runs"]
    check_busy_and_idle(run, hw, w0, w1)
    # the ranges tile the profiled span: each GPU busy over all of it, no idle
    span = round((SPAN_US[1] - SPAN_US[0]) * 1000)
    assert {d["device"]: (d["busy_ns"], d["idle_ns"]) for d in run["devices"]} == {
        f"PID:{HOST}/GPU:{d}": (span, 0) for d in KERNELS}


def test_counters_come_back_in_args(tmp_path):
    events = per_kernel_trace()
    ev = ta.load(write(tmp_path, events), args=True).events.filter(pl.col("category") == RANGE)
    got = {(d, n): json.loads(a) for d, n, a in ev.select("device", "name", "args_json").rows()}
    want = {(e["pid"], e["name"]): e["args"] for e in events if e["cat"] == RANGE}
    assert got == want
    assert all(PCT in a and TENSOR in a for a in got.values())


def test_kernels_and_ranges_on_one_gpu_are_not_counted_twice(tmp_path):
    """Kineto refuses to run the range profiler with kernel tracing, but traces can be put
    together: where kernels and ranges overlap on a GPU, busy is their union, not their sum."""
    kernels = [X("kernel", "k1", 1000.0, 30.0, pid=0, tid=7, device=0, stream=7),
               X("kernel", "k2", 1300.0, 50.0, pid=0, tid=7, device=0, stream=7),
               X("kernel", "k3", 1700.0, 20.0, pid=0, tid=7, device=0, stream=7)]
    events = [*kernels, *ranges({0: ["r0", "r1"]}, span_us=(1000.0, 1400.0))]
    path = write(tmp_path, events)
    hw = expected_hw(events, 0)
    w0, w1 = min(h[2] for h in hw), max(h[3] for h in hw)
    (run,) = gaps_doc([ta.load(path)], path)["runs"]
    check_busy_and_idle(run, hw, w0, w1)
    (device,) = run["devices"]
    union = union_of([(h[2], h[3]) for h in hw])
    assert device["busy_ns"] == sum(e - s for s, e in union) == 420_000  # 400 µs + k3's 20
    assert device["busy_ns"] < sum(h[3] - h[2] for h in hw)  # the sum would count k1, k2 twice
    assert device["idle_ns"] == busy_model([(h[2], h[3]) for h in hw], w0, w1)["idle_ns"]
