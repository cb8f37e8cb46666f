"""Two `traceana batch` runs on one table (issue 18): real processes, a real lock.

Without a lock, two batches on one table each read the old table, add their own runs and
write: the last write wins, and each exits 0 having kept half the runs. What a user relies on
now: the second batch refuses at once, in one line naming the table and the pid of the batch
that holds it, exit 2; the first finishes untouched; rerunning the second then adds its runs,
so the table ends with every run of both. A lock left by a batch that died is taken over with
a note; the lock file is gone after every way a batch ends (done, an error, Ctrl-C, SIGTERM).

The first batch is held still with SIGSTOP once it has written its first checkpoint
(``--checkpoint 0`` writes the table after every run), so the test does not race it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import X, kineto, write_trace

ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"
RUNS = 8


def _tiny_run(folder: Path, i: int) -> None:
    write_trace(folder / "trace.json", kineto([
        X("cpu_op", "aten::mm", 0, 50, **{"External id": 1}),
        X("cuda_runtime", "cudaLaunchKernel", 1, 5, correlation=1, **{"External id": 1}),
        X("kernel", "k", 10, 20, pid=0, tid=7, device=0, stream=7, correlation=1),
        X("kernel", "k2", 40 + i, 20, pid=0, tid=7, device=0, stream=7, correlation=2)]))


@pytest.fixture
def roots(tmp_path) -> tuple[Path, Path]:
    """Two roots of RUNS runs each, with no run in common."""
    for name in ("first", "second"):
        for i in range(RUNS):
            _tiny_run(tmp_path / name / f"r{i:02d}", i)
    return tmp_path / "first", tmp_path / "second"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TRACEANA_")}


def traceana(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", ENTRY, *map(str, args)], env=_env(),
                          capture_output=True, text=True, timeout=120)


def started(*args: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", ENTRY, *map(str, args)], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, proc: subprocess.Popen, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while not path.exists():
        assert proc.poll() is None, f"the batch ended first: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {path} after {limit_s} s"
        time.sleep(0.005)


def run_ids(out: Path) -> set[str]:
    return set(pl.read_parquet(out)["run_id"].to_list())


def under(root: Path) -> set[str]:
    return {str(p) for p in root.iterdir()}


def test_a_second_batch_on_the_same_table_refuses_and_nothing_is_lost(roots, tmp_path):
    first_root, second_root = roots
    out = tmp_path / "runs.parquet"
    first = started("batch", first_root, "-o", out, "--jobs", "1", "--checkpoint", "0")
    try:
        _wait_for(out, first)  # its first checkpoint: it holds the table now
        first.send_signal(signal.SIGSTOP)
        second = traceana("batch", second_root, "-o", out, "--jobs", "1")
        trend = traceana("trend", out, "--format", "json")  # reading needs no lock
        first.send_signal(signal.SIGCONT)
        _, first_err = first.communicate(timeout=120)
    finally:
        first.kill()
        first.wait()

    assert second.returncode == 2, second.stderr
    (line,) = second.stderr.splitlines()
    assert line.startswith(f"traceana: error: {out}: ") and f"pid {first.pid} " in line, line
    assert trend.returncode == 0, trend.stderr
    assert first.returncode == 0, first_err
    assert run_ids(out) == under(first_root)
    assert not (tmp_path / "runs.parquet.lock").exists()

    again = traceana("batch", second_root, "-o", out, "--jobs", "1")
    assert again.returncode == 0, again.stderr
    assert run_ids(out) == under(first_root) | under(second_root)  # every run of both

    # A batch that stops on an error (a root that does not exist, found while the lock is
    # held) leaves no lock either: the next batch is not refused.
    failed = traceana("batch", second_root, tmp_path / "missing", "-o", out, "--jobs", "1")
    assert failed.returncode == 2 and "missing" in failed.stderr, failed.stderr
    assert not (tmp_path / "runs.parquet.lock").exists()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_stale_lock_of_a_dead_batch_is_taken_over_with_a_note(roots, tmp_path):
    first_root, _ = roots
    out = tmp_path / "runs.parquet"
    lock = tmp_path / "runs.parquet.lock"
    pid = _dead_pid()
    lock.write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "started": "then"}))

    done = traceana("batch", first_root, "-o", out, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    notes = [ln for ln in done.stderr.splitlines() if ln.startswith("traceana: note: ")]
    assert len(notes) == 1 and f"pid {pid} " in notes[0] and str(lock) in notes[0], done.stderr
    assert run_ids(out) == under(first_root)
    assert not lock.exists()


def test_a_lock_held_on_another_host_is_not_taken_over(roots, tmp_path):
    first_root, _ = roots
    out = tmp_path / "runs.parquet"
    lock = tmp_path / "runs.parquet.lock"
    holder = {"pid": _dead_pid(), "host": socket.gethostname() + "-elsewhere"}
    lock.write_text(json.dumps(holder))

    refused = traceana("batch", first_root, "-o", out, "--jobs", "1")
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    assert f"pid {holder['pid']} on {holder['host']}" in line and str(lock) in line, line
    assert not out.exists()
    assert json.loads(lock.read_text()) == holder  # left for its holder


@pytest.mark.parametrize(("how", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_the_lock_is_held_while_the_batch_runs_and_removed_when_it_is_stopped(roots, tmp_path,
                                                                              how, code):
    first_root, _ = roots
    out = tmp_path / "runs.parquet"
    lock = tmp_path / "runs.parquet.lock"
    proc = started("batch", first_root, "-o", out, "--jobs", "1", "--checkpoint", "0")
    _wait_for(out, proc)
    proc.send_signal(signal.SIGSTOP)  # still, so that it cannot finish first
    assert json.loads(lock.read_text())["pid"] == proc.pid  # held while the batch runs
    proc.send_signal(getattr(signal, how))
    proc.send_signal(signal.SIGCONT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert not lock.exists()


# A stop whose exception is raised where Python can only report it as "unraisable" (CI saw it
# inside polars' `Categorical` callback): here a finaliser sends SIGTERM to its own process,
# so the handler runs, and raises, inside `__del__`: in the third run's load, or in the table's
# one write as the batch ends (after the last run: nothing else would raise it again).
SWALLOWED = """
import os, signal, sys
import trace_analyzer.loading.profile as profile
import trace_analyzer.batch.table as table
import polars as pl
MODE = sys.argv[1]
SIGNAL = signal.SIGINT if MODE == "panic" else signal.SIGTERM
class Stop:
    def __del__(self):
        os.kill(os.getpid(), SIGNAL)
        for _ in range(100):  # bytecodes: the handler runs here, inside __del__
            pass
