"""An input that is not what its name says gets one line that says what it is instead (issue
37): a ``.json`` that is gzip-compressed, or UTF-16 or UTF-32 text (before: "surrogates not
allowed"), and a folder named like an Explorer table (before: an internal error,
IsADirectoryError). Through the CLI in-process (the same code as the command). Named alone and
inside a folder, with each of the three Kineto readings."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DOC = '{"traceEvents": [{"ph": "X", "name": "µ", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}'

CASES = {
    "gzip": (gzip.compress(DOC.encode()), "gzip-compressed, though not named .gz"),
    "utf-16": (DOC.encode("utf-16"), "UTF-16 text; JSON is read as UTF-8"),
    "utf-16-le": (DOC.encode("utf-16-le"), "UTF-16 text; JSON is read as UTF-8"),
    "utf-32": (DOC.encode("utf-32"), "UTF-32 text; JSON is read as UTF-8"),
}


def one_line(code: int, out: str, err: str, *_: object) -> str:
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("traceana: error: "), err
    return lines[0]


@pytest.mark.parametrize("scan", ["native", "polars", "exact"])
@pytest.mark.parametrize("named", ["file", "folder"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_json_that_is_not_utf8_json_says_what_it_is(tmp_path, monkeypatch, case, named, scan):
    data, said = CASES[case]
    trace = tmp_path / "run" / "trace.json"
    trace.parent.mkdir()
    trace.write_bytes(data)
    monkeypatch.setenv("TRACEANA_KINETO_SCAN", scan)
    line = one_line(*run_cli("gaps", trace if named == "file" else trace.parent, "--no-cache"))
    assert f"{trace}: {said}" in line, line


def test_a_folder_named_like_an_explorer_table_is_one_line(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "rmsnorm_naive", run)
    table = next(run.rglob("SystemProfileEvents.parquet"))
    folder = table.with_name("SystemProfileEvents_1.parquet")
    folder.mkdir()
    line = one_line(*run_cli("gaps", run, "--no-cache"))
    assert f"{folder}: a folder named like a Parquet table, not one" in line, line
