"""The critical path and the what-if replay (issue 36) on a profile whose dependencies the test
writes, with the path and every scenario's step time worked out by hand below (µs).

Step 1 (ProfilerStep#1, 0–200), on thread 100:
    aten::a 5–40 holds cudaLaunchKernel L1 20–30 → kernel K1 35–95 on stream 7
    helper.py(1): slow 40–100 (a Python frame, no calls)
    aten::b 100–130 holds cudaLaunchKernel L2 110–120 → kernel K2 125–165
    cudaMemcpy 130–180 (blocking) → Memcpy DtoH M3 165–175 (after K2 on the stream)
Step 2 (ProfilerStep#2, 200–300): cudaLaunchKernel L4 210–220 → kernel K4 225–255.

The launch latency is 15 (each kernel launched on a free stream starts 15 after its call).
Step 1's window ends at its mark (200, after the device's 175); step 2's at 300. The step
time is the measured steps' span over their number (overlapping windows counted once), here
300 / 2 = 150; a what-if keeps the first measured step's start.

Step 1's critical path, back from 200: the host after the memcpy's return (180–200, no op
holds it); the return waited for M3 (sync 175–180); M3 (165–175) waited for K2 on its stream
(125–165); K2 for its launch (110–125, L2's start plus the latency); L2 for the thread:
80 of host time since L1 returned (30–110, its middle in helper.py's frame); L1 itself
(20–30); the host before it (0–20, in aten::a). Step 2: 200–210 host, L4 210–220, 220–300
host. K1 is not on it.

What-ifs (each step's window, then the mean):
- helper.py's own time (60, in L2's gap) gone: L2 at 50, K2 waits for K1 (95–135), M3
  135–145, the return 150, the mark 170; step 2 starts at 170 and keeps its 100: mean 135,
  saves 15 (not 60: K1 now bounds K2).
- aten::a's own time (5–40: 15 of L1's gap, 10 of L2's) gone: L1 5–15, K1 20–80, L2 85–95,
  K2 100–140, the memcpy 105–110, M3 140–150, the return 155, the mark 175; step 2 100:
  mean 137.5, saves 12.5.
- CUDA graph: K2 and M3 wait for L1's start (+15) and their stream only; L2 takes no time:
  K2 95–135, M3 135–145, the memcpy 120–125, the return 150, the mark 170: mean 135, saves 15.
- cudaMemcpy asynchronous: its return at 135, the mark 155; the device's M3 still ends at
  175: step 1 0-175; step 2 155-255: span 255, mean 127.5, saves 22.5.
- the copies removed: M3 165–165, the return 170, the mark 190: mean 145, saves 5.
- warm-up: not offered with two steps (the second is as likely the odd one); with a third
  step like the second (300-400: span 400, mean 133.3), step 1 left out leaves 200 over two
  steps, 100: saves 33.3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from conftest import X, kineto, one_line_error, run_cli, write_trace

import trace_analyzer as ta
from trace_analyzer.numbers import count, duration

US = 1000
T = {"pid": 100, "tid": 100}
GPU = {"pid": 0, "tid": 7, "device": 0, "stream": 7}
SLOW = "helper.py(1): slow"


def launch(name: str, ts: float, dur: float, corr: int) -> dict:
    return X("cuda_runtime", name, ts, dur, correlation=corr, **T)


def two_steps() -> list[dict]:
    return [
        X("user_annotation", "ProfilerStep#1", 0, 200, **T),
        X("cpu_op", "aten::a", 5, 35, **T),
        launch("cudaLaunchKernel", 20, 10, 1),
        X("kernel", "K1", 35, 60, correlation=1, **GPU),
        X("python_function", SLOW, 40, 60, **T),
        X("cpu_op", "aten::b", 100, 30, **T),
        launch("cudaLaunchKernel", 110, 10, 2),
        X("kernel", "K2", 125, 40, correlation=2, **GPU),
        launch("cudaMemcpy", 130, 50, 3),
        X("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 165, 10, correlation=3, **GPU),
        X("user_annotation", "ProfilerStep#2", 200, 100, **T),
        launch("cudaLaunchKernel", 210, 10, 4),
        X("kernel", "K4", 225, 30, correlation=4, **GPU),
    ]


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> ta.CriticalResult:
    path = write_trace(tmp_path_factory.mktemp("cp") / "trace.json", kineto(two_steps()))
    return ta.critical(ta.load(path))


def test_each_step_is_replayed_to_its_recorded_window(result):
    steps = {r["step"]: r for r in result.steps.to_dicts()}
    assert {s: r["window_ns"] for s, r in steps.items()} == {1: 200 * US, 2: 100 * US}
    assert all(r["replayed_ns"] == r["window_ns"] for r in steps.values())
    assert result.latency_ns == 15 * US


def test_the_critical_path_is_the_chain_worked_out_by_hand(result):
    path = result.path.filter(result.path["step"] == 1).sort("order")
    got = [(r["kind"], r["start_ns"] // US, r["end_ns"] // US) for r in path.iter_rows(named=True)]
    assert got == [
        ("host", 0, 20), ("call", 20, 30), ("host", 30, 110), ("launch", 110, 125),
        ("compute", 125, 165), ("memory", 165, 175), ("sync", 175, 180), ("host", 180, 200),
    ]  # fmt: skip
    labels = [r["label"] for r in path.iter_rows(named=True) if r["kind"] == "host"]
    assert labels == ["aten::a", SLOW, "untraced"]
    assert path.filter(path["kind"] == "compute")["name"].to_list() == ["K2"]
    two = result.path.filter(result.path["step"] == 2).sort("order")
    assert [(r["kind"], r["start_ns"] // US, r["end_ns"] // US) for r in two.iter_rows(named=True)
            ] == [("host", 200, 210), ("call", 210, 220), ("host", 220, 300)]  # fmt: skip


def test_the_path_tiles_each_window(result):
    for step in result.steps.iter_rows(named=True):
        segs = result.path.filter(result.path["step"] == step["step"])
        assert segs["duration_ns"].sum() == step["window_ns"]
        kinds = result.kinds.filter(result.kinds["step"] == step["step"])
        assert kinds["time_ns"].sum() == step["window_ns"]


def test_every_what_if_saves_what_the_hand_replay_says(result):
    saved = {r["scenario"]: r["saved_ns"] for r in result.fixes.to_dicts()}
    assert saved == {
        f"host:{SLOW}": 15 * US,
        "graphs": 15 * US,
        "host:aten::a": 12_500,
        "sync:cudaMemcpy": 22_500,
        "copy:Memcpy DtoH (Device -> Pageable)": 5 * US,
    }
    assert result.fixes["rank"].to_list() == list(range(1, 6))
    assert result.fixes["saved_ns"].is_sorted(descending=True)
    assert all(r["step_ns"] == 150 * US for r in result.fixes.to_dicts())


def test_each_fix_names_its_assumption_and_the_path_it_changes(result):
    fixes = {r["scenario"]: r for r in result.fixes.to_dicts()}
    assert all(r["assumption"] for r in fixes.values())
    slow = fixes[f"host:{SLOW}"]["evidence"]
    assert [(e["kind"], e["duration_ns"]) for e in slow] == [("host", 80 * US)]
    sync = fixes["sync:cudaMemcpy"]["evidence"]
    assert [(e["kind"], e["name"]) for e in sync] == [("sync", "cudaMemcpy")]


def test_a_longer_first_step_of_three_is_warm_up(tmp_path):
    """A third step like the second (ProfilerStep#3 300-400, its launch 310-320 and kernel
    325-355): the span is 400 over 3 steps; without step 1, 200 over 2: saves 400/3 - 100."""
    third = [
        X("user_annotation", "ProfilerStep#3", 300, 100, **T),
        launch("cudaLaunchKernel", 310, 10, 5),
        X("kernel", "K5", 325, 30, correlation=5, **GPU),
    ]
    path = write_trace(tmp_path / "trace.json", kineto(two_steps() + third))
    fixes = ta.critical(ta.load(path)).fixes
    (warm,) = fixes.filter(fixes["scenario"] == "warmup").to_dicts()
    assert (warm["step_ns"], warm["replayed_ns"]) == (round(400 * US / 3), 100 * US)
    assert warm["rank"] == 1


def test_the_hand_what_ifs(tmp_path):
    """Fusing aten::* at half their time: K1 and K2 (linked to aten::a and aten::b; the copy
    and K4 have no op) become one 50 µs kernel at 35-85, K2 nothing after it, L2 no time.
    L2 110-110, the memcpy 120-125, M3 waits for its launch (120 + 15) until 135-145, the
    return 150, the mark 170; step 2 keeps 100: mean 135, saves 15. The device work per step:
    (50 + 10) and 30, mean 45 (recorded: (60 + 40 + 10) and 30, mean 70)."""
    path = write_trace(tmp_path / "trace.json", kineto(two_steps()))
    profile = ta.load(path)
    fused = ta.critical(profile, asked=ta.Asked(fuse="aten::*", factor=0.5))
    row = fused.fixes.filter(fused.fixes["scenario"].str.starts_with("fuse:")).to_dicts()[0]
    assert (row["saved_ns"], row["device_ns"]) == (15 * US, 45 * US)
    assert "0.5 × their summed time" in row["assumption"]
    none = ta.critical(profile, asked=ta.Asked(fuse="aten::zzz", sync="nothing", copy="none*"))
    assert len(none.notes) == 3
    removed = ta.critical(profile, asked=ta.Asked(host="aten::*"))
    mine = removed.fixes.filter(removed.fixes["scenario"] == "host:aten::*").to_dicts()[0]
    # aten::a and aten::b whole: L1's gap loses 15 (5-20), L2's 20 (30-40, 100-110), the
    # memcpy's 10 (120-130). L1 5-15, K1 20-80, L2 75-85, K2 90-130, the memcpy 85-90,
    # M3 130-140, the return 145, the mark 165; step 2 100: mean 132.5, saves 17.5.
    assert mine["saved_ns"] == 17_500


def test_the_command_opens_with_the_verdict(tmp_path):
    path = write_trace(tmp_path / "trace.json", kineto(two_steps()))
    code, out, err = run_cli("critical", str(path))
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.strip() and "origin" not in line]
    assert lines[2] == "make `cudaMemcpy` asynchronous saves ~22.5 µs per step (15 % of 150 µs)"
    code, out, err = run_cli("critical", str(path), "--annotation", "nothing*")
    assert code == 2 and "no annotation matches" in err


def test_window_glob_is_annotation_s_old_name(tmp_path):
    """gaps's --window is a time range; critical's windows by annotation are --annotation
    GLOB, its old --window GLOB still taken with a note (docs/output.md, "Conventions")."""
    path = write_trace(tmp_path / "trace.json", kineto(two_steps()))
    code, new, err = run_cli("critical", str(path), "--annotation", "ProfilerStep*")
    assert code == 0 and err == "", err
    code, old, err = run_cli("critical", str(path), "--window", "ProfilerStep*")
    assert code == 0 and old == new
    assert err.splitlines() == ["traceana: note: critical --window GLOB is now --annotation "
                                "GLOB, the same windows (--window is a time range in gaps; "
                                'docs/output.md, "Conventions")']  # fmt: skip
    code, _, err = run_cli("critical", str(path), "--window", "a*", "--annotation", "b*")
    assert code == 2 and "give one of them" in err


def test_a_run_without_steps_is_one_window(tmp_path):
    events = [e for e in two_steps() if not e["name"].startswith("ProfilerStep")]
    result = ta.critical(ta.load(write_trace(tmp_path / "t.json", kineto(events))))
    assert result.steps["step"].to_list() == [None]
    assert result.steps["window_ns"][0] == (255 - 20) * US
    assert result.path["duration_ns"].sum() == (255 - 20) * US


def test_fixtures_replay_exactly():
    for name in ("rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled", "rmsnorm_naive_lnc2"):
        result = ta.critical(ta.load(Path(__file__).parents[2] / "fixtures" / name))
        assert result.steps["replay_error_pct"].max() == 0
        assert result.path["duration_ns"].sum() == result.steps["window_ns"].sum()


def test_a_stream_wait_is_followed_to_the_work_it_waited_for(tmp_path):
    """K1 runs on stream 7 (launched at 20, 35-135). The host records an event on stream 7
    (cudaEventRecord, correlation 10, at 50), makes stream 20 wait for it
    (cudaStreamWaitEvent, 11, at 60; Kineto's "Stream Wait Event" record names both) and
    launches K2 on stream 20 at 70: K2 waits until K1 ends (135-175), after the step's mark
    (170). The path: the host before L1 (0-20), L1's launch (20-35), K1, then K2 (not an
    unexplained 50 µs after K2's launch)."""
    wait = X("cuda_sync", "Stream Wait Event", 65, 1, correlation=11, wait_on_stream=7,
             wait_on_cuda_event_record_corr_id=10, pid=0, tid=20, device=0, stream=20)
    events = [
        X("user_annotation", "ProfilerStep#1", 0, 170, **T),
        launch("cudaLaunchKernel", 20, 10, 1),
        X("kernel", "K1", 35, 100, correlation=1, **GPU),
        launch("cudaEventRecord", 50, 5, 10),
        launch("cudaStreamWaitEvent", 60, 5, 11),
        wait,
        launch("cudaLaunchKernel", 70, 10, 12),
        X("kernel", "K2", 135, 40, correlation=12, pid=0, tid=20, device=0, stream=20),
    ]  # fmt: skip
    result = ta.critical(ta.load(write_trace(tmp_path / "t.json", kineto(events))))
    path = result.path.sort("order")
    got = [(r["kind"], r["name"], r["start_ns"] // US, r["end_ns"] // US)
           for r in path.iter_rows(named=True)]  # fmt: skip
    assert got == [
        ("host", "until cudaLaunchKernel", 0, 20), ("launch", "cudaLaunchKernel", 20, 35),
        ("compute", "K1", 35, 135), ("compute", "K2", 135, 175),
    ]  # fmt: skip


def test_fusing_the_naive_rmsnorm_predicts_its_summed_device_time_beside_the_measured():
    """`--fuse 'aten::*'` on the naive fixture predicts the six executions' summed time (from
    the generator's record), and docs/critical-path.md states it beside the fused and compiled
    fixtures' measured device time, with the error."""
    fixtures = Path(__file__).parents[2] / "fixtures"

    def device_ns(variant: str) -> int:
        truth = json.loads((fixtures / variant / "truth.json").read_text())
        return sum(e["end_ns"] - e["start_ns"] for e in truth["executions"])

    naive, fused, compiled = (device_ns(f"rmsnorm_{v}") for v in ("naive", "fused", "compiled"))
    result = ta.critical(ta.load(fixtures / "rmsnorm_naive"), asked=ta.Asked(fuse="aten::*"))
    (row,) = result.fixes.filter(result.fixes["scenario"].str.starts_with("fuse:")).to_dicts()
    assert row["device_ns"] == naive == 2_354_900
    doc = (Path(__file__).parents[2] / "docs" / "critical-path.md").read_text()
    for measured in (fused, compiled):
        error = round(100 * (naive - measured) / measured)
        assert f"{duration(measured)} (+{error} %)" in doc, (measured, error)
    assert f"predicts {count(naive // 1000)}.{naive % 1000 // 100} µs" in doc


BROKEN = Path(__file__).parents[1] / "broken"


@pytest.mark.parametrize("case", sorted(p.name for p in BROKEN.iterdir()
                                        if p.name not in ("make_broken.py", "__pycache__")))
def test_a_broken_input_gets_an_answer_or_one_line(case):
    """Every hostile input of tests/broken: `critical` answers (exit 0) or refuses in one line
    (exit 2), as `gaps` does for the same input; never an internal error (a step number past
    int64 was one: tests/broken/huge_step_number)."""
    code, out, err = run_cli("critical", str(BROKEN / case), "--format", "json", "--no-cache")
    gaps_code, _, gaps_err = run_cli("gaps", str(BROKEN / case), "--format", "json", "--no-cache")
    assert code == gaps_code, (code, err, gaps_err)
    if code == 2:
        assert one_line_error(code, out, err) == gaps_err.strip()
    else:
        assert code == 0 and "internal error" not in err
        json.loads(out)


def test_a_diff_names_the_next_fix_on_head(tmp_path):
    """`traceana diff` (a pull request's comment) says what to fix next on head: its first
    run's critical-path verdict, in the Markdown under the diff's own verdict and in the JSON
    (`next_fix`); none when head is the fused fixture, where no fix saves time."""
    head = write_trace(tmp_path / "head" / "trace.json", kineto(two_steps()))
    fused = Path(__file__).parents[2] / "fixtures" / "rmsnorm_fused"
    code, out, err = run_cli("diff", str(fused), str(head), "--format", "markdown",
                             "--no-cache", "--allow-empty")  # fmt: skip
    assert code == 0, err
    want = "Next on head: make \\`cudaMemcpy\\` asynchronous saves \\~22.5 µs per step"
    assert want in out, out
    code, out, err = run_cli("diff", str(head), str(fused), "--format", "json", "--no-cache",
                             "--allow-empty")  # fmt: skip
    assert json.loads(out)["runs"][0]["next_fix"] is None


def test_one_step_is_measured_alone(result, tmp_path):
    """`--step 1`: the fixes measured on step 1's window alone (200 µs, its start kept):
    helper.py's time gone ends it at 170, the graph at 170, aten::a's time at 175,
    cudaMemcpy made asynchronous at 175 (M3 still ends there), the copy gone at 190."""
    path = write_trace(tmp_path / "trace.json", kineto(two_steps()))
    one = ta.critical(ta.load(path), step=1)
    assert one.steps["step"].to_list() == [1] and set(one.path["step"]) == {1}
    saved = {r["scenario"]: r["saved_ns"] for r in one.fixes.to_dicts()}
    assert saved == {f"host:{SLOW}": 30 * US, "graphs": 30 * US, "host:aten::a": 25 * US,
                     "sync:cudaMemcpy": 25 * US, "copy:Memcpy DtoH (Device -> Pageable)": 10 * US}
    code, out, err = run_cli("critical", str(path), "--step", "7")
    assert "no window 7 in this run (its windows: 1, 2)" in one_line_error(code, out, err)


def test_gaps_opens_with_the_next_fix_when_asked(tmp_path):
    """`traceana gaps --next` carries the critical path's verdict, the hand replay's (making
    cudaMemcpy asynchronous saves 22.5 µs of the 150 µs step), under gaps' own verdict in the
    table and the Markdown, and in the JSON (`next_fix`); without --next nothing of it; where
    no fix saves time (the fused RMSNorm fixture) it says so."""
    path = write_trace(tmp_path / "trace.json", kineto(two_steps()))
    want = "make `cudaMemcpy` asynchronous saves ~22.5 µs per step (15 % of 150 µs)"
    code, out, err = run_cli("gaps", str(path), "--next", "--no-cache")
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.strip()]
    at = next(i for i, line in enumerate(lines) if line.startswith("1 device idle"))
    assert lines[at + 1] == f"Next: {want}", out  # right under gaps' own verdict
    code, out, err = run_cli("gaps", str(path), "--next", "--format", "markdown", "--no-cache")
    assert "\n**Next:** make \\`cudaMemcpy\\` asynchronous saves \\~22.5 µs per step" in out
    code, out, err = run_cli("gaps", str(path), "--next", "--format", "json", "--no-cache")
    assert json.loads(out)["runs"][0]["next_fix"] == want
    code, out, err = run_cli("gaps", str(path), "--format", "json", "--no-cache")
    assert "next_fix" not in json.loads(out)["runs"][0] and "Next:" not in out
    fused = Path(__file__).parents[2] / "fixtures" / "rmsnorm_fused"
    code, out, err = run_cli("gaps", str(fused), "--next", "--format", "json", "--no-cache")
    said = json.loads(out)["runs"][0]["next_fix"]
    assert said == "no fix replayed here shortens the step: see the critical path"


@pytest.mark.parametrize("where", ["hand", "rmsnorm_naive"])
def test_without_a_compiler_the_answer_is_the_same(where, tmp_path, monkeypatch):
    """A machine that could not build the compiled replay (setup.py: optional) runs the
    Python and polars versions of every compiled part: the same path, steps and fixes."""
    from polars.testing import assert_frame_equal

    from trace_analyzer.questions.critical import graph, link, own, replay, scenarios

    path = (write_trace(tmp_path / "trace.json", kineto(two_steps())) if where == "hand"
            else Path(__file__).parents[2] / "fixtures" / where)  # fmt: skip
    fast = ta.critical(ta.load(path, cache=False))
    for module in (graph, link, own, replay, scenarios):
        monkeypatch.setattr(module, "_replay", None)
    slow = ta.critical(ta.load(path, cache=False))
    for name in ("path", "steps", "kinds", "fixes"):
        assert_frame_equal(getattr(fast, name), getattr(slow, name))
    assert fast.verdict == slow.verdict and fast.latency_ns == slow.latency_ns


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(*[st.one_of(st.none(), st.integers(0, 3))] * 7), max_size=40))
def test_the_nodes_order_is_the_sort_by_every_key(rows):
    """``graph.ordered`` sorts by start, then only the ties by every key: the same order as a
    sort by all of ``ORDER`` (nulls first), whatever the ties and nulls."""
    import polars as pl

    from trace_analyzer.questions.critical.graph import ORDER, ordered

    keys = [k for k in ORDER if k != "start_ns"]
    table = pl.DataFrame(
        [(i % 3, *r) for i, r in enumerate(rows)], schema=["start_ns", *keys], orient="row"
    ).with_columns(pl.all().cast(pl.Int64), extra=pl.int_range(pl.len()))
    got, want = ordered(table), table.sort(ORDER)
    assert got.drop("extra").equals(want.drop("extra"))


