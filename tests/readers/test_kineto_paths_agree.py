"""The three ways to read a Kineto trace (``TRACEANA_KINETO_SCAN``: native, polars, exact) give
one answer on odd values put anywhere in a record: the same events, notes and warnings, or the
same error (docs/formats.md, "Three ways to read a Kineto trace").

The answer is the exact path's (orjson's): a number beyond a double's range (``1e400``) or a
lone surrogate escape (``"\\ud800"``) anywhere in the file makes it invalid JSON, one error line
and exit 2 on every path; a name that is not a string is the JSON text of its value (``true``,
``100.0`` for ``1e2``), null stays null. Each case is read in-process under the three paths
(the polars path's blocks cut small too, so that a block is parsed in the middle of the file,
not only at its end); a few run as real processes of the CLI.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_kineto_fast import source

from trace_analyzer.errors import InputError
from trace_analyzer.readers import kineto_bytes, kineto_native, read_source

ENV = kineto_native.ENV
PATHS = kineto_native.CHOICES
ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"

BASE = [
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 100.0, "dur": 10.0,
     "args": {"stream": 7, "device": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 0, "tid": 1, "ts": 90.0, "dur": 30.0,
     "args": {}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 130.0, "dur": 10.0,
     "args": {"stream": 7, "device": 0}},
]
TEXT = json.dumps({"traceEvents": BASE, "deviceProperties": [{"id": 0}],
                   "baseTimeNanoseconds": 1_000_000})

# Odd values, as JSON text.
ODD = {
    "1e400": "1e400", "-1e400": "-1e400", "1e309": "1e309", "long": "1" + "0" * 400,
    "e-400": "1e-400", "e300": "1e300", "surrogate": '"\\ud800"', "low surrogate": '"\\udc00"',
    "pair": '"\\ud83d\\ude00"', "true": "true", "false": "false", "null": "null",
    "1e2": "1e2", "1.0": "1.0", "object": '{"a": 1}', "array": "[1, 2]",
    "big": "123456789012345678901234567890", "-0": "-0", "digits": '"12"',
}


def _at(old: str, new: str):
    return lambda v: TEXT.replace(old, new.format(v=v), 1)


# Places for them, each a change of TEXT.
PLACES = {
    "new key": _at('"dur": 10.0,', '"dur": 10.0, "zz": {v},'),
    "arg": _at('"device": 0}', '"device": 0, "zz": {v}}}'),
    "nested arg": _at('"device": 0}', '"device": 0, "zz": [{{"y": {v}}}]}}'),
    "top": _at('{"traceEvents"', '{{"zz": {v}, "traceEvents"'),
    "name": _at('"name": "k1"', '"name": {v}'),
    "op name": _at('"name": "op"', '"name": {v}'),
    "cat": _at('"cat": "cpu_op"', '"cat": {v}'),
    "ph": _at('"ph": "X"', '"ph": {v}'),
    "dur": _at('"dur": 10.0', '"dur": {v}'),
    "ts": _at('"ts": 100.0', '"ts": {v}'),
    "pid": _at('"pid": 0', '"pid": {v}'),
    "tid": _at('"tid": 7', '"tid": {v}'),
    "stream": _at('"stream": 7', '"stream": {v}'),
}
# The documented answer: these make the file invalid JSON (orjson's message), on every path.
INVALID = {
    "1e400": "number is infinity when parsed as double",
    "-1e400": "number is infinity when parsed as double",
    "1e309": "number is infinity when parsed as double",
    "long": "number is infinity when parsed as double",
    "surrogate": "no low surrogate in string",
    "low surrogate": "invalid high surrogate in string",
}
# ... and a name that is not a string: the JSON text of its value.
NAMES = {"true": "true", "false": "false", "1e2": "100.0", "1.0": "1.0", "object": '{"a":1}',
         "array": "[1,2]", "big": "1.2345678901234568e+29", "-0": "0", "digits": "12"}


def answer(path: Path, monkeypatch, how: str) -> tuple:
    """Return what the path ``how`` makes of the trace: its events, notes and warnings, or
    ("error", the error's line)."""
    monkeypatch.setenv(ENV, how)
    try:
        got = read_source(source(path))
    except InputError as e:
        return ("error", str(e))
    assert got is not None
    return (got.events.drop("args_json").to_dicts(), got.notes, got.warnings)


@pytest.mark.parametrize("place", sorted(PLACES))
def test_the_three_paths_give_one_answer_on_odd_values(tmp_path, monkeypatch, place):
    for (value, odd), block in itertools.product(ODD.items(), (None, 64)):
        monkeypatch.setattr(kineto_bytes, "BLOCK", block or kineto_bytes.BLOCK)
        path = tmp_path / f"{value}-{block}" / "trace.json"
        path.parent.mkdir()
        path.write_text(PLACES[place](odd))
        want = answer(path, monkeypatch, "exact")
        for how in ("native", "polars"):
            got = answer(path, monkeypatch, how)
            assert got == want, f"{place} = {odd} (block {block}): {how} differs from exact"
        if value in INVALID:
            assert want[0] == "error" and "not valid JSON" in want[1], (place, value, want)
            assert INVALID[value] in want[1], (place, value, want)
        elif place in ("name", "op name") and value in NAMES:
            names = {e["name"] for e in want[0]}
            assert NAMES[value] in names, (place, value, names)


def traceana(path: Path, how: str, *args: str) -> subprocess.CompletedProcess:
    """``traceana ARGS PATH --no-cache`` as a real process, reading with the path ``how``."""
    env = {**os.environ, ENV: how}
    return subprocess.run([sys.executable, "-c", ENTRY, *args, str(path), "--no-cache"],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize(
    ("place", "value", "want"),
    [
        ("new key", "1e400", "number is infinity when parsed as double"),
        ("arg", "surrogate", "no low surrogate in string"),
    ],
)
def test_invalid_json_is_one_error_line_on_every_path(tmp_path, place, value, want):
    path = tmp_path / "run" / "trace.json"
    path.parent.mkdir()
    path.write_text(PLACES[place](ODD[value]))
    outs = {how: traceana(path.parent, how, "ops", "--format", "csv") for how in PATHS}
    for how, proc in outs.items():
        assert proc.returncode == 2, (how, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("traceana: error: "), (how, proc.stderr)
        assert f"not valid JSON: {want}" in lines[0], (how, lines)
    assert len({(p.stdout, p.stderr) for p in outs.values()}) == 1


def test_a_name_true_is_true_on_every_path(tmp_path):
    path = tmp_path / "run" / "trace.json"
    path.parent.mkdir()
    path.write_text(PLACES["op name"]("true"))
    outs = {how: traceana(path.parent, how, "ops", "--format", "csv") for how in PATHS}
    for how, proc in outs.items():
        assert proc.returncode == 0, (how, proc.stderr)
        assert "\ntrue," in proc.stdout, (how, proc.stdout)
    assert len({(p.stdout, p.stderr) for p in outs.values()}) == 1


def test_x_records_without_dur_are_counted_alike(tmp_path, monkeypatch):
    """An X record without dur is read as 0 ns and counted on every path, whichever block
    of the polars path holds it; a profiler span without dur (not an event) is not."""
    records = [*BASE, {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler", "pid": "Spans",
                       "tid": 1, "ts": 0}]
    for i in (0, 2):
        records[i] = {k: v for k, v in records[i].items() if k != "dur"}
    path = tmp_path / "run" / "trace.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"traceEvents": records, "baseTimeNanoseconds": 1_000_000}))
    for block in (None, 64):
        monkeypatch.setattr(kineto_bytes, "BLOCK", block or kineto_bytes.BLOCK)
        for how in PATHS:
            events, _, warnings = answer(path, monkeypatch, how)
            assert f"{path}: 2 X records without dur, read as 0 ns" in warnings, (how, block)
            kernels = {e["name"]: e["duration_ns"] for e in events if e["category"] == "kernel"}
            assert kernels == {"k1": 0, "k2": 0}, (how, block, kernels)
