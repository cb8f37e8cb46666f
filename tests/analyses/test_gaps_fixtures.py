"""`traceana gaps` on the bundled Neuron RMSNorm fixtures, against each fixture's truth.json.

Expected values come only from truth.json (the generator's own record: executions, gaps,
transfers, profiler_step) and arithmetic on it here; never from traceana's output.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from conftest import run_cli, union_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NAIVE, FUSED, COMPILED, LNC2 = ("rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled",
                                "rmsnorm_naive_lnc2")
COVER_SHARE = 0.5  # docs: a transfer explains a gap when it covers at least half of it


@functools.lru_cache(maxsize=None)
def truth(variant: str) -> dict:
    return json.loads((FIXTURES / variant / "truth.json").read_text())


@functools.lru_cache(maxsize=None)
def _run(variant: str, args: tuple[str, ...]) -> dict:
    code, out, err = run_cli("gaps", FIXTURES / variant, "--format", "json", *args)
    assert code == 0, f"exit {code}: {err}"
    (run,) = json.loads(out)["runs"]
    return run


def gaps_run(variant: str, *args: str) -> dict:
    """``traceana gaps FIXTURE --format json ARGS``: the one run (cached; do not modify)."""
    return _run(variant, args)


def key(g: dict) -> tuple:
    return (g["lane"], g["start_ns"], g["end_ns"], g["duration_ns"], g["next_op"])


def covered(start: int, end: int, marks: list[tuple[int, int]]) -> int:
    return sum(max(0, min(e, end) - max(s, start)) for s, e in union_of(marks))


def expected_cause(t: dict, g: dict) -> str:
    """The documented rule, applied to the truth: a transfer covering at least half of the gap
    → transfer; else the next op dispatched at or after the lane fell idle → host_dispatch;
    else runtime."""
    transfers = [(x["start_ns"], x["end_ns"]) for x in t["transfers"]]
    if covered(g["start_ns"], g["end_ns"], transfers) >= COVER_SHARE * g["duration_ns"]:
        return "transfer"
    return "host_dispatch" if g["dispatch_after_idle"] else "runtime"


def one_core(t: dict) -> list[dict]:
    """The executions of physical core 0 (with LNC=2 both cores run each one)."""
    return [e for e in t["executions"] if e["pcore_idx"] == 0]


# --- naive: six executions, five gaps ---------------------------------------------------------

def test_naive_has_six_executions_and_exactly_the_truths_gaps():
    t, run = truth(NAIVE), gaps_run(NAIVE)
    assert len(t["executions"]) == 6
    assert run["summary"]["executions"] == 6
    assert sorted(map(key, run["gaps"])) == sorted(map(key, t["gaps"]))
    # one lane on one core: the device gaps are the same intervals
    assert sorted((g["start_ns"], g["end_ns"]) for g in run["device_gaps"]) == \
        sorted((g["start_ns"], g["end_ns"]) for g in t["gaps"])


def test_naive_gap_causes_follow_the_documented_rule():
    t, run = truth(NAIVE), gaps_run(NAIVE)
    got = {(g["lane"], g["start_ns"]): g["cause"] for g in run["gaps"]}
    (add,) = [g for g in t["gaps"] if g["next_op"] == "aten::add"]
    assert add["transfer_in_gap"]
    assert got[(add["lane"], add["start_ns"])] == "transfer"
    for g in t["gaps"]:
        assert got[(g["lane"], g["start_ns"])] == expected_cause(t, g), g["next_op"]
    # the truth has both kinds besides transfer, so both rules are exercised
    assert {expected_cause(t, g) for g in t["gaps"]} == {"transfer", "host_dispatch", "runtime"}


def test_naive_summary_is_the_truths_arithmetic():
    t, s = truth(NAIVE), gaps_run(NAIVE)["summary"]
    execs = one_core(t)
    busy = sum(e["end_ns"] - e["start_ns"] for e in execs)
    idle = sum(g["duration_ns"] for g in t["gaps"])
    window = max(e["end_ns"] for e in execs) - min(e["start_ns"] for e in execs)
    assert s["busy_ns"] == busy
    assert s["idle_ns"] == idle
    assert s["window_ns"] == window
    assert (s["leading_ns"], s["trailing_ns"]) == (0, 0)
    assert s["idle_pct"] == pytest.approx(100 * idle / window, abs=0.005)
    assert s["gap_count"] == len(t["gaps"])
    assert s["gap_max_ns"] == max(g["duration_ns"] for g in t["gaps"])


@pytest.mark.parametrize("variant", [FUSED, COMPILED])
def test_one_execution_has_no_gap_and_no_idle(variant):
    t, run = truth(variant), gaps_run(variant)
    (e,) = t["executions"]
    assert t["gaps"] == []
    s = run["summary"]
    assert (s["executions"], s["gap_count"], s["idle_ns"]) == (1, 0, 0)
    assert s["busy_ns"] == s["window_ns"] == e["end_ns"] - e["start_ns"]
    assert s["idle_pct"] == 0
    assert run["gaps"] == [] and run["device_gaps"] == []


# --- LNC=2: two physical cores, one logical core -----------------------------------------------

def test_lnc2_lists_both_core_lanes_with_their_executions_and_gaps():
    t, run = truth(LNC2), gaps_run(LNC2)
    lanes = {lane["lane"]: lane for lane in run["lanes"]}
    truth_lanes = sorted({e["lane"] for e in t["executions"]})
    assert len(truth_lanes) == t["lnc"] == 2
    assert sorted(lanes) == truth_lanes
    for lane in truth_lanes:
        n_exec = sum(e["lane"] == lane for e in t["executions"])
        n_gaps = sum(g["lane"] == lane for g in t["gaps"])
        assert (n_exec, n_gaps) == (6, 5)
        assert (lanes[lane]["executions"], lanes[lane]["gap_count"]) == (n_exec, n_gaps)
        assert lanes[lane]["idle_ns"] == sum(g["duration_ns"] for g in t["gaps"]
                                             if g["lane"] == lane)
    assert sorted(map(key, run["gaps"])) == sorted(map(key, t["gaps"]))


def test_lnc2_device_is_the_union_of_its_cores():
    t, run = truth(LNC2), gaps_run(LNC2)
    blocks = union_of([(e["start_ns"], e["end_ns"]) for e in t["executions"]])
    device_gaps = [(a[1], b[0]) for a, b in zip(blocks, blocks[1:])]
    s = run["summary"]
    assert s["executions"] == len(t["executions"]) == 12
    assert s["gap_count"] == len(device_gaps) == 5
    assert s["busy_ns"] == sum(e - b for b, e in blocks)
    assert s["idle_ns"] == sum(e - b for b, e in device_gaps)
    (device,) = run["devices"]
    assert device["gap_count"] == 5
    assert sorted((g["start_ns"], g["end_ns"]) for g in run["device_gaps"]) == device_gaps


# --- per op -------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", [NAIVE, LNC2])
def test_idle_before_add_is_counted_under_transfer(variant):
    t, run = truth(variant), gaps_run(variant)
    add_gap = {g["duration_ns"] for g in t["gaps"] if g["next_op"] == "aten::add"}
    (before_add,) = add_gap  # both cores of LNC=2 see the same gap
    (row,) = [r for r in run["ops"] if r["op"] == "aten::add"]
    assert row["idle_before_ns"] == before_add
    assert row["transfer_ns"] == before_add
    assert row["gaps"] == 1
    assert row["host_dispatch_ns"] == row["runtime_ns"] == 0
    names = {x["name"] for x in t["transfers"]}
    assert row["transfers"] and set(row["transfers"].split(", ")) <= names
    # idle before every op adds up to the truth's idle time (both LNC=2 cores idle alike)
    lane = t["executions"][0]["lane"]
    assert sum(r["idle_before_ns"] for r in run["ops"]) == \
        sum(g["duration_ns"] for g in t["gaps"] if g["lane"] == lane)


# --- windows and filters --------------------------------------------------------------------------

@pytest.mark.parametrize("variant", [NAIVE, LNC2])
def test_step_3_holds_the_same_executions_and_gaps(variant):
    t = truth(variant)
    step = t["profiler_step"]
    assert step["name"] == "ProfilerStep#3"
    run = gaps_run(variant, "--step", "3")
    execs = one_core(t)
    first, last = min(e["start_ns"] for e in execs), max(e["end_ns"] for e in execs)
    assert run["window"]["origin"] == "ProfilerStep#3"
    assert (run["window"]["start_ns"], run["window"]["end_ns"]) == (step["start_ns"],
                                                                    step["end_ns"])
    s = run["summary"]
    assert s["leading_ns"] == first - step["start_ns"] > 0
    assert s["trailing_ns"] == step["end_ns"] - last > 0
    assert s["window_ns"] == step["end_ns"] - step["start_ns"]
    assert s["busy_ns"] == sum(e["end_ns"] - e["start_ns"] for e in execs)
    # (with LNC=2 both cores idle at the same times, so the device idles like core 0)
    assert s["idle_ns"] == sum(g["duration_ns"] for g in t["gaps"] if g["lane"] == execs[0]["lane"])
    assert s["executions"] == len(t["executions"])
    assert sorted(map(key, run["gaps"])) == sorted(map(key, t["gaps"]))
    assert s["idle_pct"] == pytest.approx(100 * s["idle_ns"] / s["window_ns"], abs=0.005)


def test_window_is_an_offset_span_after_the_first_event():
    t = truth(NAIVE)
    # The run's first event is ProfilerStep#3: every time the truth records lies inside it.
    recorded = ([t["profiler_step"]["start_ns"]]
                + [c[k] for c in t["calls"] for k in c if k.endswith("_start_ns")]
                + [e["start_ns"] for e in t["executions"]]
                + [x["start_ns"] for x in t["transfers"]])
    origin = min(recorded)
    assert origin == t["profiler_step"]["start_ns"]
    w0, w1 = origin + 500_000, origin + 2_000_000  # 0.5ms:2ms
    run = gaps_run(NAIVE, "--window", "0.5ms:2ms")
    assert (run["window"]["start_ns"], run["window"]["end_ns"]) == (w0, w1)
    inside = [(max(e["start_ns"], w0), min(e["end_ns"], w1)) for e in t["executions"]
              if e["end_ns"] > w0 and e["start_ns"] < w1]
    kept = [g for g in t["gaps"] if w0 <= g["start_ns"] and g["end_ns"] <= w1]
    # the edges fall inside executions, so no truth gap is cut in two
    assert not [g for g in t["gaps"] if g["start_ns"] < w0 < g["end_ns"] or
                g["start_ns"] < w1 < g["end_ns"]]
    s = run["summary"]
    assert s["executions"] == len(inside) == 4
    assert s["busy_ns"] == sum(e - b for b, e in inside)
    assert s["leading_ns"] == min(b for b, _ in inside) - w0
    assert s["trailing_ns"] == w1 - max(e for _, e in inside)
    assert s["idle_ns"] == sum(g["duration_ns"] for g in kept)
    assert s["window_ns"] == w1 - w0
    assert sorted(map(key, run["gaps"])) == sorted(map(key, kept))


def test_min_gap_drops_short_gaps_from_the_list_and_count_but_not_from_idle():
    t = truth(NAIVE)
    run = gaps_run(NAIVE, "--min-gap", "30us")
    long_ones = [g for g in t["gaps"] if g["duration_ns"] >= 30_000]
    assert 0 < len(long_ones) < len(t["gaps"])  # the threshold splits the truth's gaps
    assert sorted(map(key, run["gaps"])) == sorted(map(key, long_ones))
    assert run["summary"]["gap_count"] == len(long_ones)
    (lane,) = run["lanes"]
    assert lane["gap_count"] == len(long_ones)
    assert run["summary"]["idle_ns"] == lane["idle_ns"] == sum(g["duration_ns"] for g in t["gaps"])


@pytest.mark.parametrize("core", [0, 1])
def test_lane_glob_selects_one_lnc2_core(core):
    t = truth(LNC2)
    (lane,) = {e["lane"] for e in t["executions"] if e["pcore_idx"] == core}
    glob = "*/neuron_hw/NC0:" + lane.rsplit(":", 1)[1]
    run = gaps_run(LNC2, "--lane", glob)
    assert [x["lane"] for x in run["lanes"]] == [lane]
    mine = [e for e in t["executions"] if e["lane"] == lane]
    assert run["summary"]["executions"] == len(mine) == 6
    assert run["summary"]["lanes"] == 1
    assert run["summary"]["busy_ns"] == sum(e["end_ns"] - e["start_ns"] for e in mine)
    assert sorted(map(key, run["gaps"])) == sorted(map(key, [g for g in t["gaps"]
                                                             if g["lane"] == lane]))
