"""The bundled Neuron RMSNorm fixtures, read by traceana, against the published numbers.

Expected values come from two places only: the blog's published table (PUBLISHED, typed in
here from the issue) and each fixture's truth.json (the generator's own record).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import trace_analyzer as ta
from trace_analyzer.cli import cli
from trace_analyzer.inputs.discover import CACHE_DIR_NAME

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
VARIANTS = ["rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled", "rmsnorm_naive_lnc2"]
COLLECTIVES = "allreduce_2nc"  # make_collectives.py: tested in tests/analyses/test_distributed_neuron.py
SESSION = "i-0123456789abcdef0_pid_4242/20261102_120000_000"

# Published (blog "System-level profiling on AWS Trainium", Part 1): op -> (calls, self CPU
# µs, device µs). The LNC=2 variant is the naive workload.
PUBLISHED = {
    "rmsnorm_naive": {
        "aten::mul": (3, 60.9, 1164.5),
        "aten::add": (1, 26.6, 434.6),
        "aten::rsqrt": (1, 15.6, 415.0),
        "aten::mean": (1, 21.1, 340.8),
    },
    "rmsnorm_fused": {"aten::_fused_rms_norm": (1, 47.6, 403.3)},
    "rmsnorm_compiled": {"Torch-Compiled Region: 0/0": (1, 98.4, 375.5)},
}
PUBLISHED["rmsnorm_naive_lnc2"] = PUBLISHED["rmsnorm_naive"]


def truth(variant: str) -> dict:
    return json.loads((FIXTURES / variant / "truth.json").read_text())


def info_json(path: Path) -> dict:
    result = CliRunner().invoke(cli, ["info", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("variant", VARIANTS)
def test_info_finds_one_session_run_with_the_recorded_lanes(variant):
    t = truth(variant)
    (run,) = info_json(FIXTURES / variant)["runs"]
    assert run["layouts"] == ["session"]
    formats = sorted(s["format"] for s in run["sources"])
    assert formats == ["explorer-json", "explorer-parquet", "kineto-json"]
    lanes = {lane["lane"]: lane["events"] for lane in run["lanes"]}
    # After duplicates are removed, framework lanes come from trace.json and the runtime and
    # hardware lanes from the Parquet export.
    expected = {
        lane: counts["trace_json"] if "/framework/" in lane else counts["parquet"]
        for lane, counts in t["lanes"].items()
    }
    assert lanes == expected
    hw = [lane for lane in t["lanes"] if "/neuron_hw/" in lane]
    assert run["lanes_by_kind"]["hardware"] == sorted(hw)
    assert run["hardware_lanes"] == t["lnc"]
    (proc,) = run["processes"]
    assert (proc["host"], proc["pid"]) == (t["instance"], t["pid"])


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("part,source", [
    (f"{SESSION}/trace.json", "trace_json"),
    ("explorer/parquet", "parquet"),
    ("explorer/json/system_profile.json", "json"),
])
def test_each_source_alone_gives_its_lanes(variant, part, source):
    t = truth(variant)
    (run,) = info_json(FIXTURES / variant / part)["runs"]
    lanes = {lane["lane"]: lane["events"] for lane in run["lanes"]}
    assert lanes == {lane: c[source] for lane, c in t["lanes"].items() if c[source]}


def _executions_by_op(events: pl.DataFrame) -> pl.DataFrame:
    """Join each nc_exec_running to its op through exec_id -> runtime seq_id -> Stream event."""
    hw = events.filter(pl.col("name") == "nc_exec_running").drop("seq_id")
    rt = (events.filter(pl.col("lane_kind") == "runtime", pl.col("exec_id").is_not_null(),
                        pl.col("seq_id").is_not_null())
          .select("exec_id", "seq_id").unique())
    ops = events.filter(pl.col("lane_kind") == "framework_stream").select("seq_id", op="name")
    return hw.join(rt, on="exec_id").join(ops, on="seq_id")


@pytest.mark.parametrize("variant", VARIANTS)
def test_device_time_per_op_is_the_published_one(variant):
    events = ta.load(FIXTURES / variant).events
    execs = _executions_by_op(events).filter(pl.col("core") == 0)
    got = execs.group_by("op").agg(calls=pl.len(), device_ns=pl.col("duration_ns").sum())
    got = {r["op"]: (r["calls"], r["device_ns"] / 1000) for r in got.iter_rows(named=True)}
    expected = {op: (calls, dev) for op, (calls, _, dev) in PUBLISHED[variant].items()}
    assert got.keys() == expected.keys()
    for op, (calls, dev) in expected.items():
        assert got[op][0] == calls
        assert got[op][1] == pytest.approx(dev, abs=0.05)


@pytest.mark.parametrize("variant", VARIANTS)
def test_cpu_op_time_per_op_is_the_published_self_cpu(variant):
    # The published ops have no child cpu_op in these fixtures, so self CPU is their duration.
    events = ta.load(FIXTURES / variant).events
    ops = events.filter(pl.col("lane_kind") == "framework_op",
                        pl.col("name").is_in(list(PUBLISHED[variant])))
    got = ops.group_by("name").agg(calls=pl.len(), cpu_us=pl.col("duration_ns").sum() / 1000)
    for r in got.iter_rows(named=True):
        calls, self_cpu, _ = PUBLISHED[variant][r["name"]]
        assert (r["calls"], round(r["cpu_us"], 1)) == (calls, self_cpu)


def test_lnc2_runs_each_execution_on_both_physical_cores():
    events = ta.load(FIXTURES / "rmsnorm_naive_lnc2").events
    hw = events.filter(pl.col("name") == "nc_exec_running")
    per_exec = hw.group_by("exec_id").agg(cores=pl.col("core").sort(), lanes=pl.col("lane").n_unique())
    assert per_exec.height == 6
    assert per_exec["cores"].to_list() == [[0, 1]] * 6
    assert set(per_exec["lanes"]) == {2}


@pytest.mark.parametrize("variant", ["rmsnorm_naive", "rmsnorm_naive_lnc2"])
def test_host_to_device_copy_runs_in_the_gap_before_add(variant):
    events = ta.load(FIXTURES / variant).events
    execs = _executions_by_op(events).filter(pl.col("core") == 0).sort("start_ns")
    i = execs["op"].to_list().index("aten::add")
    idle_from, idle_to = execs["end_ns"][i - 1], execs["start_ns"][i]
    copies = events.filter(pl.col("lane_kind") == "transfer")
    assert set(copies["name"]) == {"nrt_tensor_write", "dmem_buf_copyin"}
    for start, end in copies.select("start_ns", "end_ns").iter_rows():
        assert idle_from <= start and end <= idle_to
    # The gap before add is the longest between executions (the generator's record).
    gaps = truth(variant)["gaps"]
    longest = max(gaps, key=lambda g: g["duration_ns"])
    assert longest["next_op"] == "aten::add"
    assert (idle_from, idle_to) == (longest["start_ns"], longest["end_ns"])


@pytest.mark.parametrize("variant", VARIANTS)
def test_events_fall_in_profiler_step_3(variant):
    t = truth(variant)["profiler_step"]
    events = ta.load(FIXTURES / variant).events
    step = events.filter(pl.col("name") == "ProfilerStep#3")
    assert step.select("start_ns", "end_ns").row(0) == (t["start_ns"], t["end_ns"])
    execs = events.filter(pl.col("name") == "nc_exec_running")
    assert execs["step"].to_list() == [3] * execs.height


def test_session_artifacts_are_listed_not_decoded():
    t = truth("rmsnorm_naive")
    (run,) = info_json(FIXTURES / "rmsnorm_naive")["runs"]
    ntffs = [Path(p["ntff"]).name for p in run["neff_ntff"] if p["ntff"]]
    neffs = sorted(Path(p["neff"]).name for p in run["neff_ntff"] if p["neff"])
    assert ntffs == t["files"]["ntff"]
    assert neffs == sorted(t["files"]["neff"])
    assert {Path(p).name for p in run["raw_system_traces"]} >= {"ntrace.pb", "trace_info.pb"}
    # The Explorer export is there, so no advice to run neuron-explorer.
    assert not [w for w in run["warnings"] if "neuron-explorer view" in w]


def test_folder_of_fixtures_is_five_runs():
    runs = info_json(FIXTURES)["runs"]
    assert sorted(Path(r["root"]).name for r in runs) == sorted([*VARIANTS, COLLECTIVES])


def test_fixture_script_reproduces_the_checked_in_files(tmp_path):
    """The fixtures are the script's output: regenerating them changes nothing."""
    import subprocess
    import sys

    script = FIXTURES / "make_fixtures.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for variant in [*VARIANTS, COLLECTIVES]:
        for f in (FIXTURES / variant).rglob("*"):
            # traceana's own cache (a `traceana gaps fixtures/...` run, e.g. `make demo`)
            if f.is_file() and CACHE_DIR_NAME not in f.parts:
                twin = tmp_path / variant / f.relative_to(FIXTURES / variant)
                assert twin.read_bytes() == f.read_bytes(), f
