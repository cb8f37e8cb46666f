"""Every analysis accepts any events table the Kineto reader can produce, and every renderer
accepts every result: generated traces with no, one or many lanes, kernels with and without
a launch, launches with and without an op, memcpys, syncs, steps or none.

Checked here: no exception anywhere, and the invariants a user relies on whatever the input
(the gaps window adds up, every hardware execution is in the chain table, JSON round-trips).
"""

from __future__ import annotations


from conftest import X, every_analysis, kineto, render_all, write_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trace_analyzer as ta

HOST, GPU = 100, 0


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


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=traces(), min_gap=st.sampled_from([0, 1, 50_000]))
def test_every_analysis_and_renderer_accepts_any_trace(tmp_path_factory, events, min_gap):
    folder = tmp_path_factory.mktemp("t")
    write_trace(folder / "trace.json", kineto(events, baseTimeNanoseconds=1_000_000_000))
    p = ta.load(folder)
    results = every_analysis(p, folder, min_gap)
    results["gaps"]["view"] = {"by": "device", "top": 3}
    render_all(results)
    (run,) = results["gaps"]["runs"]
    s = run["summary"]
    assert s["busy_ns"] + s["idle_ns"] + s["leading_ns"] + s["trailing_ns"] == s["window_ns"]
    hardware = p.events.filter(p.events["lane_kind"] == "hardware").height
    assert s["executions"] == hardware  # the default window holds every execution, 0 µs too
    if not hardware:
        assert s["gap_count"] == s["window_ns"] == 0
    (chain_run,) = results["chain"]["runs"]
    cov = chain_run["coverage"]
    assert cov["hardware_executions"] == hardware  # unlinked ones counted, never dropped
    assert cov["linked"] + cov["unlinked"] == hardware
