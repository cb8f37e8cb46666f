"""CSV output never hands a spreadsheet a live formula (issue 18, "names are data"): a name
from a trace that starts with = + - @ (or a tab, a carriage return) is written with a leading
quote; numbers, negative ones included, stay numbers."""

from __future__ import annotations

import csv
import io

import pytest
from conftest import X, kineto, run_cli, write_trace

HOSTILE = ["=cmd|' /C calc'!A0", "+SUM(1,1)", "-2+3", "@SUM(A1)", "\tTAB"]


def trace_with_names(tmp_path, names):
    """One op per name, each launching one kernel on stream 7, 10 µs apart."""
    events = []
    for i, name in enumerate(names):
        t = 1000 + 100 * i
        events.append(X("cpu_op", name, t, 20, **{"External id": i + 1}))
        events.append(X("cuda_runtime", "cudaLaunchKernel", t + 5, 5, correlation=i + 1))
        events.append(X("kernel", f"k{i}", t + 30, 40, pid=0, tid=7, device=0, stream=7,
                        correlation=i + 1))
    return write_trace(tmp_path / "trace.json", kineto(events))


@pytest.mark.parametrize("command", ["ops", "chain", "gaps"])
def test_no_csv_cell_starts_a_formula(tmp_path, command):
    trace = trace_with_names(tmp_path, HOSTILE)
    code, out, err = run_cli(command, trace, "--format", "csv", "--no-cache")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows
    cells = [v for r in rows for v in r.values() if v]
    assert not [v for v in cells if v[0] in "=+@\t\r"], cells
    # a leading "-" only where the cell is a number (a change, a negative delta)
    for v in cells:
        if v.startswith("-"):
            float(v)
    if command in ("ops", "chain"):  # the names are there, quoted, not lost
        names = {r.get("name") or r.get("op") for r in rows}
        assert {"'" + n for n in HOSTILE} <= names, names
