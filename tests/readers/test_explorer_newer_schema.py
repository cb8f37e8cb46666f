"""An Explorer export of a newer schema (12.0.1, Neuron 2.33, whose column list is not public)
is read by column name: columns 7.4.0 does not have are named in a note, never an error, and
the gaps are those of the same rows without them (issue 38), as real processes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
from conftest import run_process

EXPORT = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive" / "explorer" / "parquet"


def test_columns_a_newer_schema_adds_are_named_not_refused(tmp_path):
    new = tmp_path / "export"
    shutil.copytree(EXPORT, new)
    table = new / "SystemProfileEvents.parquet"
    pl.read_parquet(table).with_columns(
        model_id=pl.lit(7), queue_depth=pl.lit("x")
    ).write_parquet(table)
    meta = new / "Metadata.parquet"
    pl.read_parquet(meta).with_columns(profile_schema_version=pl.lit("12.0.1")).write_parquet(meta)
    code, out, err, *_ = run_process("info", new, "--no-cache", "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    (source,) = run["sources"]
    assert source["schema_version"] == "12.0.1" and source["events"] > 0
    (named,) = [n for n in source["notes"] if "not read" in n]
    assert named.endswith("model_id, queue_depth"), named
    gaps = [run_process("gaps", p, "--no-cache", "--format", "csv") for p in (new, EXPORT)]
    assert gaps[0][0] == 0 and gaps[0][1] == gaps[1][1]