def swallowing(module, name, at):
    real, calls = getattr(module, name), []
    def call(*args, **kwargs):
        calls.append(1)
        if len(calls) == at:
            Stop()
            if MODE == "panic":  # as polars did in CI: its unwrap() of the stop's PyErr
                raise pl.exceptions.PanicException(
                    "called `Result::unwrap()` on an `Err` value: PyErr { type: KeyboardInterrupt }")
        return real(*args, **kwargs)
    setattr(module, name, call)
if MODE == "write":
    swallowing(table, "write_atomic", 1)
else:
    swallowing(profile, "load_parts", 3)
from trace_analyzer.cli import main
sys.argv[0:2] = ['traceana']
main()
"""


@pytest.mark.parametrize(("where", "kept", "how", "code"), [
    ("run", 2, "terminated", 143), ("write", 8, "terminated", 143),
    ("panic", 2, "interrupted", 130)])
def test_a_stop_swallowed_as_unraisable_is_one_line_and_its_exit(roots, tmp_path, where, kept,
                                                                how, code):
    first_root, _ = roots
    out = tmp_path / "runs.parquet"
    done = subprocess.run([sys.executable, "-c", SWALLOWED, where, "batch", str(first_root),
                           "-o", str(out), "--jobs", "1"], env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"traceana: {how}: ") and f"({kept} of 8 analysed" in line, line
    assert pl.read_parquet(out)["run_id"].n_unique() == kept  # a run the stop spoilt is not kept
    assert not (tmp_path / "runs.parquet.lock").exists()
