"""The Neuron Explorer readers: the Parquet export (schema 7.4.0) and the legacy JSON export."""

from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import info_json, run_cli, write_metadata, write_parquet, write_trace

import trace_analyzer as ta

T = 1_793_620_800_001_000_000  # epoch ns
INST, PID = "i-x", 1

# One eager op in Explorer's rows (docs/neuron-formats.md §2.1, the reconstructed SystemProfileEvents).
ROWS = [
    dict(id=4611686018427389506, name="aten::mul [trace.json]", start_ts=T + 10_250,
         end_ts=T + 45_375, trace_event_source="framework", instance_id=INST, process_id=PID,
         thread_id=7, flow_id=["844424930132009"], extra_attributes_json="{}"),
    dict(id=4611686018427389507, name="aten::mul [trace.json]", start_ts=T + 30_000,
         end_ts=T + 90_000, trace_event_source="framework", instance_id=INST, process_id=PID,
         thread_id=0, pcore_idx=0, worker_gid=0, flow_id=["844424930132009"],
         framework_stream_id="0",
         extra_attributes_json='{"nrt_sequence_id":844424930132009,"neff_cache_key":"mul--_[...]"}'),
    dict(id=3670, name="dmem_buf_copyin", start_ts=T + 20_000, end_ts=T + 25_000,
         trace_event_source="neuron_rt", instance_id=INST, process_id=PID, thread_id=PID, nc_idx=0),
    dict(id=3671, name="nrta_execute_schedule", start_ts=T + 31_000, end_ts=T + 52_000,
         trace_event_source="neuron_rt", instance_id=INST, process_id=PID, thread_id=PID,
         nc_idx=0, worker_gid=0, flow_id=["844424930132009"], framework_stream_id="0",
         extra_attributes_json='{"model_id":605291374318702}'),
    dict(id=3676, name="kbl_exec_wait", start_ts=T + 53_000, end_ts=T + 101_000,
         trace_event_source="neuron_rt", instance_id=INST, process_id=PID, thread_id=4250,
         nc_idx=0, worker_gid=0, flow_id=["844424930132009", "57"], framework_stream_id="0",
         extra_attributes_json='{"exec_id":57,"model_id":605291374318702}'),
    dict(id=184, name="nc_exec_running", start_ts=T + 55_000, end_ts=T + 99_000,
         duration_ns=44_000, trace_event_source="neuron_hw", instance_id=INST, process_id=PID,
         thread_id=4250, nc_idx=0, pcore_idx=1, worker_gid=0, flow_id=["57"],
         extra_attributes_json='{"exec_id":57,"model_id":605291374318702,"device_core_idx":1}'),
]

EXPECTED_LANES = {
    4611686018427389506: ("aten::mul", "framework_op", f"{INST}/PID:{PID}/framework/TID:7"),
    4611686018427389507: ("aten::mul", "framework_stream", f"{INST}/PID:{PID}/framework/Stream:0"),
    3670: ("dmem_buf_copyin", "transfer", f"{INST}/PID:{PID}/neuron_rt/NC:0"),
    3671: ("nrta_execute_schedule", "runtime", f"{INST}/PID:{PID}/neuron_rt/NC:0"),
    3676: ("kbl_exec_wait", "runtime", f"{INST}/PID:{PID}/neuron_rt/NC:0"),
    184: ("nc_exec_running", "hardware", f"{INST}/PID:{PID}/neuron_hw/NC0:1"),
}


def lanes_of(events: pl.DataFrame) -> dict:
    return {r["orig_id"]: (r["name"], r["lane_kind"], r["lane"])
            for r in events.select("orig_id", "name", "lane_kind", "lane").to_dicts()}


def export(tmp_path, rows=ROWS, version: str | None = "7.4.0", **kw):
    folder = tmp_path / "export"
    write_parquet(folder / "SystemProfileEvents.parquet", rows, **kw)
    if version:
        write_metadata(folder, version)
    return folder


# --- Parquet -------------------------------------------------------------------------------


def test_parquet_lanes_kinds_and_names(tmp_path):
    ev = ta.load(export(tmp_path)).events
    assert lanes_of(ev) == EXPECTED_LANES


