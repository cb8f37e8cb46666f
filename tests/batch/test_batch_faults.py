"""`traceana batch` under faults: a worker killed mid-run, a run hanging past --timeout, the
output disk full, Ctrl-C, SIGTERM, the batch itself SIGKILLed.

What a user relies on, whatever happens: every run that finished is in the table; the table
on disk is always a whole Parquet table (never half-written); no worker process outlives the
batch; and running the same command again completes the rest, ending with the table an
undisturbed batch writes. The reference for "the table an undisturbed batch writes" is one
in-process batch of the same runs (tests/batch/test_batch.py checks its numbers against `gaps`).

The real-process tests run `traceana batch` under a pseudo-terminal, so that its progress bar
is drawn and a fault can be injected after a known number of runs finished; Ctrl-C is the
byte 0x03 typed at that terminal, which the kernel turns into SIGINT for the whole
foreground process group (the batch and its workers), as for a user.
"""

from __future__ import annotations

import errno
import os
import pty
import re
import resource
import select
import signal
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from batch_faults import dies_or_hangs
from conftest import X, kineto, run_cli, write_trace

from trace_analyzer import batch as batch_mod
from trace_analyzer.errors import InputError

VOLATILE = ["analysed_at", "analysis_s"]
ENTRY = "from trace_analyzer.cli import main; main()"
RUNS = 16  # enough for a fault to land mid-batch; each run costs the suite a batch analysis


def _tiny_run(folder: Path, i: int) -> None:
    """A one-GPU run: an op, its launch, two kernels; the second kernel starts i µs later."""
    write_trace(folder / "trace.json", kineto([
        X("cpu_op", "aten::mm", 0, 50, **{"External id": 1}),
        X("cuda_runtime", "cudaLaunchKernel", 1, 5, correlation=1, **{"External id": 1}),
        X("kernel", "k", 10, 20, pid=0, tid=7, device=0, stream=7, correlation=1),
        X("kernel", "k2", 40 + i, 20, pid=0, tid=7, device=0, stream=7, correlation=2)]))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, pl.DataFrame]:
    """RUNS tiny runs under one root, and the table an undisturbed in-process batch writes."""
    root = tmp_path_factory.mktemp("faults") / "root"
    for i in range(RUNS):
        _tiny_run(root / f"r{i:03d}", i)
    out = tmp_path_factory.mktemp("reference") / "runs.parquet"
    res = batch_mod.run_batch([root], out, jobs=1)
    assert (res.found, res.succeeded) == (RUNS, RUNS)
    return root, pl.read_parquet(out).drop(VOLATILE)


def _whole(out: Path) -> pl.DataFrame:
    """The table on disk, which must read as a whole batch table."""
    df = pl.read_parquet(out)
    assert df.columns == list(batch_mod.SCHEMA)
    return df


def _no_temporaries(folder: Path) -> None:
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


def _session_processes(sid: int) -> list[int]:
    """The processes still alive in session ``sid`` (the batch under a pty leads its own)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


def _under_pty(args: list[str], fault, after: int, env: dict | None = None,
               limit_s: float = 120) -> tuple[int, str, bool]:
    """Run `traceana ARGS` under a pseudo-terminal; call ``fault(pid, fd)`` once the progress
    bar shows ``after`` runs done. Return the exit code, the output, and whether the fault was
    injected. Afterwards, no process of the batch's session may be left."""
    env = {**os.environ, **(env or {}), "COLUMNS": "200"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the batch, session leader with the pty as its terminal
        os.execve(sys.executable, [sys.executable, "-c", ENTRY, *args], env)
    out, injected = b"", False
    deadline = time.monotonic() + limit_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the batch closed the terminal (it exited)
                    break
                if not chunk:
                    break
                out += chunk
            if not injected:
                done = [int(n) for n in re.findall(rb"(\d+)/\d+", out)]
                if done and max(done) >= after:
                    fault(pid, fd)
                    injected = True
        else:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"batch still running after {limit_s} s:\n{out.decode(errors='replace')}")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    for _ in range(50):  # workers are killed as the batch exits; give the kernel a moment
        if not _session_processes(pid):
            break
        time.sleep(0.1)
    assert _session_processes(pid) == [], "processes of the batch outlived it"
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace"), injected


