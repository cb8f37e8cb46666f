"""Explorer exports that are not whole: a split part missing, two layouts in one folder,
attributes that do not parse. Each is read as far as it goes, and said."""

from __future__ import annotations

import json
import shutil

from conftest import X, info_json, run_cli, write_metadata, write_parquet, write_trace

import trace_analyzer as ta

T = 1_793_620_800_001_000_000  # epoch ns
INST, PID = "i-x", 1


def execution(i: int, extra: str | None = None) -> dict:
    """Row ``i`` of an export: one hardware execution of exec_id ``i``, 500 ns long."""
    return dict(id=i, name="nc_exec_running", start_ts=T + i * 1_000, end_ts=T + i * 1_000 + 500,
                trace_event_source="neuron_hw", instance_id=INST, process_id=PID, thread_id=PID,
                nc_idx=0, pcore_idx=0,
                extra_attributes_json=f'{{"exec_id":{i}}}' if extra is None else extra)


def launch(i: int, extra: str | None = None) -> dict:
    """The runtime call that waits for execution ``i`` (linked to it by exec_id)."""
    return dict(id=10_000 + i, name="kbl_exec_wait", start_ts=T + i * 1_000 - 100,
                end_ts=T + i * 1_000 + 600, trace_event_source="neuron_rt", instance_id=INST,
                process_id=PID, thread_id=PID, nc_idx=0,
                extra_attributes_json=f'{{"exec_id":{i}}}' if extra is None else extra)


def split_export(folder, parts: dict[int, range]) -> None:
    """Write SystemProfileEvents_<n>.parquet for each part, holding the executions given."""
    for n, ids in parts.items():
        write_parquet(folder / f"SystemProfileEvents_{n}.parquet", [execution(i) for i in ids])
    write_metadata(folder, "7.4.0")


def test_a_missing_split_part_is_named_and_the_others_are_read(tmp_path):
    folder = tmp_path / "export"
    parts = {0: range(0, 3), 1: range(3, 6), 3: range(9, 12)}  # _2 lost in the copy
    split_export(folder, parts)
    run = info_json(folder)["runs"][0]
    assert run["events"] == sum(len(ids) for ids in parts.values())
    said = [w for w in run["warnings"] if "SystemProfileEvents_2.parquet" in w]
    assert len(said) == 1 and "missing" in said[0], run["warnings"]


def test_split_parts_not_starting_at_0_say_so(tmp_path):
    folder = tmp_path / "export"
    split_export(folder, {1: range(0, 2), 2: range(2, 4)})
    warnings = ta.load(folder).warnings
    assert any("SystemProfileEvents_0.parquet" in w and "missing" in w for w in warnings)


def test_many_missing_parts_are_counted_not_listed(tmp_path):
    folder = tmp_path / "export"
    split_export(folder, {0: range(0, 1), 10**12: range(1, 2)})  # must not list 10**12 names
    (said,) = [w for w in ta.load(folder).warnings if "missing" in w]
    assert f"and {10**12 - 1 - 3} more" in said


def test_unsplit_table_beside_split_parts_is_not_read_and_is_named(tmp_path):
    folder = tmp_path / "export"
    split_export(folder, {0: range(0, 2), 1: range(2, 4)})
    write_parquet(folder / "SystemProfileEvents.parquet", [execution(i) for i in range(100, 107)])
    p = ta.load(folder)
    assert sorted(p.events["orig_id"]) == [0, 1, 2, 3]  # the split parts, each event once
    (said,) = [w for w in p.warnings if "SystemProfileEvents.parquet" in w]
    assert "_0, _1" in said and "not SystemProfileEvents.parquet" in said


def test_a_whole_split_sequence_reads_without_a_warning(tmp_path):
    folder = tmp_path / "export"
    split_export(folder, {0: range(0, 2), 1: range(2, 4), 2: range(4, 6)})
    p = ta.load(folder)
    assert p.events.height == 6 and p.warnings == []


def test_extra_attributes_that_do_not_parse_are_counted(tmp_path):
    folder = tmp_path / "export"
    good = [row for i in range(3) for row in (execution(i), launch(i))]
    broken = [execution(10, '{"exec_id":10'), launch(10, '{"exec_id":10'),  # cut short
              execution(11, "exec_id=11"),  # not JSON at all
              execution(12, "{'exec_id': 12}")]  # Python, not JSON
    fine = [execution(13, "{}"), execution(14, ""), execution(15, '{"model_id":1}')]
    write_parquet(folder / "SystemProfileEvents.parquet", good + broken + fine)
    code, out, err = run_cli("info", folder, "--format", "json", "--no-cache")
    assert code == 0, err
    run = json.loads(out)["runs"][0]
    (said,) = [w for w in run["warnings"] if "extra_attributes_json" in w]
    rows = len(good) + len(broken) + len(fine)
    assert said.startswith(f"{folder}: {len(broken)} of {rows} rows "), said
    # the rows that parse are read as before: their exec_id is there to link by
    p = ta.load(folder)
    assert p.events.filter(p.events["exec_id"].is_not_null()).height == len(good)


def test_legacy_json_link_keys_that_are_not_numbers_are_counted(tmp_path):
    records = [{"name": "nc_exec_running", "timestamp": T + i * 1_000, "duration": 500,
                "trace_event_source": "neuron_hw", "process_id": PID, "nc_idx": 0,
                "exec_id": i} for i in range(3)]
    records[1]["exec_id"] = "57a"  # no integer
    records[2]["nrt_sequence_id"] = {"id": 5}
    path = write_trace(tmp_path / "system_profile.json", {"trace_event": records})
    (said,) = [w for w in ta.load(path).warnings if "not an integer" in w]
    assert said.startswith(f"{path}: 2 of 3 trace_event records "), said


def neuron_run(tmp_path):
    """A Neuron run root (a capture's ``_pid_`` folder holding one op): the export folders
    written beside it join its run."""
    op = X("cpu_op", "aten::mm", 1, 1, pid=PID, tid=PID)
    write_trace(tmp_path / "run" / f"{INST}_pid_{PID}" / "trace.json",
                {"traceEvents": [op], "baseTimeNanoseconds": T})
    return tmp_path / "run"


def test_a_copied_export_folder_is_read_once(tmp_path):
    """An export folder beside its copy (the same tables, byte for byte) in one run: every
    execution would count twice. The copy is read once, with a warning naming both."""
    run = neuron_run(tmp_path)
    split_export(run / "export", {0: range(0, 3), 1: range(3, 5)})
    shutil.copytree(run / "export", run / "export (1)")
    (found,) = info_json(run)["runs"]
    assert found["events"] == 5 + 1  # the executions once, and the op
    (said,) = [w for w in found["warnings"] if "a copy of one export" in w]
    assert said.startswith(str(run / "export (1)")), said


def test_export_folders_that_differ_are_both_read(tmp_path):
    run = neuron_run(tmp_path)
    split_export(run / "export", {0: range(0, 3)})
    split_export(run / "export (1)", {0: range(3, 6)})  # the same names, not the same bytes
    (found,) = info_json(run)["runs"]
    assert found["events"] == 6 + 1
    assert not [w for w in found["warnings"] if "copy" in w]