def test_parquet_times_are_epoch_ns(tmp_path):
    ev = ta.load(export(tmp_path)).events
    hw = ev.filter(pl.col("orig_id") == 184).row(0, named=True)
    assert (hw["start_ns"], hw["end_ns"], hw["duration_ns"]) == (T + 55_000, T + 99_000, 44_000)
    # duration_ns absent in a row: end - start
    fw = ev.filter(pl.col("orig_id") == 4611686018427389506).row(0, named=True)
    assert fw["duration_ns"] == 35_125


def test_parquet_link_columns(tmp_path):
    ev = ta.load(export(tmp_path)).events
    got = {r["orig_id"]: (r["flow_ids"], r["exec_id"], r["seq_id"])
           for r in ev.select("orig_id", "flow_ids", "exec_id", "seq_id").to_dicts()}
    assert got == {
        4611686018427389506: ([844424930132009], None, None),
        4611686018427389507: ([844424930132009], None, 844424930132009),
        3670: (None, None, None),
        3671: ([844424930132009], None, None),
        3676: ([844424930132009, 57], 57, None),
        184: ([57], 57, None),
    }


def test_parquet_args_kept_only_when_asked(tmp_path):
    """extra_attributes_json is a third of a large export's memory and few analyses read it:
    it is kept as args_json when asked (``args=True``, as `traceana export` asks), and the
    link keys are lifted from it either way. The executions' (nc_exec_running: a few rows)
    are always kept, since they name the NEFF that `gaps`, `ops` and `kernels` show."""
    folder = export(tmp_path)
    plain, kept = ta.load(folder).events, ta.load(folder, args=True).events
    given = {r["id"]: r.get("extra_attributes_json") for r in ROWS}
    by_id = dict(zip(kept["orig_id"], kept["args_json"], strict=True))
    assert {i: by_id[i] for i in given if i in by_id} == given
    executions = {r["id"] for r in ROWS if r["name"] == "nc_exec_running"}
    assert executions
    for i, args in zip(plain["orig_id"], plain["args_json"], strict=True):
        assert args == (given[i] if i in executions else None)
    assert plain.drop("args_json").equals(kept.drop("args_json"))


def test_parquet_cores_and_host(tmp_path):
    ev = ta.load(export(tmp_path)).events
    hw = ev.filter(pl.col("orig_id") == 184).row(0, named=True)
    assert (hw["host"], hw["pid"], hw["device"], hw["core"]) == (INST, PID, 0, 1)


def test_parquet_file_named_directly(tmp_path):
    folder = export(tmp_path)
    prof = ta.load(folder / "SystemProfileEvents.parquet")
    assert lanes_of(prof.events) == EXPECTED_LANES


def test_parquet_schema_version_shown(tmp_path):
    run = info_json(export(tmp_path))["runs"][0]
    (src,) = run["sources"]
    assert (src["format"], src["schema_version"], src["read"]) == ("explorer-parquet", "7.4.0", True)
    assert src["events"] == len(ROWS)
    assert run["warnings"] == []
    assert run["hardware_lanes"] == 1
    assert run["lanes_by_kind"]["hardware"] == [f"{INST}/PID:{PID}/neuron_hw/NC0:1"]


def test_parquet_unknown_major_version_warns_but_reads(tmp_path):
    run = info_json(export(tmp_path, version="12.0.1"))["runs"][0]
    assert run["sources"][0]["schema_version"] == "12.0.1"
    assert any("12.0.1" in w for w in run["warnings"]), run["warnings"]
    assert run["events"] == len(ROWS)


def test_parquet_split_tables_are_one_source(tmp_path):
    folder = tmp_path / "export"
    write_parquet(folder / "SystemProfileEvents_0.parquet", ROWS[:3])
    write_parquet(folder / "SystemProfileEvents_1.parquet", ROWS[3:])
    write_metadata(folder, "7.4.0")
    prof = ta.load(folder)
    assert lanes_of(prof.events) == EXPECTED_LANES
    run = info_json(folder)["runs"][0]
    assert len(run["sources"]) == 1 and run["events"] == len(ROWS)


def test_parquet_without_metadata_reads(tmp_path):
    run = info_json(export(tmp_path, version=None))["runs"][0]
    assert run["sources"][0]["schema_version"] is None
    assert run["events"] == len(ROWS)