def _rerun_completes(root: Path, out: Path, reference: pl.DataFrame, *,
                     analysed: int | None = None) -> None:
    res = batch_mod.run_batch([root], out, jobs=1)
    assert (res.found, res.succeeded, res.failed) == (RUNS, RUNS, 0)
    if analysed is not None:
        assert res.analysed == analysed
    assert _whole(out).drop(VOLATILE).equals(reference)


# ----------------------------------------------------------------------------- in-process faults


def test_a_worker_killed_mid_run_costs_that_run_only(runs, tmp_path):
    root, reference = runs
    victim = root.parent / "die_here"
    _tiny_run(victim, 0)
    out = tmp_path / "runs.parquet"
    res = batch_mod.run_batch([root, victim], out, jobs=2, analyse=dies_or_hangs)
    df = _whole(out)
    assert (res.found, res.succeeded, res.failed) == (RUNS + 1, RUNS, 1)
    row = df.filter(pl.col("run_id") == str(victim)).to_dicts()
    assert len(row) == 1
    assert "worker process died while analysing this run (killed by SIGKILL)" in row[0]["error"]
    assert row[0]["fingerprint"] is None  # so that the next batch tries it again
    assert df.filter(pl.col("run_id") != str(victim)).drop(VOLATILE).equals(reference)
    # The next batch analyses only that run (now with the real analysis): it succeeds.
    res = batch_mod.run_batch([root, victim], out, jobs=1)
    assert (res.analysed, res.skipped, res.failed) == (1, RUNS, 0)


def test_a_run_hanging_past_the_timeout_is_killed_and_the_batch_goes_on(runs, tmp_path):
    root, reference = runs
    hung = root.parent / "hang_here"
    _tiny_run(hung, 0)
    out = tmp_path / "runs.parquet"
    start = time.monotonic()
    res = batch_mod.run_batch([root, hung], out, jobs=2, timeout=8, analyse=dies_or_hangs)
    took = time.monotonic() - start
    assert took < 60, f"the batch took {took:.0f} s: the hung run was not cut off"
    df = _whole(out)
    assert (res.succeeded, res.failed) == (RUNS, 1)
    row = df.filter(pl.col("run_id") == str(hung)).to_dicts()[0]
    assert row["error"].startswith("timed out after 8 s (--timeout)")
    assert row["analysis_s"] >= 8 and row["fingerprint"] is None
    assert df.filter(pl.col("run_id") != str(hung)).drop(VOLATILE).equals(reference)
    import multiprocessing

    assert multiprocessing.active_children() == []  # the hung worker was killed, not left


def test_timeout_with_one_job_runs_in_a_worker_it_can_kill(tmp_path):
    hung = tmp_path / "root" / "hang_here"
    _tiny_run(hung, 0)
    _tiny_run(tmp_path / "root" / "ok", 0)
    out = tmp_path / "runs.parquet"
    res = batch_mod.run_batch([tmp_path / "root"], out, jobs=1, timeout=6,
                              analyse=dies_or_hangs)
    assert (res.succeeded, res.failed) == (1, 1)
    assert "timed out after 6 s" in res.failures[0]


def test_workers_that_cannot_start_stop_the_batch_with_one_line(runs, tmp_path, monkeypatch):
    root, _ = runs

    def broken_start(self):  # a worker that exits at once, as one whose imports fail would
        proc, conn = real_start(self)
        proc.kill()
        proc.join()
        return proc, conn

    real_start = batch_mod.Workers._start
    monkeypatch.setattr(batch_mod.Workers, "_start", broken_start)
    out = tmp_path / "runs.parquet"
    code, _, err = run_cli("batch", root, "-o", out, "--jobs", "2")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "worker processes exit as they start" in err and "--jobs 1" in err
    assert _whole(out).height == 0  # nothing finished; the table is whole and empty


class _DiskFull:
    """``DataFrame.write_parquet`` that works ``good`` times, then writes half a file and
    fails with ENOSPC, as a full disk does."""

    def __init__(self, good: int):
        self.good, self.calls = good, 0
        self.real = pl.DataFrame.write_parquet

    @property
    def write_parquet(self):
        def write_parquet(df, file, *args, **kwargs):
            return self.write(df, file, *args, **kwargs)
        return write_parquet

    def write(self, df, file, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.good:
            return self.real(df, file, *args, **kwargs)
        Path(file).write_bytes(b"PAR1" + b"\0" * 100)  # the start of a table, then no space
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))


