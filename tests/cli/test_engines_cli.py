"""`traceana engines` through the CLI, with the device-profile reader stood in for by a fake
``load_device`` (the analysis itself: tests/analyses/test_engines.py): every format, --neff,
and the one-line errors when a path holds no export."""

from __future__ import annotations

import json
import types
from pathlib import Path

import polars as pl
import pytest
from conftest import run_cli

from trace_analyzer.model.device import (
    ACTIVE_COLUMNS,
    EXECUTION_COLUMNS,
    INSTRUCTION_COLUMNS,
    DeviceProfile,
    DeviceRun,
)

METADATA = {"tensor_engine_num_rows": 128, "tensor_engine_num_cols": 128,
            "tensor_engine_clock_freq": 1.0, "num_physical_cores": 1,
            "hbm_ddr_bandwidth": 409.6e9}  # fmt: skip
PAIR = {"ntff": "b.ntff", "neff": "b.neff",
        "command": "neuron-explorer view -n b.neff -s b.ntff --output-format parquet"}  # fmt: skip


def table(columns, rows):
    return pl.DataFrame([{c: r.get(c) for c in columns} for r in rows], schema=columns)


def example() -> DeviceProfile:
    """One NEFF, 2 µs: a 1 µs matmul of 16,384,000 FLOPs (MFU 25 %) reading 204,800 B
    (MBU 25 %), then a 1 µs vector op."""
    rows = [
        {"engine": "tensor", "opcode": "MATMUL", "start_ns": 0, "end_ns": 1_000,
         "duration_ns": 1_000, "raw_flops": 16_384_000, "adjusted_flops": 16_384_000,
         "hbm_read_bytes": 204_800, "hlo_name": "dot.1"},
        {"engine": "vector", "opcode": "TENSOR_TENSOR", "start_ns": 1_000, "end_ns": 2_000,
         "duration_ns": 1_000, "raw_flops": 0, "adjusted_flops": 0, "hbm_read_bytes": 0,
         "hlo_name": "add.1|<b>"},
    ]  # fmt: skip
    rows = [{**r, "pcore": 0, "neff": "a.neff", "wait": False} for r in rows]
    return DeviceProfile(
        root=Path("/x/a"), name="a", metadata=METADATA,
        summary={"total_time": 2e-6, "mfu_estimated_percent": 30.0},
        instructions=table(INSTRUCTION_COLUMNS, rows),
        active=table(ACTIVE_COLUMNS, [{"engine": "tensor", "pcore": 0, "start_ns": 0,
                                       "end_ns": 1_000, "duration_ns": 1_000}]),
        executions=table(EXECUTION_COLUMNS, [{"execution": 0, "neff": "a.neff", "start_ns": 0,
                                              "end_ns": 2_000}]),
    )  # fmt: skip


@pytest.fixture
def reader(monkeypatch):
    """``readers.device_profile`` with a stand-in ``load_device`` that returns ``reader.run``
    (the module itself kept: the command's loading imports the other readers, which use it)."""
    from trace_analyzer.readers import device_profile

    fake = types.SimpleNamespace(run=DeviceRun(Path("/x"), [example()], [PAIR]))
    monkeypatch.setattr(device_profile, "load_device", lambda path, **kw: fake.run)
    return fake


def test_the_text_report(reader):
    code, out, err = run_cli("engines", "/x")
    assert code == 0, err
    assert "window 2 µs; MFU 25 %, HFU 25 %, MBU 25 %; intensity 80 FLOP/byte" in out
    assert "compute-bound" in out  # 80 FLOP/byte is the ridge itself
    assert "MISMATCH" in out and "export it with" in out and PAIR["command"] in out
    assert "tensor" in out and "MATMUL" in out


def test_json_holds_every_table_and_the_mismatch(reader):
    code, out, err = run_cli("engines", "/x", "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["neffs"][0]["mfu_pct"] == pytest.approx(25.0)
    assert any(m.startswith("a: MFU (mfu_estimated_percent): ours 25 %, the export's 30")
               for m in run["mismatches"])  # fmt: skip
    assert run["unexported"] == [PAIR]


def test_markdown_and_csv(reader):
    code, out, _ = run_cli("engines", "/x", "--format", "markdown")
    assert code == 0 and out.startswith("## engines: /x")
    assert "add.1\\|\\<b\\>" in out  # a name from the trace is inert
    code, out, _ = run_cli("engines", "/x", "--format", "csv")
    assert code == 0 and out.splitlines()[0].startswith("profile,neff,pcore,engine,active_ns")


def test_neff_glob(reader):
    code, _, err = run_cli("engines", "/x", "--neff", "z*")
    assert code == 2 and "no NEFF matches --neff 'z*'; the NEFFs: a.neff" in err


def test_no_export_names_each_pair_s_command_or_what_to_capture(reader):
    reader.run = DeviceRun(Path("/x"), [], [PAIR, {**PAIR, "command": "neuron-explorer c2"}])
    code, out, err = run_cli("engines", "/x")
    assert code == 2 and out == ""
    assert err.strip() == (
        "traceana: error: /x: no device-profile export (Instruction.parquet) under it; export "
        f"each NEFF/NTFF pair with: {PAIR['command']}; neuron-explorer c2"
    )
    reader.run = DeviceRun(Path("/x"), [], [])
    code, _, err = run_cli("engines", "/x")
    assert code == 2 and "no NEFF/NTFF pair under it; capture one" in err
    assert "NEURON_RT_INSPECT_DEVICE_PROFILE=1" in err and len(err.strip().splitlines()) == 1