def test_parquet_missing_required_column_is_exit_2(tmp_path):
    folder = export(tmp_path, drop=("start_ts",))
    code, out, err = run_cli("info", folder)
    assert code == 2
    assert "start_ts" in err and "SystemProfileEvents.parquet" in err
    assert "Traceback" not in err


def test_parquet_optional_column_absent_still_reads(tmp_path):
    folder = export(tmp_path, drop=("worker_gid", "extra_attributes_json"))
    ev = ta.load(folder).events
    assert lanes_of(ev) == EXPECTED_LANES
    assert ev["exec_id"].null_count() == ev.height


# --- legacy JSON ---------------------------------------------------------------------------


def test_legacy_json_trace_event_list(tmp_path):
    doc = {
        "system_profile_metadata": {"first_ts_ns": str(T), "last_ts_ns": str(T + 10**6),
                                    "ntff_version": 5},
        "trace_event": [
            {"name": "aten::mul [trace.json]", "timestamp": T + 10_250, "duration": 35_125,
             "id": 11, "instance_id": INST, "process_id": str(PID), "thread_id": 7,
             "trace_event_source": "framework", "flow_id": ["844424930132009"]},
            {"name": "aten::mul", "timestamp": T + 30_000, "duration": 60_000, "id": 12,
             "instance_id": INST, "process_id": str(PID), "thread_id": 0,
             "framework_stream_id": "0", "trace_event_source": "framework",
             "nrt_sequence_id": 844424930132009},
            {"name": "nrt_tensor_write", "timestamp": T + 20_000, "duration": 27_094, "id": 13,
             "instance_id": INST, "process_id": str(PID), "thread_id": PID, "lnc_idx": "0",
             "nc_idx": 0, "size": "4", "trace_event_source": "neuron_rt"},
            {"name": "nc_exec_running", "timestamp": T + 55_000, "duration": 44_000, "id": 14,
             "exec_id": 57, "process_id": str(PID), "instance_id": INST, "nc_idx": 0,
             "pcore_idx": 1, "device_core_idx": 1, "trace_event_source": "neuron_hw",
             "flow_id": ["57"]},
        ],
    }
    p = write_trace(tmp_path / "system_profile.json", doc)
    prof = ta.load(p)
    ev = prof.events
    assert lanes_of(ev) == {
        11: ("aten::mul", "framework_op", f"{INST}/PID:{PID}/framework/TID:7"),
        12: ("aten::mul", "framework_stream", f"{INST}/PID:{PID}/framework/Stream:0"),
        13: ("nrt_tensor_write", "transfer", f"{INST}/PID:{PID}/neuron_rt/NC:0"),
        14: ("nc_exec_running", "hardware", f"{INST}/PID:{PID}/neuron_hw/NC0:1"),
    }
    assert ev["pid"].to_list() == [PID] * 4  # the string process_id became a number
    hw = ev.filter(pl.col("orig_id") == 14).row(0, named=True)
    assert (hw["start_ns"], hw["end_ns"], hw["exec_id"], hw["flow_ids"]) == (
        T + 55_000, T + 99_000, 57, [57])
    assert ev.filter(pl.col("orig_id") == 12)["seq_id"].to_list() == [844424930132009]
    assert info_json(p)["runs"][0]["sources"][0]["format"] == "explorer-json"


OLD_RECORDS = [  # Profiler 2.0 style: no trace_event_source, string numbers, group names
    {"name": "PjitFunction(matmul)", "timestamp": T, "duration": 90_000, "group": "framework-7",
     "instance_id": INST, "process_id": str(PID), "thread_id": 7, "type": 99999},
    {"name": "nrt_tensor_write", "timestamp": T + 1_000, "duration": 27_094, "group": "nrt-nc-000",
     "id": 1, "instance_id": INST, "lnc_idx": "0", "process_id": str(PID), "size": "4",
     "thread_id": PID, "type": 11},
    {"name": "nc_exec_running", "timestamp": T + 30_000, "duration": 44_000, "instance_id": INST,
     "process_id": str(PID), "nc_idx": "0", "pcore_idx": "1"},
]
OLD_LANES = {
    ("PjitFunction(matmul)", "framework_op", f"{INST}/PID:{PID}/framework/TID:7"),
    ("nrt_tensor_write", "transfer", f"{INST}/PID:{PID}/neuron_rt/NC:0"),
    ("nc_exec_running", "hardware", f"{INST}/PID:{PID}/neuron_hw/NC0:1"),
}