NAMES = ["cudaMemcpy", "cudaMemcpyAsync", "cudaDeviceSynchronize", "cudaLaunchKernel", "nrt_wait"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 1), st.integers(0, 6), st.integers(0, 6)),
             min_size=1, max_size=12),
    st.lists(st.tuples(st.integers(0, 13), st.integers(0, 2), st.integers(0, 9)), max_size=25),
)  # fmt: skip
def test_what_each_waiting_call_waited_for_compiled_is_the_reference(calls, work):
    """``_replay.waited`` finds what polars finds (waits._waits): a blocking call's latest work
    that ended inside it, else a synchronize's latest work of its pid launched before it,
    among equal ends, launches and pids, calls that launched nothing and work launched by
    nothing (ids past the calls')."""
    import polars as pl

    from trace_analyzer.questions.critical import waits

    if waits._replay is None:
        pytest.skip("no compiled replay here (setup.py: optional)")
    n = len(calls)
    call_rows = pl.DataFrame(
        [(i, 100 + i, NAMES[name], pid, s, s + d) for i, (name, pid, s, d) in enumerate(calls)],
        schema=["_row", "event_id", "name", "pid", "start_ns", "end_ns"], orient="row",
    ).with_columns(pl.col("_row").cast(pl.UInt32))  # fmt: skip
    device = pl.DataFrame(
        [(n + j, 200 + j, 100 + launch, pid, end) for j, (launch, pid, end) in enumerate(work)],
        schema={c: pl.Int64 for c in ("_row", "event_id", "launch_event", "pid", "end_ns")},
        orient="row",
    ).with_columns(pl.col("_row").cast(pl.UInt32))  # fmt: skip
    got = waits._compiled(call_rows, device).sort("_row")
    want = waits._waits(call_rows, device).select(got.columns).sort("_row")
    assert got.equals(want), (got, want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 9),
                          st.integers(0, 5)), max_size=40),
       st.randoms(use_true_random=False))  # fmt: skip
