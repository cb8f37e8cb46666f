"""`traceana engines` on device-profile exports that are not whole: optional tables missing, an
unknown schema major, a required column missing, and a folder of bare NEFF/NTFF pairs. The
exports are the fused fixture's, copied and cut here; expected values come from the cut."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
from conftest import one_line_error, run_cli

ROOT = Path(__file__).resolve().parents[2]
FUSED = ROOT / "fixtures" / "rmsnorm_fused" / "device_profiles"
NAME = "rmsnorm_fused_i-0123456789abcdef0_pid_4242_nc_0_session_0"


def export_copy(tmp_path: Path) -> Path:
    """The fused fixture's device-profile export alone, in tmp_path/<its name>."""
    out = tmp_path / "run" / NAME
    shutil.copytree(FUSED / NAME, out)
    return out


def engines_json(path: Path) -> dict:
    code, out, err = run_cli("engines", path, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    (run,) = doc["runs"] if "runs" in doc else [doc]
    return run


def test_missing_optional_tables_give_what_they_can_and_are_named(tmp_path):
    folder = export_copy(tmp_path)
    for table in ("Summary", "ActiveTime", "DmaPacketAggregated", "Throttle"):
        (folder / f"{table}.parquet").unlink()
    run = engines_json(folder.parent)
    (p,) = run["profiles"]
    assert {"Summary", "ActiveTime", "DmaPacketAggregated", "Throttle"} <= set(p["missing"])
    instructions = pl.read_parquet(folder / "Instruction.parquet")
    work = instructions.filter(~pl.col("opcode").str.starts_with("EVENT_SEMAPHORE"))
    (n,) = run["neffs"]
    assert n["model_flops"] == work["raw_flops"].sum()  # what it can: from the instructions
    assert all(e["active_ns"] is None for e in run["engines"])  # no ActiveTime: unknown, not 0
    (c,) = run["cores"]
    assert c["dma_count"] == 0 and c["throttle_ns"] is None
    assert run["comparison"] == []  # no Summary to compare with
    code, out, _ = run_cli("engines", folder.parent)
    assert code == 0 and "tables missing:" in out and "Summary" in out


def test_an_unknown_schema_major_warns_and_reads_by_name(tmp_path):
    folder = export_copy(tmp_path)
    meta = pl.read_parquet(folder / "Metadata.parquet")
    meta.with_columns(profile_schema_version=pl.lit("12.0.1")).write_parquet(
        folder / "Metadata.parquet")
    ins = pl.read_parquet(folder / "Instruction.parquet")
    ins.select(list(reversed(ins.columns))).write_parquet(folder / "Instruction.parquet")
    run = engines_json(folder.parent)
    assert any("12.0.1" in n for n in run["notes"])
    assert run["neffs"][0]["model_flops"] == ins["raw_flops"].sum()
    code, out, _ = run_cli("engines", folder.parent)
    assert code == 0 and "12.0.1" in out


def test_a_missing_required_column_is_exit_2_naming_it(tmp_path):
    folder = export_copy(tmp_path)
    pl.read_parquet(folder / "Instruction.parquet").drop("start_ts").write_parquet(
        folder / "Instruction.parquet")
    line = one_line_error(*run_cli("engines", folder.parent))
    assert "start_ts" in line and "Instruction" in line


def test_a_folder_of_bare_pairs_says_the_export_command_of_each(tmp_path):
    folder = tmp_path / "capture"
    folder.mkdir()
    for h in ("111", "222"):
        (folder / f"neff_{h}.neff").write_bytes(b"neff")
        (folder / f"{h}_instid_0_vnc_0.ntff").write_bytes(b"ntff")
    line = one_line_error(*run_cli("engines", folder))
    for h in ("111", "222"):
        assert (f"neuron-explorer view -n {folder / f'neff_{h}.neff'} "
                f"-s {folder / f'{h}_instid_0_vnc_0.ntff'} --output-format parquet") in line


def test_per_packet_dma_stands_in_for_the_aggregated_table(tmp_path):
    # an export with DmaPacket (one row per packet) and no DmaPacketAggregated: the DMA
    # figures come from the packets; here each aggregated row is written as one packet
    folder = export_copy(tmp_path)
    agg = pl.read_parquet(folder / "DmaPacketAggregated.parquet")
    (folder / "DmaPacketAggregated.parquet").unlink()
    agg.select(
        "start_ts", "end_ts", "duration_ns", "pcore_idx", "id",
        pl.int_range(pl.len(), dtype=pl.Int32).alias("packet_idx"),
        pl.col("id").alias("packet_aggregation_id"),
        "read_bytes", "write_bytes", "transfer_bytes", "throughput", "queue_type",
    ).write_parquet(folder / "DmaPacket.parquet")  # fmt: skip
    run = engines_json(folder.parent)
    (p,) = run["profiles"]
    assert "DmaPacket" not in p["missing"]
    (c,) = run["cores"]
    assert c["dma_count"] == agg.height > 0
    assert c["dma_bytes"] == agg["transfer_bytes"].sum()
