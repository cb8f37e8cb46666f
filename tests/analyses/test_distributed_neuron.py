"""`traceana ranks` and `gaps` on the Neuron fixture with collectives (fixtures/allreduce_2nc:
two workers on two NeuronCores, an all-reduce per step, rank 1 late), against its truth.json.

Expected values come only from truth.json (what fixtures/make_collectives.py put in) and
arithmetic on it here; never from traceana's output. Also: ranks from Explorer's worker_gid
(readers/neuron.py), steps of an export of several processes taken per process, and the
rank in a multi-worker Neuron file name.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import polars as pl
import pytest
from conftest import run_cli

import trace_analyzer as ta
from trace_analyzer.inputs.discover import discover
from trace_analyzer.questions.gaps.causes import LATENCY_NS
from trace_analyzer.readers.neuron import worker_ranks

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "allreduce_2nc"
# The whole run (trace.json per rank beside both exports), each export alone, and the
# per-rank raw capture folders' trace.json files (no worker_gid there: no ranks).
INPUTS = {"run": FIXTURE, "parquet": FIXTURE / "explorer" / "parquet",
          "json": FIXTURE / "explorer" / "json" / "system_profile.json"}
FIGURES = ("start_ns", "window_ns", "compute_ns", "communication_ns", "overlap_ns",
           "exposed_communication_ns", "memory_ns", "idle_ns")


@functools.cache
def truth() -> dict:
    return json.loads((FIXTURE / "truth.json").read_text())


@functools.cache
def ranks_json(which: str) -> dict:
    code, out, err = run_cli("ranks", INPUTS[which], "--format", "json", "--no-cache")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    return run


def test_two_ranks_numbered_by_worker_gid_and_info_says_so():
    t = truth()
    code, out, err = run_cli("info", FIXTURE, "--format", "json", "--no-cache")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    procs = {p["pid"]: p for p in run["processes"]}
    assert {pid: (p["rank"], p["rank_origin"]) for pid, p in procs.items()} == {
        r["pid"]: (r["worker_gid"], "worker_gid") for r in t["ranks"]
    }
    code, table, _ = run_cli("info", FIXTURE, "--no-cache")
    assert code == 0 and "rank from" in table and "worker_gid" in table


@pytest.mark.parametrize("which", INPUTS)
def test_ranks_found_with_their_pids(which):
    got = {(r["rank"], r["pid"]) for r in ranks_json(which)["ranks"]}
    assert got == {(r["rank"], r["pid"]) for r in truth()["ranks"]}


@pytest.mark.parametrize("which", INPUTS)
def test_each_rank_and_step_is_the_truths(which):
    """Window, compute, communication, overlap, exposed communication, memory and idle per
    rank and step: as the generator laid them out (truth.json "steps")."""
    got = {(s["rank"], s["step"]): s for s in ranks_json(which)["steps"]}
    want = {(s["rank"], s["step"]): s for s in truth()["steps"]}
    assert sorted(got) == sorted(want)
    for k, w in want.items():
        assert got[k]["device"] == w["device"]
        assert {f: got[k][f] for f in FIGURES} == {f: w[f] for f in FIGURES}, k
        # the breakdown adds up to the window, as docs/distributed.md says
        parts = ("compute_ns", "exposed_communication_ns", "memory_ns", "idle_ns")
        assert sum(got[k][p] for p in parts) == w["window_ns"]


@pytest.mark.parametrize("which", INPUTS)
def test_rank_1_is_each_steps_straggler_because_it_started_late(which):
    t = truth()
    steps = {(s["rank"], s["step"]): s for s in t["steps"]}
    got = {s["step"]: s for s in ranks_json(which)["stragglers"]}
    assert sorted(got) == sorted(s["step"] for s in t["stragglers"])
    for want in t["stragglers"]:
        row = got[want["step"]]
        assert (row["rank"], row["pid"], row["ranks"]) == (want["rank"], want["pid"], 2)
        assert row["why"] == want["why"] == "started late"
        assert row["late_start_ns"] == want["late_start_ns"]
        assert row["extra_compute_ns"] == want["extra_compute_ns"] == 0
        # it waits least in the all-reduce; the other rank waits longer by what it is behind
        mine = steps[(want["rank"], want["step"])]["exposed_communication_ns"]
        other = steps[(1 - want["rank"], want["step"])]["exposed_communication_ns"]
        assert (row["wait_ns"], row["others_wait_ns"]) == (mine, other)
        assert row["behind_ns"] == other - mine == want["late_start_ns"]


@pytest.mark.parametrize("which", INPUTS)
def test_one_host_one_clock_the_collectives_measure_no_offset(which):
    """Both workers run on one instance: the all-reduce ends at one instant on both cores,
    so the offset measured on the collectives is 0 (and applied: nothing moves)."""
    offsets = {r["rank"]: r for r in ranks_json(which)["ranks"]}
    for rank, offset in truth()["clock_offset_ns"].items():
        row = offsets[int(rank)]
        got = (row["offset_ns"], row["offset_from"], row["applied"])
        assert got == (offset, "collectives", True)


def test_library_face_agrees_with_the_cli():
    r = ta.ranks(ta.load(FIXTURE, cache=False))
    assert r.stragglers["rank"].to_list() == [s["rank"] for s in truth()["stragglers"]]
    want = sorted(truth()["steps"], key=lambda s: (s["step"], s["rank"]))
    assert r.steps["compute_ns"].to_list() == [s["compute_ns"] for s in want]


def test_raw_traces_alone_have_no_ranks():
    """trace.json carries no distributedInfo and no rank in its name: the worker id is in
    Explorer's export only."""
    folder = FIXTURE / "i-0123456789abcdef0_pid_4243"
    code, out, err = run_cli("info", folder, "--format", "json", "--no-cache")
    assert code == 0, err
    assert [p["rank"] for p in json.loads(out)["runs"][0]["processes"]] == [None]


