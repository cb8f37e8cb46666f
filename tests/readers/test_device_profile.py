"""Device-profile exports (readers/device_profile.py, inputs/device.py): the fixtures read to
their builder's truth (fixtures/<variant>/device_profiles/truth.json), and what an export that
lacks something gives."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from trace_analyzer.errors import InputError
from trace_analyzer.model.device import (
    ACTIVE_COLUMNS,
    DMA_COLUMNS,
    EXECUTION_COLUMNS,
    INSTRUCTION_COLUMNS,
    THROTTLE_COLUMNS,
)
from trace_analyzer.readers.device_profile import load_device, read_device_profile

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
VARIANTS = ("rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled")
SCHEMA_CSV = ROOT.parent / "shared" / "docs" / "neuron-explorer-schema-7.4.0.csv"
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")


def truth(variant: str) -> dict:
    return json.loads((FIXTURES / variant / "device_profiles" / "truth.json").read_text())


def export(variant: str) -> Path:
    return FIXTURES / variant / "device_profiles" / truth(variant)["device_profile"]


def copy_export(variant: str, tmp_path: Path) -> Path:
    dest = tmp_path / export(variant).name
    shutil.copytree(export(variant), dest)
    return dest


@pytest.mark.parametrize("variant", VARIANTS)
def test_fixture_reads_to_its_truth(variant):
    t = truth(variant)
    run = load_device(FIXTURES / variant)
    assert [p.name for p in run.profiles] == [t["device_profile"]]
    assert run.unexported == []  # its session NTFF is the listed profile's
    p = run.profiles[0]
    assert (p.instance_id, p.process_id, p.nc_id) == ("i-0123456789abcdef0", 4242, 0)
    assert p.schema_version == "7.4.0" and p.notes == ()
    assert p.missing == ("DmaPacket", "ThrottleSummary")
    ins = p.instructions
    assert ins.schema == pl.Schema(INSTRUCTION_COLUMNS)
    by_engine = dict(ins.group_by("engine").len().iter_rows())
    assert by_engine == {e: n for e, n in t["counts"]["by_engine"].items() if n}
    assert ins.height == t["counts"]["instructions"]
    assert ins["wait"].sum() == t["counts"]["waits"]
    assert ins.filter(pl.col("wait"))["opcode"].str.starts_with("EVENT_SEMAPHORE").all()
    # every instruction in its execution, with that execution's NEFF
    per_exec = ins.group_by("execution", "neff").len().sort("execution")
    assert per_exec.rows() == [(x["execution"], x["neff"], x["instructions"]) for x in t["executions"]]
    assert p.executions.schema == pl.Schema(EXECUTION_COLUMNS)
    assert p.executions["neff"].to_list() == [x["neff"] for x in t["executions"]]
    assert p.active.schema == pl.Schema(ACTIVE_COLUMNS)
    assert p.active.height == t["counts"]["active_rows"]
    assert p.dma.schema == pl.Schema(DMA_COLUMNS)
    assert p.dma.height == t["counts"]["dma_rows"] and p.dma["neff"].null_count() == 0
    assert p.throttle.schema == pl.Schema(THROTTLE_COLUMNS)
    assert p.throttle.height == t["counts"]["throttle_rows"]
    assert p.opcodes is not None and p.opcodes.height == t["counts"]["opcode_rows"]
    assert p.summary is not None
    assert {k: p.summary[k] for k in t["summary"]} == pytest.approx(t["summary"])
    assert all(v is None for k, v in p.summary.items() if k not in t["summary"])
    assert p.metadata["tensor_engine_num_rows"] == 128
    head = "i-0123456789abcdef0/PID:4242/neuron_hw/NC0:0/"
    assert set(ins["lane"]) == {head + e for e in by_engine}
    assert set(p.dma["lane"]) == {head + "dma"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_fixture_neff_totals_match_truth(variant):
    """Per NEFF: FLOPs and HBM bytes of its non-wait instructions, DMA bytes and engine
    active time, summed here in a few lines from the tables read."""
    p = read_device_profile(export(variant))
    work = p.instructions.filter(~pl.col("wait"))
    for rec in truth(variant)["neffs"]:
        mine = work.filter(pl.col("neff") == rec["neff"])
        assert mine["raw_flops"].sum() == rec["model_flops"]
        assert mine["adjusted_flops"].sum() == rec["hardware_flops"]
        assert mine["hbm_read_bytes"].sum() + mine["hbm_write_bytes"].sum() == rec["hbm_bytes"]
        core = rec["pcores"][0]
        assert p.dma.filter(pl.col("neff") == rec["neff"])["transfer_bytes"].sum() == core["dma"]["bytes"]
        for engine in ENGINES:
            got = mine.filter(pl.col("engine") == engine)["duration_ns"].sum()
            assert got == core["engines"][engine]["instruction_ns"]


def test_capitalised_engines_are_lowered():
    raw = pl.read_parquet(export("rmsnorm_naive") / "Instruction.parquet")
    assert {"Tensor", "Vector", "GpSimd"} <= set(raw["engine"])  # as AWS's example spells them
    p = read_device_profile(export("rmsnorm_naive"))
    assert set(p.instructions["engine"]) == set(ENGINES)
    assert set(p.active["engine"]) <= set(ENGINES)


def test_missing_optional_tables_are_named(tmp_path):
    folder = copy_export("rmsnorm_fused", tmp_path)
    for table in ("Summary", "ActiveTime", "DmaPacketAggregated"):
        (folder / f"{table}.parquet").unlink()
    p = read_device_profile(folder)
    assert {"Summary", "ActiveTime", "DmaPacketAggregated"} <= set(p.missing)
    assert p.summary is None and p.active.height == 0 and p.dma.height == 0
    assert p.active.schema == pl.Schema(ACTIVE_COLUMNS) and p.dma.schema == pl.Schema(DMA_COLUMNS)
    assert p.instructions.height == truth("rmsnorm_fused")["counts"]["instructions"]


def test_unknown_schema_major_is_a_note_and_read_by_name(tmp_path):
    folder = copy_export("rmsnorm_compiled", tmp_path)
    meta = pl.read_parquet(folder / "Metadata.parquet")
    meta.with_columns(profile_schema_version=pl.lit("12.0.1")).write_parquet(folder / "Metadata.parquet")
    ins = pl.read_parquet(folder / "Instruction.parquet")
    ins.select(reversed(ins.columns)).write_parquet(folder / "Instruction.parquet")  # by name
    p = read_device_profile(folder)
    assert p.schema_version == "12.0.1"
    assert any("12.0.1" in n for n in p.notes)
    assert p.instructions.height == truth("rmsnorm_compiled")["counts"]["instructions"]


def test_missing_required_column_names_it(tmp_path):
    folder = copy_export("rmsnorm_naive", tmp_path)
    pl.read_parquet(folder / "Instruction.parquet").drop("start_ts").write_parquet(
        folder / "Instruction.parquet"
    )
    with pytest.raises(InputError, match="start_ts") as err:
        read_device_profile(folder)
    assert err.value.path == str(folder / "Instruction.parquet")
    assert "\n" not in str(err.value)


def test_missing_optional_column_is_null_and_noted(tmp_path):
    folder = copy_export("rmsnorm_fused", tmp_path)
    pl.read_parquet(folder / "Instruction.parquet").drop("hlo_name", "pcore_idx").write_parquet(
        folder / "Instruction.parquet"
    )
    p = read_device_profile(folder)
    assert p.instructions["hlo_name"].null_count() == p.instructions.height
    assert (p.instructions["pcore"] == 0).all()
    assert any("hlo_name" in n and "pcore_idx" in n for n in p.notes)


def test_no_instruction_table_is_an_error(tmp_path):
    folder = copy_export("rmsnorm_fused", tmp_path)
    (folder / "Instruction.parquet").unlink()
    with pytest.raises(InputError, match="Instruction"):
        read_device_profile(folder)


def test_split_tables_are_concatenated(tmp_path):
    folder = copy_export("rmsnorm_naive", tmp_path)
    whole = pl.read_parquet(folder / "Instruction.parquet")
    (folder / "Instruction.parquet").unlink()
    half = whole.height // 2
    whole.slice(half).write_parquet(folder / "Instruction_1.parquet")
    whole.slice(0, half).write_parquet(folder / "Instruction_0.parquet")
    split = read_device_profile(folder).instructions
    assert split.equals(read_device_profile(export("rmsnorm_naive")).instructions)


def test_without_execution_info_the_one_neff_beside_it(tmp_path):
    folder = copy_export("rmsnorm_fused", tmp_path)
    (folder / "ExecutionInfo.parquet").unlink()
    (tmp_path / "kernel.neff").write_bytes(b"placeholder")
    p = read_device_profile(folder)
    assert "ExecutionInfo" in p.missing and p.executions.height == 0
    assert set(p.instructions["neff"]) == {"kernel.neff"}
    assert p.instructions["execution"].null_count() == p.instructions.height
    (tmp_path / "other.neff").write_bytes(b"placeholder")  # two NEFFs: which one is unknown
    assert read_device_profile(folder).instructions["neff"].null_count() > 0


def test_unlisted_export_named_otherwise(tmp_path):
    folder = tmp_path / "my_profile"
    shutil.copytree(export("rmsnorm_fused"), folder)
    run = load_device(tmp_path)
    p = run.profiles[0]
    assert (p.name, p.instance_id, p.process_id, p.nc_id) == ("my_profile", None, None, None)
    assert set(p.instructions["lane"]) >= {"device/my_profile/NC:0/tensor"}
    # Explorer's display name is enough for the lanes
    named = tmp_path / "x_i-0abc_pid_77_nc_3_session_0"
    folder.rename(named)
    p = load_device(named).profiles[0]
    assert (p.instance_id, p.process_id, p.nc_id) == ("i-0abc", 77, 3)
    assert "i-0abc/PID:77/neuron_hw/NC3:0/vector" in set(p.instructions["lane"])


def test_bare_neff_ntff_folder_lists_the_commands(tmp_path):
    (tmp_path / "neff_123.neff").write_bytes(b"x")
    (tmp_path / "123_instid_0_vnc_0.ntff").write_bytes(b"x")
    (tmp_path / "kernel.neff").write_bytes(b"x")
    (tmp_path / "kernel.ntff").write_bytes(b"x")
    session = tmp_path / "i-0abc_pid_9" / "20261102_120000_000"
    session.mkdir(parents=True)
    (session / "profile_nc_1_session_0.ntff").write_bytes(b"x")
    run = load_device(tmp_path)
    assert run.profiles == []
    got = {Path(u["ntff"]).name: u for u in run.unexported}
    assert set(got) == {"123_instid_0_vnc_0.ntff", "kernel.ntff", "profile_nc_1_session_0.ntff"}
    model = got["123_instid_0_vnc_0.ntff"]
    assert model["neff"] == str(tmp_path / "neff_123.neff")
    assert model["command"] == (
        f"neuron-explorer view -n {tmp_path / 'neff_123.neff'} "
        f"-s {tmp_path / '123_instid_0_vnc_0.ntff'} --output-format parquet"
    )
    assert got["kernel.ntff"]["command"].startswith(f"neuron-explorer view -n {tmp_path / 'kernel.neff'}")
    assert got["profile_nc_1_session_0.ntff"]["command"] == (
        f"neuron-explorer view -d {session} --output-format parquet"
    )


def test_an_export_covers_its_ntff(tmp_path):
    shutil.copytree(FIXTURES / "rmsnorm_naive", tmp_path / "run")
    assert load_device(tmp_path / "run").unexported == []
    shutil.rmtree(tmp_path / "run" / "device_profiles")
    (left,) = load_device(tmp_path / "run").unexported
    assert Path(left["ntff"]).name == "profile_nc_0_session_0.ntff"


def test_archives_and_other_files_are_refused(tmp_path):
    (tmp_path / "profile.tar.gz").write_bytes(b"x")
    with pytest.raises(InputError, match="archive"):
        load_device(tmp_path / "profile.tar.gz")
    with pytest.raises(InputError, match="no such"):
        load_device(tmp_path / "absent")


@pytest.mark.skipif(not SCHEMA_CSV.is_file(), reason=f"{SCHEMA_CSV} is absent")
@pytest.mark.parametrize("variant", VARIANTS)
def test_fixture_tables_have_the_schema_columns_and_types(variant):
    """Exactly the 7.4.0 columns, in the schema's order, of the schema's types."""
    kinds = {"integer (int64)": pl.Int64, "integer (int32)": pl.Int32, "number (float)": pl.Float64,
             "boolean": pl.Boolean}
    want: dict[str, dict] = {}
    with SCHEMA_CSV.open(newline="") as f:
        for row in csv.DictReader(f):
            kind = kinds.get(row["type"].split(" (:ref:")[0], pl.String)
            want.setdefault(row["table"], {})[row["field"]] = kind
    for path in sorted(export(variant).glob("*.parquet")):
        assert pl.read_parquet_schema(path) == want[path.stem], path.name
    listed = FIXTURES / variant / "explorer" / "parquet" / "DeviceProfileList.parquet"
    assert pl.read_parquet_schema(listed) == want["DeviceProfileList"]
