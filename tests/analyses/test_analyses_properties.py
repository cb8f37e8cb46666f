"""Every analysis accepts any events table the Kineto reader can produce, and every renderer
accepts every result: generated traces with no, one or many lanes, kernels with and without
a launch, launches with and without an op, memcpys, syncs, steps or none.

Checked here: no exception anywhere, and the invariants a user relies on whatever the input
(every hardware execution is in the chain table, JSON round-trips, and the gaps numbers
against the generated kernels, conftest.check_busy_and_idle: idle is the time in the listed
gaps, busy the union of the kernels, leading and trailing idle up to the first and from the
last busy instant).
"""

from __future__ import annotations

from conftest import X, check_busy_and_idle, every_analysis, kineto, render_all, write_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trace_analyzer as ta

HOST, GPU = 100, 0
BASE = 1_000_000_000  # baseTimeNanoseconds: an event at ts µs is at BASE + 1000 * ts ns


def kernels(events: list[dict]) -> list[tuple[str, str, int, int]]:
    """The generated kernels as (lane, device, start, end), lanes named by their last part."""
    return [(f"stream:{e['args']['stream']}", f"GPU:{e['args']['device']}",
             BASE + 1000 * e["ts"], BASE + 1000 * (e["ts"] + e["dur"]))
            for e in events if e["cat"] == "kernel"]


def last_part(key: str, label: str) -> str:
    """PID:<pid>/GPU:<n>/stream:<s> -> stream:<s>; PID:<pid>/GPU:<n> -> GPU:<n>."""
    return label.rpartition("/")[2]


@st.composite
def traces(draw) -> list[dict]:
    events: list[dict] = []
    t = 0
    corr = 1
    if draw(st.booleans()):
        events.append(X("user_annotation", "ProfilerStep#1", 0, 10_000, pid=HOST, tid=HOST))
    for _ in range(draw(st.integers(0, 12))):
        t += draw(st.integers(0, 300))
        dur = draw(st.integers(0, 200))
        shape = draw(st.sampled_from(["op+launch+kernel", "kernel alone", "launch alone",
                                      "op alone", "memcpy", "sync"]))
        stream = draw(st.sampled_from([7, 13, 21]))
        ext = draw(st.integers(1, 5))
        if shape.startswith("op"):
            events.append(X("cpu_op", draw(st.sampled_from(["aten::mm", "aten::add"])), t,
                            dur + 20, pid=HOST, tid=HOST, **{"External id": ext}))
        if "launch" in shape:
            events.append(X("cuda_runtime", "cudaLaunchKernel", t + 1, 5, pid=HOST, tid=HOST,
                            correlation=corr, **{"External id": ext}))
        if "kernel" in shape:
            events.append(X("kernel", "k", t + draw(st.integers(2, 50)), dur, pid=GPU, tid=stream,
                            device=GPU, stream=stream, correlation=corr))
        if shape == "memcpy":
            events.append(X("gpu_memcpy", "Memcpy HtoD", t, dur, pid=GPU, tid=stream,
                            device=GPU, stream=stream, correlation=corr))
        if shape == "sync":
            events.append(X("cuda_sync", "Stream Sync", t, dur, pid=GPU, tid=stream,
                            device=GPU, stream=stream))
        corr += 1
    return events


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=traces(), min_gap=st.sampled_from([0, 1, 50_000]))
def test_every_analysis_and_renderer_accepts_any_trace(tmp_path_factory, events, min_gap):
    folder = tmp_path_factory.mktemp("t")
    write_trace(folder / "trace.json", kineto(events, baseTimeNanoseconds=BASE))
    p = ta.load(folder)
    analysed = every_analysis(p, folder, min_gap)
    render_all(analysed)
    results = {kind: r.to_json() for kind, r in analysed.items()}
    (run,) = results["gaps"]["runs"]
    s = run["summary"]
    hw = kernels(events)
    if hw:  # the default window: first kernel start to last kernel end
        w0, w1 = min(h[2] for h in hw), max(h[3] for h in hw)
        assert (run["window"]["start_ns"], run["window"]["end_ns"]) == (w0, w1)
        copies = [(f"GPU:{e['args']['device']}", BASE + 1000 * e["ts"],
                   BASE + 1000 * (e["ts"] + e["dur"])) for e in events if e["cat"] == "gpu_memcpy"]
        check_busy_and_idle(run, hw, w0, w1, min_gap, label=last_part, copies=copies)
    hardware = p.events.filter(p.events["lane_kind"] == "hardware").height
    assert hardware == len(hw)
    assert s["executions"] == hardware  # the default window holds every execution, 0 µs too
    if not hardware:
        assert s["gap_count"] == s["window_ns"] == 0
    (chain_run,) = results["chain"]["runs"]
    cov = chain_run["coverage"]
    assert cov["hardware_executions"] == hardware  # unlinked ones counted, never dropped
    assert cov["linked"] + cov["unlinked"] == hardware