def test_each_calls_outermost_call_compiled_is_the_reference(calls, rng):
    """``_replay.outer`` (in any order: sorted in C, without the GIL; or by start, as the
    events table is, in one pass, ties in any order) finds each host call's outermost call on
    its thread as graph._host's polars version does, among equal starts, equal ends and
    nesting."""
    import polars as pl

    from trace_analyzer.model.arrow import frame
    from trace_analyzer.questions.critical import graph

    if graph._replay is None:
        pytest.skip("no compiled replay here (setup.py: optional)")
    rows = [(pid, tid, s, s + d, i) for i, (pid, tid, s, d) in enumerate(calls)]
    rng.shuffle(rows)
    table = pl.DataFrame(rows, schema={c: pl.Int64 for c in
                                       ("pid", "tid", "start_ns", "end_ns", "event_id")},
                         orient="row")  # fmt: skip
    want = graph.outer_by_polars(table).sort("event_id")
    by_start = table.sort("start_ns", maintain_order=True)  # (the ties as shuffled)
    for rows in (table, by_start):
        got = rows.with_columns(frame(graph._replay.outer(rows.__arrow_c_stream__()))["outer"])
        assert got.sort("event_id").equals(want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(-1, 1), st.integers(0, 9),
                          st.integers(0, 5)), max_size=40),
       st.randoms(use_true_random=False))  # fmt: skip
def test_the_hosts_own_time_compiled_is_the_reference(ranges, rng):
    """``_replay.own_pieces`` (ranges in any order: each thread's put in order in C) cuts each
    thread's time into the pieces polars cuts (own._by_polars), each named after the same
    innermost range, threads in the same order, among equal starts, equal ends, points and
    nesting."""
    import polars as pl

    from trace_analyzer.questions.critical import own

    if own._replay is None:
        pytest.skip("no compiled replay here (setup.py: optional)")
    rows = [(pid, tid, s, s + d, i) for i, (pid, tid, s, d) in enumerate(ranges)]
    rng.shuffle(rows)
    table = pl.DataFrame(rows, schema={c: pl.Int64 for c in ("pid", "tid", "start", "end", "id")},
                         orient="row")  # fmt: skip
    assert own._compiled(table).equals(own._by_polars(table))