def test_disk_full_stops_the_batch_and_keeps_the_last_whole_table(runs, tmp_path, monkeypatch):
    root, reference = runs
    out = tmp_path / "runs.parquet"
    disk = _DiskFull(good=5)
    monkeypatch.setattr(pl.DataFrame, "write_parquet", disk.write_parquet)
    with pytest.raises(InputError) as caught:
        batch_mod.run_batch([root], out, jobs=1, checkpoint_s=0)
    monkeypatch.undo()
    message = str(caught.value)
    assert "No space left on device" in message
    assert "left as last written, with 5 runs" in message and "rerun" in message
    assert disk.calls == 6  # it stopped at the first failed write, not later
    df = _whole(out)
    assert df["run_id"].n_unique() == 5
    assert df.drop(VOLATILE).equals(reference.filter(pl.col("run_id").is_in(df["run_id"].to_list())))
    _no_temporaries(tmp_path)
    _rerun_completes(root, out, reference, analysed=RUNS - 5)


def test_disk_full_before_any_table_is_one_line_and_no_file(runs, tmp_path, monkeypatch):
    root, _ = runs
    monkeypatch.setattr(pl.DataFrame, "write_parquet", _DiskFull(good=0).write_parquet)
    out = tmp_path / "runs.parquet"
    code, _, err = run_cli("batch", root, "-o", out, "--jobs", "1")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"traceana: error: {out}: cannot write: No space left on device; "
                          "it was not written")
    assert list(tmp_path.iterdir()) == []  # no table, no temporary file


def test_stale_temporaries_of_a_killed_batch_are_removed(tmp_path):
    out = tmp_path / "runs.parquet"
    dead = tmp_path / ".runs.parquet.999999999.tmp"  # no such process
    alive = tmp_path / f".runs.parquet.{os.getppid()}.tmp"  # a live process's: kept
    other = tmp_path / ".other.parquet.999999999.tmp"
    for f in (dead, alive, other):
        f.write_bytes(b"PAR1")
    assert batch_mod.remove_stale_temporaries(out) == [dead]
    assert not dead.exists() and alive.exists() and other.exists()


# ----------------------------------------------------------------------------- real processes


def test_ctrl_c_writes_every_finished_run_and_a_rerun_completes(runs, tmp_path):
    root, reference = runs
    out = tmp_path / "runs.parquet"
    code, text, injected = _under_pty(["batch", str(root), "-o", str(out), "--jobs", "2"],
                                      lambda pid, fd: os.write(fd, b"\x03"), after=3)
    assert injected, text
    assert code == 130, text
    assert "Traceback" not in text
    assert re.search(rf"traceana: interrupted: {re.escape(str(out))} holds every run finished "
                     rf"so far \((\d+) of {RUNS} analysed", text), text
    done = int(re.search(r"\((\d+) of", text).group(1))
    df = _whole(out)
    assert 3 <= df["run_id"].n_unique() == done < RUNS
    assert df["error"].null_count() == df.height  # interrupted, not failed
    assert df.drop(VOLATILE).equals(reference.filter(pl.col("run_id").is_in(df["run_id"].to_list())))
    _no_temporaries(tmp_path)
    _rerun_completes(root, out, reference, analysed=RUNS - done)


def test_sigterm_is_handled_as_ctrl_c(runs, tmp_path):
    root, reference = runs
    out = tmp_path / "runs.parquet"
    code, text, injected = _under_pty(["batch", str(root), "-o", str(out), "--jobs", "2"],
                                      lambda pid, fd: os.kill(pid, signal.SIGTERM), after=3)
    assert injected and code == 143, text
    assert "traceana: terminated:" in text and "Traceback" not in text
    df = _whole(out)
    assert 3 <= df["run_id"].n_unique() < RUNS
    _rerun_completes(root, out, reference)


