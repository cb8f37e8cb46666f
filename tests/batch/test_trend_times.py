"""`trend` places each run at a time of its own (issue 39): capture.json's, else the time its
trace recorded (its first event, on the epoch clock), else its files' modification time, which
a note names; and a group that joins unlike runs says so (questions/trend/analysis.py,
docs/batch.md "Trend")."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from conftest import X, kineto, run_process, write_trace

ROOT = Path(__file__).resolve().parents[2]
BASE = 1_760_000_000 * 10**9  # 2025-10-09, epoch ns


def _trend(tmp_path: Path, *roots: Path) -> dict:
    table = tmp_path / "runs.parquet"
    code, out, err, *_ = run_process("batch", *roots, "-o", table, timeout=180)
    assert code == 0, err
    code, out, err, *_ = run_process("trend", table, "--format", "json")
    assert code == 0, err
    return json.loads(out)["runs"][0]


def test_a_run_is_placed_at_the_time_its_trace_recorded(tmp_path):
    timed = tmp_path / "timed"
    events = [X("kernel", "k", 250.5, 40, pid=0, tid=7, device=0, stream=7),
              X("kernel", "k", 400, 40, pid=0, tid=7, device=0, stream=7)]  # fmt: skip
    write_trace(timed / "trace.json", kineto(events, baseTimeNanoseconds=BASE))
    untimed = tmp_path / "untimed"  # ts from 0 and no base: no time of day
    write_trace(untimed / "trace.json", kineto(events))
    os.utime(untimed / "trace.json", (1_600_000_000, 1_600_000_000))
    doc = _trend(tmp_path, timed, untimed)
    rows = {Path(r["run_id"]).name: r for r in doc["rows"]}
    # the first event of the raw trace: base + 250.5 µs
    first = min(e["ts"] for e in json.loads((timed / "trace.json").read_text())["traceEvents"])
    expected = datetime.fromtimestamp((BASE + round(first * 1000)) / 1e9, tz=UTC)
    assert datetime.fromisoformat(rows["timed"]["time"]) == expected
    assert rows["timed"]["time_from"] == "trace"
    assert rows["untimed"]["time_from"] == "file modified"
    assert datetime.fromisoformat(rows["untimed"]["time"]).year == 2020  # the mtime set above
    (note,) = [n for n in doc["notes"] if "last modified" in n]
    assert str(os.path.realpath(untimed)) in note and "timed," not in note


def test_a_group_joining_unlike_runs_says_so(tmp_path):
    neuron = tmp_path / "neuron"
    shutil.copytree(ROOT / "fixtures" / "rmsnorm_naive", neuron)
    gpu = tmp_path / "gpu"
    events = [X("kernel", "k", 0, 40, pid=0, tid=7, device=0, stream=7)]
    write_trace(gpu / "trace.json", kineto(events, baseTimeNanoseconds=BASE))
    doc = _trend(tmp_path, neuron, gpu)
    assert {r["group"] for r in doc["rows"]} == {"(none)"}
    joined = [n for n in doc["notes"] if "joins runs of 2 kinds" in n]
    assert joined and "kineto-json" in joined[0], doc["notes"]
