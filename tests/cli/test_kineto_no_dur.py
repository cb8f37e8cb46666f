"""A Kineto complete event (``"ph": "X"``) without ``dur``: read as 0 ns, as before, but no
longer silently: counted the same on all three reading paths (``TRACEANA_KINETO_SCAN``) and
said in the run's warnings and in the one stderr line of every analysing command (not as
dropped: the event is there, its duration a default). The stderr line totals every reason
events were dropped for, the unmatched B/E records among them. Each through the CLI as a
real process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import X, kineto, write_trace

from trace_analyzer.readers import kineto_native

ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"
BASE = 1_793_620_800_000_000_000
PATHS = kineto_native.CHOICES


def traceana(how: str, *args: object) -> subprocess.CompletedProcess:
    """``traceana ARGS`` as a real process, reading Kineto traces with the path ``how``."""
    env = {**os.environ, kineto_native.ENV: how}
    return subprocess.run([sys.executable, "-c", ENTRY, *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=env)


def events(without_dur: int = 0, bad: list[dict] | None = None) -> list[dict]:
    """Three ops, each launching one kernel on GPU 0 stream 7; the first ``without_dur``
    kernels written without dur; then ``bad``. A profiler span without dur too (not an
    event: not counted)."""
    evs: list[dict] = [{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler", "pid": "Spans",
                        "tid": 1, "ts": 0}]
    for i, t in enumerate((10, 50, 90), start=1):
        evs.append(X("cpu_op", f"aten::op{i}", t, 6, 1, 1, **{"External id": i}))
        evs.append(X("cuda_runtime", "cudaLaunchKernel", t + 1, 2, 1, 1, correlation=i))
        kernel = X("kernel", f"k{i}", t + 10, 10, 0, 7, device=0, stream=7, correlation=i)
        evs.append({k: v for k, v in kernel.items() if k != "dur" or i > without_dur})
    return evs + (bad or [])


def run(tmp_path: Path, evs: list[dict]) -> Path:
    write_trace(tmp_path / "run" / "trace.json", kineto(evs, baseTimeNanoseconds=BASE))
    return tmp_path / "run"


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("traceana: warning:")]


def test_x_records_without_dur_are_counted_on_every_path(tmp_path):
    path = run(tmp_path, events(without_dur=2))
    outs = {how: traceana(how, "gaps", path, "--no-cache", "--format", "json") for how in PATHS}
    for how, proc in outs.items():
        assert proc.returncode == 0, (how, proc.stderr)
        assert warnings_of(proc.stderr) == [
            f"traceana: warning: {path}: 2 X records without dur, read as 0 ns"
        ], (how, proc.stderr)
    assert len({(p.stdout, p.stderr) for p in outs.values()}) == 1
    info = traceana("native", "info", path, "--no-cache")  # the run's warnings say it too
    assert f"{path}/trace.json: 2 X records without dur, read as 0 ns" in info.stdout


def test_the_line_says_both_the_dropped_and_the_defaulted(tmp_path):
    bad = [X("kernel", "k_neg", 70, -1, 0, 7), X("cpu_op", "aten::neg", 20, -5, 1, 1)]
    path = run(tmp_path, events(without_dur=1, bad=bad))
    for how in PATHS:
        proc = traceana(how, "ops", path, "--no-cache", "--format", "csv")
        assert proc.returncode == 0, (how, proc.stderr)
        assert warnings_of(proc.stderr) == [
            f"traceana: warning: {path}: 2 events dropped (2 end before start); ops may be "
            "missing events; 1 X record without dur, read as 0 ns"
        ], (how, proc.stderr)


def test_unmatched_b_and_e_are_in_the_total(tmp_path):
    bad = [{"ph": "E", "pid": 1, "tid": 1, "ts": 1},
           {"ph": "B", "cat": "cpu_op", "name": "open", "pid": 1, "tid": 1, "ts": 95}]
    path = run(tmp_path, events(bad=bad))
    proc = traceana("native", "gaps", path, "--no-cache", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert warnings_of(proc.stderr) == [
        f"traceana: warning: {path}: 2 events dropped (1 a begin (B) record and no end (E), "
        "1 an end (E) record and no begin (B)); gaps may be missing events"
    ], proc.stderr


@pytest.mark.parametrize("how", PATHS)
def test_a_trace_with_a_dur_on_every_x_says_nothing(tmp_path, how):
    proc = traceana(how, "gaps", run(tmp_path, events()), "--no-cache", "--format", "json")
    assert proc.returncode == 0 and not warnings_of(proc.stderr), proc.stderr