@pytest.mark.parametrize("shape", ["list", "groups"])
def test_legacy_json_trace_events_older_form(tmp_path, shape):
    events = OLD_RECORDS if shape == "list" else {"framework": OLD_RECORDS[:1],
                                                  "runtime": OLD_RECORDS[1:]}
    p = write_trace(tmp_path / "integrated_trace.json", {"trace_events": events})
    ev = ta.load(p).events
    got = {(r["name"], r["lane_kind"], r["lane"]) for r in ev.to_dicts()}
    assert got == OLD_LANES
    assert ev.sort("start_ns")["start_ns"].to_list() == [T, T + 1_000, T + 30_000]


def test_legacy_json_record_without_timestamp_is_dropped_with_warning(tmp_path):
    records = OLD_RECORDS + [{"name": "nrt_load", "process_id": "1", "instance_id": INST}]
    p = write_trace(tmp_path / "system_profile.json", {"trace_event": records})
    run = info_json(p)["runs"][0]
    assert run["events"] == len(OLD_RECORDS)
    assert any("timestamp" in w and "system_profile.json" in w for w in run["warnings"])


def test_legacy_json_beside_parquet_keeps_parquet_copy(tmp_path):
    folder = export(tmp_path)
    records = [{"name": r["name"], "timestamp": r["start_ts"], "duration": r["end_ts"] - r["start_ts"],
                "process_id": str(r["process_id"]), "instance_id": r["instance_id"],
                "thread_id": r["thread_id"], "nc_idx": r.get("nc_idx"),
                "trace_event_source": r["trace_event_source"]} for r in ROWS]
    (folder / "system_profile.json").write_text(json.dumps({"trace_event": records}))
    run = info_json(folder)["runs"][0]
    assert run["events"] == len(ROWS)


@pytest.mark.parametrize("form", ["parquet", "legacy-json"])
def test_explorer_profiler_step_is_an_annotation(tmp_path, form):
    name = "ProfilerStep#3 [trace.json]"
    if form == "parquet":
        write_parquet(tmp_path / "SystemProfileEvents.parquet", [
            dict(id=1, name=name, start_ts=T, end_ts=T + 100_000, trace_event_source="framework",
                 instance_id=INST, process_id=PID, thread_id=7)])
    else:
        write_trace(tmp_path / "system_profile.json", {"trace_event": [
            {"name": name, "timestamp": T, "duration": 100_000, "process_id": str(PID),
             "thread_id": 7, "instance_id": INST, "trace_event_source": "framework"}]})
    ev = ta.load(tmp_path).events
    assert ev.select("name", "lane_kind", "step").rows() == [("ProfilerStep#3", "annotation", 3)]


def test_same_pid_on_two_instances_is_not_a_duplicate(tmp_path):
    # two nodes of one run; containers often give the training process the same pid
    write_trace(tmp_path / "i-a_pid_37" / "20261101_120000_000" / "trace.json",
                {"baseTimeNanoseconds": T, "traceEvents": [
                    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 37, "tid": 37,
                     "ts": 10, "dur": 30}]})
    write_parquet(tmp_path / "i-b_pid_37" / "export" / "SystemProfileEvents.parquet", [
        dict(id=5, name="aten::mul [trace.json]", start_ts=T, end_ts=T + 50,
             trace_event_source="framework", instance_id="i-b", process_id=37, thread_id=37),
        dict(id=6, name="nc_exec_running", start_ts=T + 60, end_ts=T + 90,
             trace_event_source="neuron_hw", instance_id="i-b", process_id=37, thread_id=1,
             nc_idx=0, pcore_idx=0)])
    ev = ta.load(tmp_path).events
    assert sorted(zip(ev["host"], ev["name"])) == [
        ("i-a", "aten::add"), ("i-b", "aten::mul"), ("i-b", "nc_exec_running")]
