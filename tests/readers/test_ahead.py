"""The compiled Kineto scan begun while polars loads (readers/ahead.py): what a user relies on is
that the command reads exactly what the scan in line reads, whatever happened to the file in
between, and that the scan begins only where it can be taken."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import X, kineto, run_cli, write_trace
from polars.testing import assert_frame_equal

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.discover import Source
from trace_analyzer.readers import ahead, kineto_native, read_source

pytestmark = pytest.mark.skipif(kineto_native._kscan is None, reason="no compiled scanner here")


def _trace(path, names):
    ops = [X("cpu_op", n, 10 + 10 * i, 5) for i, n in enumerate(names)]
    return write_trace(path, kineto(ops))


def _read(path):
    return read_source(Source(path=path, kind="json", named=True))


@pytest.fixture(autouse=True)
def _nothing_left():
    ahead.forget()
    yield
    ahead.forget()


def test_the_scan_begun_is_the_scan_taken(tmp_path):
    path = _trace(tmp_path / "trace.json", ["aten::mm", "aten::add"])
    want = _read(path)
    assert ahead.begin(path)
    got = _read(path)
    assert not ahead._begun  # taken, once
    assert_frame_equal(got.events, want.events)
    assert (got.warnings, got.notes) == (want.warnings, want.notes)


def test_a_file_changed_after_the_scan_began_is_read_as_it_is_now(tmp_path):
    path = _trace(tmp_path / "trace.json", ["aten::mm"])
    assert ahead.begin(path)
    next(iter(ahead._begun.values())).result()  # the old file scanned
    _trace(path, ["aten::add", "aten::mul"])  # another size: another file
    assert _read(path).events["name"].to_list() == ["aten::add", "aten::mul"]


def test_a_file_the_scan_declines_reads_as_in_line(tmp_path):
    path = tmp_path / "trace.json"
    path.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2')  # cut off
    with pytest.raises(InputError) as in_line:
        _read(path)
    assert ahead.begin(path)
    with pytest.raises(InputError) as begun:
        _read(path)
    assert str(begun.value) == str(in_line.value)


def test_where_no_scan_begins(tmp_path, monkeypatch):
    gz = _trace(tmp_path / "gz" / "trace.json.gz", ["a"])
    two = tmp_path / "two"
    _trace(two / "rank0.json", ["a"])
    _trace(two / "rank1.json", ["b"])
    one = tmp_path / "one"
    inside = _trace(one / "trace.json", ["a"])
    text = tmp_path / "notes.txt"
    text.write_text("{}")
    assert not ahead.begin(gz)  # inflated on the way: read in line
    assert not ahead.begin(two)  # several traces
    assert not ahead.begin(text)
    assert not ahead.begin(tmp_path / "missing.json")
    assert ahead.begin(one) and ahead.taken(inside) is not None  # a folder's one trace
    monkeypatch.setattr(ahead, "AHEAD_BYTES", 10)
    assert not ahead.begin(inside)  # larger than the bound
    monkeypatch.setattr(ahead, "AHEAD_BYTES", 1 << 20)
    monkeypatch.setenv(ahead.ENV, "polars")
    assert not ahead.begin(inside)  # another scan chosen


def test_the_command_prints_the_same_with_and_without_it(tmp_path, monkeypatch):
    path = _trace(tmp_path / "trace.json", ["aten::mm", "aten::add", "aten::mm"])
    begun = run_cli("gaps", path, "--no-cache", "--format", "json")
    monkeypatch.setattr(ahead, "begin", lambda path: False)
    in_line = run_cli("gaps", path, "--no-cache", "--format", "json")
    assert begun == in_line and begun[0] == 0


def test_it_loads_no_polars():
    code = "import sys, trace_analyzer.readers.ahead; print('polars' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert out.stdout.strip() == "False"
