"""The device pass takes the lanes' gaps where they must be the same (questions/gaps/causes.py
lanes_are_devices): each device one hardware lane, no communication lane, and every copy and
sync counted alike at the device and at its lane. Where that holds, every table of the result
equals the one the device pass computes for itself; where a copy runs on another stream of
the device, it does not hold (the device counts the copy, its kernel lane does not)."""

from __future__ import annotations

import pytest
from conftest import X, kineto, write_trace

from trace_analyzer.loading.profile import load
from trace_analyzer.questions.gaps import analysis as gaps_module
from trace_analyzer.questions.gaps.causes import lanes_are_devices

TABLES = ("lanes", "devices", "gaps", "device_gaps", "ops", "steps")


def _trace(tmp_path, copy_stream: int):
    """One GPU: three kernels on stream 7, all launched at the start (30 µs each at 40, 140
    and 240 µs), and a copy on ``copy_stream`` over most of the first gap (72-138 µs)."""
    events = []
    for i in range(3):
        events += [
            X("cpu_op", f"op{i}", 5 * i, 4, pid=1, tid=1, **{"External id": i}),
            X("cuda_runtime", "cudaLaunchKernel", 5 * i + 1, 2, pid=1, tid=1, correlation=i),
            X("kernel", f"k{i}", 40 + 100 * i, 30, pid=0, tid=7, device=0, stream=7,
              correlation=i),
        ]
    events.append(X("gpu_memcpy", "Memcpy HtoD", 72, 66, pid=0, tid=copy_stream, device=0,
                    stream=copy_stream))
    return write_trace(tmp_path / "trace.json", kineto(events, baseTimeNanoseconds=10**18))


def test_one_lane_per_device_takes_the_lanes_gaps_and_they_equal_the_device_pass(
    tmp_path, monkeypatch
):
    p = load(_trace(tmp_path, copy_stream=7))
    assert lanes_are_devices(p.events, all_compute=True)
    taken = gaps_module.gaps(p)
    monkeypatch.setattr(gaps_module, "lanes_are_devices", lambda events, all_compute: False)
    computed = gaps_module.gaps(p)
    for name in TABLES:
        assert getattr(taken, name).equals(getattr(computed, name)), name
    assert taken.summary == computed.summary and taken.hints == computed.hints
    assert taken.summary["idle_by_cause_ns"]["transfer"] > 0  # the copy decided a cause


@pytest.mark.parametrize("copy_stream", [13])
def test_a_copy_on_another_stream_of_the_device_is_computed_apart(tmp_path, copy_stream):
    p = load(_trace(tmp_path, copy_stream))
    assert not lanes_are_devices(p.events, all_compute=True)
    result = gaps_module.gaps(p)
    device_causes = result.device_gaps["cause"].to_list()
    lane_causes = result.gaps["cause"].to_list()
    assert "transfer" in device_causes and "transfer" not in lane_causes
