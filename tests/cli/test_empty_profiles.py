"""A profile that records nothing says so (issue 37: an Explorer table of 0 rows, or an empty
traceEvents, was said to "record host activity only"), as real processes; one that records
host activity only still says that."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
from conftest import run_process

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NOTHING = "no events: this profile records nothing (an empty trace or table)"
HOST_ONLY = "records host activity only"


def said(path: Path) -> str:
    code, out, err, *_ = run_process("gaps", path, "--no-cache")
    assert code == 0, err
    return out


def test_an_empty_trace_records_nothing(tmp_path):
    trace = tmp_path / "trace.json"
    trace.write_text('{"traceEvents": []}')
    out = said(trace)
    assert NOTHING in out and HOST_ONLY not in out, out


def test_an_explorer_table_of_no_rows_records_nothing(tmp_path):
    export = tmp_path / "parquet"
    shutil.copytree(FIXTURES / "rmsnorm_naive" / "explorer" / "parquet", export)
    table = export / "SystemProfileEvents.parquet"
    pl.read_parquet(table).head(0).write_parquet(table)
    out = said(export)
    assert NOTHING in out and HOST_ONLY not in out, out


def test_host_activity_alone_is_still_said(tmp_path):
    trace = tmp_path / "trace.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 5, "pid": 1,
               "tid": 1}]  # fmt: skip
    trace.write_text(json.dumps({"traceEvents": events}))
    out = said(trace)
    assert HOST_ONLY in out and NOTHING not in out, out
