"""An -o that names a file the command reads is refused with one line (exit 2), and the file
is left as it was, byte for byte (issue 18: nothing the user gave is overwritten)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import one_line_error, run_cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture
def run(tmp_path):
    """A copy of the naive fixture, and its trace.json and one of its Parquet tables."""
    root = tmp_path / "run"
    shutil.copytree(FIXTURES / "rmsnorm_naive", root)
    trace = next(root.rglob("trace.json"))
    table = next(root.rglob("*.parquet"))
    return root, trace, table


@pytest.mark.parametrize("args", [
    ("gaps", "{trace}", "--format", "json"),  # the file named
    ("gaps", "{root}", "--format", "json"),  # a file found in the folder named
    ("ops", "{root}", "--format", "csv"),
    ("chain", "{root}", "--format", "csv"),
    ("info", "{root}", "--format", "json"),
    ("export", "{root}"),
    ("graph", "{root}"),
    ("diff", "{root}", "{root}", "--format", "json"),
])
@pytest.mark.parametrize("target", ["trace", "table"])
def test_an_output_onto_an_input_is_refused_and_the_input_untouched(run, args, target):
    root, trace, table = run
    if "{trace}" in args and target == "table":
        pytest.skip("a trace file named alone: the run is that file, the tables are not read")
    victim = trace if target == "trace" else table
    before = victim.read_bytes()
    argv = [a.format(root=root, trace=trace) for a in args]
    code, out, err = run_cli(*argv, "-o", victim, "--no-cache")
    line = one_line_error(code, out, err)
    assert f"-o {victim}: that file is an input of this command" in line
    assert victim.read_bytes() == before


def test_a_saved_summary_is_not_overwritten_by_the_diff_that_reads_it(run, tmp_path):
    root, _, _ = run
    summary = tmp_path / "base.json"
    code, _, err = run_cli("baseline", "save", root, "-o", summary, "--no-cache")
    assert code == 0, err
    before = summary.read_bytes()
    code, out, err = run_cli("diff", summary, root, "-o", summary, "--no-cache")
    assert "that file is an input of this command" in one_line_error(code, out, err)
    assert summary.read_bytes() == before


def test_trend_does_not_overwrite_its_table(run, tmp_path):
    root, _, _ = run
    table = tmp_path / "runs.parquet"
    code, _, err = run_cli("batch", root, "-o", table, "--jobs", "1")
    assert code == 0, err
    before = table.read_bytes()
    code, out, err = run_cli("trend", table, "-o", table, "--format", "csv")
    assert "that file is an input of this command" in one_line_error(code, out, err)
    assert table.read_bytes() == before


def test_another_file_beside_the_inputs_is_written(run):
    root, _, _ = run
    code, _, err = run_cli("gaps", root, "-o", root / "gaps.json", "--no-cache")
    assert code == 0, err
    assert (root / "gaps.json").stat().st_size > 0