# --- gaps on the same fixture -------------------------------------------------------------

@functools.cache
def gaps_run() -> dict:
    code, out, err = run_cli("gaps", FIXTURE, "--format", "json", "--no-cache")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    return run


def test_gaps_are_the_truths_gaps():
    got = sorted((g["lane"], g["start_ns"], g["end_ns"]) for g in gaps_run()["gaps"])
    assert got == sorted((g["lane"], g["start_ns"], g["end_ns"]) for g in truth()["hw_gaps"])
    assert gaps_run()["summary"]["executions"] == len(truth()["executions"])


def test_the_gap_before_each_all_reduce_is_a_collective_wait():
    """docs/gaps.md's rule, applied to the truth: the all-reduce was dispatched long before
    the core fell idle (no host dispatch), the gap is longer than the launch latency, no
    copy or sync covers it, and the next execution is a collective: cause ``collective``."""
    got = {(g["lane"], g["start_ns"]): g for g in gaps_run()["gaps"]}
    before = [g for g in truth()["hw_gaps"] if g["next_name"] == "cc_running"]
    assert len(before) == 6  # one per rank and step
    for g in before:
        assert g["next_cpu_op_start_ns"] < g["start_ns"] and g["duration_ns"] > LATENCY_NS
        row = got[(g["lane"], g["start_ns"])]
        assert (row["next_name"], row["cause"]) == ("cc_running", "collective")


def test_the_late_ranks_idle_before_its_step_is_host_dispatch():
    """Between steps each core waits for its host's next op; rank 1's wait holds its late
    start: host_dispatch (the op came after the core fell idle), longer on rank 1 by it."""
    t, got = truth(), {(g["lane"], g["start_ns"]): g for g in gaps_run()["gaps"]}
    between = [g for g in t["hw_gaps"] if g["next_cpu_op_start_ns"] >= g["start_ns"]]
    assert len(between) == 4  # two step boundaries, two ranks
    for g in between:
        assert got[(g["lane"], g["start_ns"])]["cause"] == "host_dispatch"
    by_rank = {g["rank"]: g["duration_ns"] for g in between}
    assert by_rank[1] - by_rank[0] == t["stragglers"][0]["late_start_ns"]


# --- worker_gid, per-process steps, rank in the file name ---------------------------------

def test_worker_ranks_rules():
    df = pl.DataFrame({
        "host": ["i-a"] * 5 + ["i-b"] * 3,
        "pid": [1, 1, 1, 2, 2, 1, 1, 1],
        "rank": [None, 3, 3, -1, None, 5, 6, None],
    })
    # pid 1 on i-a: its one worker id spreads to its row without one; pid 2: -1 is unknown;
    # pid 1 on i-b: two ids, so the row without one stays unknown
    assert worker_ranks(df)["rank"].to_list() == [3, 3, 3, None, None, 5, 6, None]


def _export(folder: Path, rows: list[tuple]) -> Path:
    """An Explorer Parquet export of ``rows``: (name, source, pid, start, end, worker_gid)."""
    folder.mkdir()
    cols = ["name", "trace_event_source", "process_id", "start_ts", "end_ts", "worker_gid"]
    df = pl.DataFrame(rows, schema=cols, orient="row").with_columns(
        id=pl.int_range(pl.len(), dtype=pl.Int64), instance_id=pl.lit("i-x"),
        nc_idx=pl.when(pl.col("trace_event_source") == "neuron_hw").then(pl.col("worker_gid")),
    )
    df.write_parquet(folder / "SystemProfileEvents.parquet")
    return folder


def test_an_export_of_two_processes_takes_steps_per_process(tmp_path):
    """Rank 1's step 1 runs past rank 0's step 2 start: its execution there is step 1 still."""
    folder = _export(tmp_path / "export", [
        ("ProfilerStep#1 [trace.json]", "framework", 10, 0, 1_000, None),
        ("ProfilerStep#2 [trace.json]", "framework", 10, 1_000, 2_000, None),
        ("ProfilerStep#1 [trace.json]", "framework", 11, 300, 1_300, None),
        ("ProfilerStep#2 [trace.json]", "framework", 11, 1_300, 2_300, None),
        ("nc_exec_running", "neuron_hw", 10, 1_100, 1_200, 0),
        ("nc_exec_running", "neuron_hw", 11, 1_100, 1_200, 1),
    ])
    ev = ta.load(folder, cache=False).events.filter(pl.col("name") == "nc_exec_running")
    steps = zip(ev["step"].to_list(), ev["rank"].to_list(), strict=True)
    got = dict(zip(ev["pid"].to_list(), steps, strict=True))
    assert got == {10: (2, 0), 11: (1, 1)}


@pytest.mark.parametrize("name, rank", [
    ("neuron_framework_trace_rank_3.json", 3),  # docs/neuron-formats.md §1.2
    ("trace.json", None),
])
def test_multi_worker_neuron_file_names_give_the_rank(tmp_path, name, rank):
    (tmp_path / name).write_text("{}")
    (tmp_path / "profile_rank_3.ntff").write_bytes(b"x")  # capture CLI's NTFF: listed, not read
    (run,) = discover(tmp_path)
    (src,) = run.sources
    assert (src.rank, src.rank_origin) == (rank, "file name" if rank is not None else None)
    assert [p.name for p in run.ntffs] == ["profile_rank_3.ntff"]