def test_a_worker_killed_from_outside(runs, tmp_path):
    """SIGKILL to one of the real workers (found among the batch's children) mid-batch."""
    root, reference = runs
    out = tmp_path / "runs.parquet"
    killed = []

    def kill_a_worker(pid, fd):
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        workers = [c for c in children
                   if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
        assert workers, "no worker process found"
        os.kill(int(workers[0]), signal.SIGKILL)
        killed.append(workers[0])

    code, text, injected = _under_pty(["batch", str(root), "-o", str(out), "--jobs", "2"],
                                      kill_a_worker, after=3)
    assert injected and killed and code == 0, text
    assert "Traceback" not in text
    df = _whole(out)
    assert df["run_id"].n_unique() == RUNS  # every run has its row
    errors = df.filter(pl.col("error").is_not_null())
    # The run the worker held (if it held one: it may have been between runs) is the only
    # failure, and says why; every other row is the undisturbed batch's.
    assert errors.height <= 1
    assert all("worker process died" in e and "SIGKILL" in e for e in errors["error"])
    assert df.filter(pl.col("error").is_null()).drop(VOLATILE).equals(
        reference.filter(~pl.col("run_id").is_in(errors["run_id"].to_list())))
    _rerun_completes(root, out, reference, analysed=errors.height)


def test_the_batch_itself_sigkilled_while_writing_leaves_a_whole_table(runs, tmp_path):
    """--checkpoint 0 rewrites the table after every run, so the SIGKILL is likely to land
    during a write: the table on disk must still be whole, and the rerun clears the
    temporary file and completes."""
    root, reference = runs
    out = tmp_path / "runs.parquet"
    code, text, injected = _under_pty(
        ["batch", str(root), "-o", str(out), "--jobs", "2", "--checkpoint", "0"],
        lambda pid, fd: os.kill(pid, signal.SIGKILL), after=5)
    assert injected and code == -signal.SIGKILL, text
    df = _whole(out)
    assert 4 <= df["run_id"].n_unique() < RUNS
    assert df.drop(VOLATILE).equals(reference.filter(pl.col("run_id").is_in(df["run_id"].to_list())))
    _rerun_completes(root, out, reference)
    _no_temporaries(tmp_path)


def test_a_real_write_failure_file_size_limit(runs, tmp_path):
    """A real failing write, without root: RLIMIT_FSIZE makes writes past a size fail (EFBIG,
    "File too large"), as a full disk makes them fail with ENOSPC."""
    root, reference = runs
    out = tmp_path / "runs.parquet"
    first = [str(root / f"r{i:03d}") for i in range(4)]
    assert batch_mod.run_batch([Path(p) for p in first], out, jobs=1).succeeded == 4
    before = out.read_bytes()
    limit = len(before) + 300  # room for the four runs' table (+900 bytes for sixteen)

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    import subprocess

    proc = subprocess.run([sys.executable, "-c", ENTRY, "batch", str(root), "-o", str(out),
                           "--jobs", "1"], capture_output=True, text=True, preexec_fn=limited,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith(f"traceana: error: {out}: cannot write: File too large; "
                               "it is left as last written, with 4 runs")
    assert out.read_bytes() == before  # the table as it was, byte for byte
    _no_temporaries(tmp_path)
    _rerun_completes(root, out, reference, analysed=RUNS - 4)


def test_a_native_abort_in_a_worker_costs_that_run_only(runs, tmp_path):
    """A real input that makes polars abort the process (tests/fuzz_found/README.md): in a
    batch, its worker dies by SIGABRT and the run is one failed row; the others are whole.
    (Should polars learn to report it, the row holds that error instead.)"""
    root, reference = runs
    bad = tmp_path / "corrupt_export" / "explorer" / "parquet"
    bad.mkdir(parents=True)
    (bad / "SystemProfileEvents.parquet").write_bytes(
        (Path(__file__).parents[1] / "fuzz_found" / "polars_abort_page_validity.parquet").read_bytes())
    out = tmp_path / "runs.parquet"
    res = batch_mod.run_batch([root, tmp_path / "corrupt_export"], out, jobs=2)
    assert (res.succeeded, res.failed) == (RUNS, 1)
    df = _whole(out)
    (error,) = df.filter(pl.col("error").is_not_null())["error"]
    assert "killed by SIGABRT" in error or "not a readable Parquet table" in error, error
    assert df.filter(pl.col("error").is_null()).drop(VOLATILE).equals(reference)
