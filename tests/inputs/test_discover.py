"""Discovery: Neuron capture layouts (docs/neuron-formats.md §1.3), NEFF/NTFF pairing (§1.4), runs and ranks."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import X, info_json, kineto, write_parquet, write_trace

import trace_analyzer as ta

BASE = 1_793_620_800_000_000_000
RAW = ("ntrace.pb", "trace_info.pb", "cpu_util.pb", "host_mem.pb")


def touch(path: Path) -> Path:
    """Write an opaque placeholder (the .pb, .neff and .ntff formats are not decoded)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x00placeholder")
    return path


def neuron_trace(path: Path, pid: int) -> Path:
    """Write a torch-neuronx trace.json: one aten op, its dispatch and its stream event."""
    return write_trace(path, kineto([
        X("cpu_op", "aten::add", 10, 30, pid=pid, tid=pid),
        X("privateuse1_runtime", "aten::add", 12, 10, pid=pid, tid=pid, correlation=2),
        X("privateuse1_driver", "aten::add", 20, 15, pid=pid, tid=0, correlation=2,
          nrt_sequence_id=844424930132009),
    ], baseTimeNanoseconds=BASE))


def only_run(path) -> dict:
    runs = info_json(path)["runs"]
    assert len(runs) == 1, [r["root"] for r in runs]
    return runs[0]


def test_flat_capture_folder(tmp_path):
    cap = tmp_path / "i-012590440bb9fd263_pid_98399"
    h = "14382885777943380728"
    ntffs = [touch(cap / f"{h}_instid_0_vnc_{v}.ntff") for v in (0, 1)]
    neff = touch(cap / f"neff_{h}.neff")
    for name in RAW:
        touch(cap / name)
    run = only_run(tmp_path)
    assert run["root"] == str(tmp_path)
    assert run["layouts"] == ["flat"]
    assert sorted(run["raw_system_traces"]) == sorted(str(cap / n) for n in RAW)
    pairs = {(p["ntff"], p["neff"], p["mode"]) for p in run["neff_ntff"]}
    assert pairs == {(str(n), str(neff), "model") for n in ntffs}
    assert not any("no neff_" in w for w in run["warnings"])


@pytest.mark.parametrize("stamp", ["1776672348756756905", "20261101_120000_000"])
def test_session_capture_folder(tmp_path, stamp):
    session = tmp_path / "i-0123456789abcdef0_pid_4242" / stamp
    ntff = touch(session / "profile_nc_0_session_0.ntff")
    neff = touch(session / "neff_395760075800974_vnc_0.neff")
    neuron_trace(session / "trace.json", 4242)
    run = only_run(tmp_path)
    assert run["layouts"] == ["session"]
    assert {(p["ntff"], p["neff"], p["mode"]) for p in run["neff_ntff"]} == {
        (str(ntff), None, "session"), (None, str(neff), None)}
    assert [(p["host"], p["pid"]) for p in run["processes"]] == [("i-0123456789abcdef0", 4242)]
    assert set(run["lanes_by_kind"]["framework_stream"]) == {
        "i-0123456789abcdef0/PID:4242/framework/Stream:0"}


def test_vllm_neffs_folder_is_the_same_run(tmp_path):
    session = tmp_path / "i-0abc_pid_68572" / "1776672348756756905"
    touch(session / "profile_nc_0_session_0.ntff")
    touch(session / "ntrace.pb")
    neffs = [touch(tmp_path / "neffs" / f"graph_{h}.neff") for h in (111, 222)]
    run = only_run(tmp_path)
    assert run["root"] == str(tmp_path)
    assert set(run["layouts"]) == {"session", "vllm-neffs"}
    listed = {p["neff"] for p in run["neff_ntff"]}
    assert {str(n) for n in neffs} <= listed


def test_bare_ntff_neff_pair(tmp_path):
    ntff, neff = touch(tmp_path / "profile.ntff"), touch(tmp_path / "file.neff")
    run = only_run(tmp_path)
    assert run["layouts"] == ["bare"]
    listed = {p["ntff"] for p in run["neff_ntff"]} | {p["neff"] for p in run["neff_ntff"]}
    assert {str(ntff), str(neff)} <= listed
    assert run["events"] == 0


def test_folder_of_two_runs(tmp_path):
    neuron_trace(tmp_path / "runA" / "i-a_pid_1" / "20261101_120000_000" / "trace.json", 1)
    neuron_trace(tmp_path / "runB" / "i-b_pid_2" / "trace.json", 2)
    runs = info_json(tmp_path)["runs"]
    assert [r["root"] for r in runs] == [str(tmp_path / "runA"), str(tmp_path / "runB")]
    assert [[p["pid"] for p in r["processes"]] for r in runs] == [[1], [2]]
    with pytest.raises(ta.UsageError):
        ta.load(tmp_path)  # one profile was asked for; there are two


