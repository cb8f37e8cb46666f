"""Unusable inputs through the CLI: exit 2, one line naming the file and the problem, no traceback."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import X, info_json, kineto, run_cli, write_parquet, write_trace

BASE = 1_793_620_800_000_000_000
GOOD = kineto([X("cpu_op", "aten::add", 10, 5, pid=1, tid=1),
               X("kernel", "add_kernel", 20, 5, pid=0, tid=7, device=0, stream=7)],
              baseTimeNanoseconds=BASE)


def _gz_truncated(tmp_path):
    data = gzip.compress(json.dumps(GOOD).encode())
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[: len(data) // 2])
    return p, "gzip"


def _parquet_missing_column(tmp_path):
    p = write_parquet(tmp_path / "export" / "SystemProfileEvents.parquet", [
        dict(id=1, name="nc_exec_running", start_ts=BASE, end_ts=BASE + 10,
             trace_event_source="neuron_hw", instance_id="i-x", process_id=1, nc_idx=0),
    ], drop=("start_ts",))
    return p, "start_ts"


def _write(name: str, data: bytes, problem: str):
    def make(tmp_path):
        p = tmp_path / name
        p.write_bytes(data)
        return p, problem
    return make


BAD = {
    "missing": lambda tmp_path: (tmp_path / "no_such_trace.json", "no such file"),
    "empty": _write("empty.json", b"", "empty"),
    "whitespace": _write("blank.json", b"  \n\t\n", "empty"),
    "truncated": _write("trunc.json", json.dumps(GOOD).encode()[:40], "not valid JSON"),
    "not json": _write("notes.json", b"hello, this is plain text\n", "not valid JSON"),
    "not a trace extension": _write("notes.txt", b"hello\n", "not a profile"),
    "object without traceEvents": _write("config.json", b'{"lr": 0.1, "epochs": 3}', "traceEvents"),
    "json list": _write("list.json", b'[1, 2, 3]', "list"),  # a list, not of events
    "traceEvents not a list": _write("odd.json", b'{"traceEvents": {"a": 1}}', "not a list"),
    "not gzip": _write("fake.json.gz", b'{"traceEvents": []}', "gzip"),
    "truncated gzip": _gz_truncated,
    "corrupt parquet": _write("SystemProfileEvents.parquet", b"PAR1 this is not parquet", "Parquet"),
    "parquet missing column": _parquet_missing_column,
    # (a NEFF or NTFF named alone is its folder's run since issue 38: tests/inputs/test_file_types)
    "ntrace.pb named directly": _write("ntrace.pb", b"\x00pb", "neuron-explorer"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_exit_2(tmp_path, case):
    path, problem = BAD[case](tmp_path)
    code, out, err = run_cli("info", path)
    assert code == 2, (code, out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0]
    assert problem.lower() in lines[0].lower()
    assert "Traceback" not in err
    assert "internal error" not in err  # a known bad input, not a bug


@pytest.mark.parametrize("case", ["truncated", "not gzip", "parquet missing column"])
def test_debug_shows_the_traceback(tmp_path, case):
    path, _ = BAD[case](tmp_path)
    code, _, err = run_cli("--debug", "info", path)
    assert code == 2
    assert "Traceback" in err
    assert str(path) in err.splitlines()[-1]


def test_utf8_bom_is_read(tmp_path):
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    run = info_json(p)["runs"][0]
    assert run["events"] == 2


def test_bom_in_gzip_is_read(tmp_path):
    p = tmp_path / "bom.json.gz"
    p.write_bytes(gzip.compress(b"\xef\xbb\xbf" + json.dumps(GOOD).encode()))
    assert info_json(p)["runs"][0]["events"] == 2


def test_cpu_only_trace_is_fine_and_says_so(tmp_path):
    doc = kineto([
        X("user_annotation", "ProfilerStep#0", 0, 100, pid=1, tid=1),
        X("cpu_op", "aten::add", 10, 5, pid=1, tid=1),
        X("cpu_op", "aten::mul", 20, 5, pid=1, tid=2),
    ], baseTimeNanoseconds=BASE)
    p = write_trace(tmp_path / "cpu.json", doc)
    code, out, err = run_cli("info", p, "--format", "json")
    assert code == 0, err
    run = json.loads(out)["runs"][0]
    assert run["hardware_lanes"] == 0
    assert "hardware" not in run["lanes_by_kind"]
    assert any("no hardware lanes" in n for n in run["notes"]), run["notes"]
    assert run["events"] == 3
    # the table form says it too
    code, out, _ = run_cli("info", p)
    assert code == 0 and "0 hardware lanes" in out


def test_output_file_is_written_and_nothing_else(tmp_path):
    trace = write_trace(tmp_path / "in" / "trace.json", GOOD)
    outdir = tmp_path / "out"
    outdir.mkdir()
    code, out, err = run_cli("info", trace, "-o", outdir / "out.json")
    assert code == 0, err
    assert out == ""
    assert sorted(p.name for p in outdir.iterdir()) == ["out.json"]
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == ["trace.json"]
    written = json.loads((outdir / "out.json").read_text())  # JSON, from the extension
    assert written == info_json(trace)


def test_unwritable_output_is_one_line_naming_it(tmp_path):
    trace = write_trace(tmp_path / "trace.json", GOOD)
    target = tmp_path / "missing_dir" / "out.json"
    code, out, err = run_cli("info", trace, "-o", target)
    assert code != 0
    assert len(err.splitlines()) == 1 and str(target) in err
    assert "Traceback" not in err


def test_unwritable_output_is_exit_2(tmp_path):
    trace = write_trace(tmp_path / "trace.json", GOOD)
    code, _, _ = run_cli("info", trace, "-o", tmp_path / "missing_dir" / "out.json")
    assert code == 2


@pytest.mark.parametrize("command", ["info", "gaps", "ops", "chain", "diff"])
def test_an_output_extension_naming_no_format_is_refused_before_reading(tmp_path, command):
    target = tmp_path / "out.xlsx"
    missing = tmp_path / "no_such_trace.json"
    sides = (missing, missing) if command == "diff" else (missing,)
    code, out, err = run_cli(command, *sides, "-o", target)
    assert (code, out) == (2, "")  # the -o is refused first: the missing input is not read
    (line,) = err.splitlines()
    assert line.startswith(f"traceana: error: -o {target}: the extension names no output format")
    assert "--format" in line and not target.exists()
