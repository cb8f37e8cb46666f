"""`traceana engines HEAD --base BASE` through the CLI, on the naive RMSNorm export and its
slowed copy (conftest.slowed_export) and on fused against compiled (one NEFF each, matched by
position): the gate's exit 1 naming the NEFF, exit 2 on a bad condition, and every format
showing the comparison (the figures themselves: tests/analyses/test_engines_diff.py; renames:
tests/cli/test_engines_renames.py)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from conftest import NAIVE_EXPORT, one_line_error, run_cli, slowed_export

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BASE = str(NAIVE_EXPORT.parent)


def first_neff() -> str:
    return pl.read_parquet(NAIVE_EXPORT / "ExecutionInfo.parquet")["neff_name"][0]


def test_a_window_gate_fails_naming_the_neff(tmp_path):
    head = slowed_export(tmp_path)
    code, out, err = run_cli("diff", BASE, head, "--engines", "--fail-on", "window_pct_delta>5")
    assert code == 1, err
    assert "window_pct_delta" in out and first_neff() in out  # the report says it too
    (line,) = err.strip().splitlines()
    assert line.startswith(f"traceana: {head}: --fail-on 'window_pct_delta>5' failed")
    assert line.endswith(f"(NEFF {first_neff()})")


def test_against_itself_no_gate_fails():
    gates = ["--fail-on", "window_pct_delta>0", "--fail-on", "mfu_pct_delta!=0",
             "--fail-on", "tensor_active_pct_delta>0"]  # fmt: skip
    code, out, err = run_cli("diff", BASE, BASE, "--engines", *gates, "--format", "markdown")
    assert code == 0, err
    assert "FAILED" not in out and "NEFFs matched" in out


def test_a_bad_condition_is_one_line_exit_2():
    line = one_line_error(*run_cli("diff", BASE, BASE, "--engines", "--fail-on", "nonsense>1"))
    assert "unknown metric 'nonsense'" in line and "window_pct_delta" in line


def test_fail_on_needs_base():
    line = one_line_error(*run_cli("engines", BASE, "--fail-on", "window_pct_delta>5"))
    assert "--base" in line


def test_json_and_csv_show_the_comparison(tmp_path):
    head = slowed_export(tmp_path)
    code, out, _ = run_cli("diff", BASE, head, "--engines", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["base"] == BASE and doc["path"] == str(head)
    (run,) = doc["runs"]
    assert {n["status"] for n in run["neffs"]} == {"common"}
    tensor = [e for e in run["engines"] if e["engine"] == "tensor"]
    assert tensor and all(e["instruction_ns_head"] == 2 * e["instruction_ns_base"] for e in tensor)
    code, out, _ = run_cli("diff", BASE, head, "--engines", "--format", "csv")
    assert code == 0
    rows = out.strip().splitlines()
    assert rows[0].startswith("neff,status,window_ns_base,window_ns_head")
    assert len(rows) == 1 + 6


def test_one_neff_each_is_matched_by_position():
    # fused and compiled each ran one NEFF, under other names, and no system profile is
    # beside their exports: the one NEFF of each step is matched by its position
    fused = FIXTURES / "rmsnorm_fused" / "device_profiles"
    compiled = FIXTURES / "rmsnorm_compiled" / "device_profiles"

    def window(folder: Path) -> tuple[str, int]:
        (ex,) = folder.glob("*/ExecutionInfo.parquet")
        (row,) = pl.read_parquet(ex).iter_rows(named=True)
        return row["neff_name"], row["execution_end_ts"] - row["execution_start_ts"]

    (b_name, b), (h_name, h) = window(fused), window(compiled)
    assert b_name != h_name
    code, out, err = run_cli("diff", str(fused), str(compiled), "--engines",
                             "--fail-on", "window_pct_delta>5")  # fmt: skip
    assert code == 0 if 100 * (h - b) / b <= 5 else 1, err
    assert f"position: {b_name}" in out and "NEFFs added in head" not in out
    assert "compares nothing" not in out + err