def test_two_pid_folders_are_one_run_of_two_processes(tmp_path):
    neuron_trace(tmp_path / "i-a_pid_1" / "20261101_120000_000" / "trace.json", 1)
    neuron_trace(tmp_path / "i-a_pid_2" / "20261101_120000_001" / "trace.json", 2)
    run = only_run(tmp_path)
    assert run["root"] == str(tmp_path)
    assert [(p["host"], p["pid"]) for p in run["processes"]] == [("i-a", 1), ("i-a", 2)]


def test_model_mode_hash_mismatch_warns(tmp_path):
    cap = tmp_path / "i-a_pid_1"
    ntff = touch(cap / "395760075800974_instid_0_vnc_0.ntff")
    touch(cap / "neff_14382885777943380728.neff")
    run = only_run(tmp_path)
    warnings = [w for w in run["warnings"] if str(ntff) in w]
    assert warnings and "395760075800974" in warnings[0], run["warnings"]


def test_ntrace_without_export_warns_and_reads_trace_json(tmp_path):
    session = tmp_path / "i-a_pid_4242" / "20261101_120000_000"
    for name in ("ntrace.pb", "trace_info.pb"):
        touch(session / name)
    neuron_trace(session / "trace.json", 4242)
    run = only_run(tmp_path)
    hint = [w for w in run["warnings"] if "neuron-explorer view" in w]
    assert len(hint) == 1 and str(session) in hint[0], run["warnings"]
    assert run["events"] == 3
    assert set(run["lanes_by_kind"]) == {"framework_op", "framework_dispatch", "framework_stream"}


def test_ntrace_with_export_beside_it_does_not_warn(tmp_path):
    session = tmp_path / "i-x_pid_1" / "20261101_120000_000"
    touch(session / "ntrace.pb")
    neuron_trace(session / "trace.json", 1)
    write_parquet(tmp_path / "explorer_out" / "SystemProfileEvents.parquet", [
        dict(id=184, name="nc_exec_running", start_ts=BASE + 25_000, end_ts=BASE + 30_000,
             trace_event_source="neuron_hw", instance_id="i-x", process_id=1, thread_id=9,
             nc_idx=0, pcore_idx=0),
    ])
    run = only_run(tmp_path)  # the export joins the capture's run
    assert not any("neuron-explorer view" in w for w in run["warnings"]), run["warnings"]
    assert run["hardware_lanes"] == 1
    assert run["lanes_by_kind"]["hardware"] == ["i-x/PID:1/neuron_hw/NC0:0"]


def test_undecoded_capture_is_not_called_host_only(tmp_path):
    session = tmp_path / "i-a_pid_4242" / "20261101_120000_000"
    touch(session / "ntrace.pb")
    touch(session / "profile_nc_0_session_0.ntff")
    neuron_trace(session / "trace.json", 4242)
    run = only_run(tmp_path)
    assert not any("host activity only" in n for n in run["notes"]), run["notes"]


def test_rank_from_neuron_framework_trace_name(tmp_path):
    p = neuron_trace(tmp_path / "i-a_pid_7" / "neuron_framework_trace_rank_3.json", 7)
    run = only_run(tmp_path)
    assert [(p_["pid"], p_["rank"], p_["rank_origin"]) for p_ in run["processes"]] == [
        (7, 3, "file name")]
    assert ta.load(p).events["rank"].unique().to_list() == [3]


def test_per_core_device_json_is_skipped_not_read(tmp_path):
    cap = tmp_path / "i-a_pid_4242"
    neuron_trace(cap / "trace.json", 4242)
    device = cap / "i-a_pid_4242_nc_0_session_0.json"
    device.write_text("{ this is not even JSON: a reader that opened it would fail")
    run = only_run(tmp_path)
    assert run["events"] == 3
    assert [s["path"] for s in run["sources"]] == [str(cap / "trace.json")]
    assert any(str(device) in n and "not read" in n for n in run["notes"]), run["notes"]


def test_same_lanes_whichever_level_is_named(tmp_path):
    cap = tmp_path / "i-0abc_pid_4242"
    session = cap / "20261101_120000_000"
    trace = neuron_trace(session / "trace.json", 4242)
    expected = {"i-0abc/PID:4242/framework/TID:4242", "i-0abc/PID:4242/framework/Stream:0"}
    for path in (tmp_path, cap, trace, session):
        assert set(ta.load(path).events["lane"]) == expected, path


def test_non_trace_json_in_a_folder_is_skipped(tmp_path):
    neuron_trace(tmp_path / "trace.json", 1)
    write_trace(tmp_path / "config.json", {"lr": 0.1})
    run = only_run(tmp_path)
    assert run["events"] == 3
    skipped = [s for s in run["sources"] if not s["read"]]
    assert [s["path"] for s in skipped] == [str(tmp_path / "config.json")]


def test_empty_folder_is_an_input_error(tmp_path):
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ta.InputError, match="no profile found"):
        ta.load(tmp_path / "nothing")
