"""One run is one row of the batch table however its path is spelled (issue 37): ``./top``,
``$PWD/top`` and a link to it name the same runs, so a second batch skips them as unchanged
and ``trend`` shows each once. A table an earlier batch keyed by spelling (two rows for one
run) is read as one row per run, the spelling analysed last."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
from conftest import run_process

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _top(at: Path) -> Path:
    for name in "abc":
        shutil.copytree(FIXTURES / "rmsnorm_naive", at / name,
                        ignore=shutil.ignore_patterns(".traceana-*"))  # fmt: skip
    return at


def _batch(cwd: Path, *args: object) -> str:
    here = os.getcwd()
    os.chdir(cwd)  # the relative spelling is relative to where the user stands
    try:
        code, _, err, *_ = run_process("batch", *args)
    finally:
        os.chdir(here)
    assert code == 0, err
    return err


def test_every_spelling_of_a_run_is_one_row(tmp_path):
    top = _top(tmp_path / "top")
    (tmp_path / "alias").symlink_to(top, target_is_directory=True)
    table = tmp_path / "t.parquet"
    _batch(tmp_path, "./top", "-o", table)
    for spelled in (top, "alias", "top/../top", top / "b"):
        said = _batch(tmp_path, spelled, "-o", table)
        assert "0 analysed" in said, said  # the same runs: unchanged, skipped
    ids = sorted(pl.read_parquet(table)["run_id"])
    assert ids == [str(top.resolve() / n) for n in "abc"], ids
    code, out, err, *_ = run_process("trend", table, "--format", "csv")
    assert code == 0, err
    assert sorted(line.split(",")[2] for line in out.splitlines()[1:]) == ids


def test_a_table_keyed_by_spelling_is_read_one_row_a_run(tmp_path):
    top = _top(tmp_path / "top")
    table = tmp_path / "t.parquet"
    _batch(tmp_path, top, "-o", table)
    df = pl.read_parquet(table)  # as an earlier batch wrote it: each run under two spellings
    relative = df.with_columns(run_id=pl.col("run_id").str.replace(f"^{tmp_path}/", ""))
    pl.concat([df, relative]).write_parquet(table)
    said = _batch(tmp_path, top, "-o", table)
    assert "3 runs: 3 succeeded" in said, said
    assert sorted(pl.read_parquet(table)["run_id"]) == [str(top.resolve() / n) for n in "abc"]
