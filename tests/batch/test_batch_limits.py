"""`traceana batch --worker-memory` and `--timeout`, locally and on a Dask cluster.

What a user relies on: a run past the memory cap is one failed row that says so ("out of
memory (over --worker-memory ...)"), with no fingerprint so that the next batch tries it
again; the runs well under the cap are analysed as without it; the batch goes on and exits
as for any failed run (0, or 1 with --strict). On Dask, --timeout and --worker-memory hold
as they do locally, and the Dask worker itself lives on.

The run past the cap is a real input: a gzipped Kineto trace of ten kernels with 48 MiB
names each, 1.7 MB on disk and 480 MiB inflated, so that even its text does not fit under
the 400 MiB cap, whatever the reader does with it. The small runs need about 170 MB of data
memory with polars' threads at 4 (POLARS_MAX_THREADS, set for the batch's processes: each
polars thread reserves some data memory of its own, so without it the headroom of a small run
under the cap would depend on the cores of the machine running the test).
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from batch_faults import dies_or_hangs, greedy
from conftest import X, kineto, run_cli, write_trace

from trace_analyzer import batch as batch_mod

VOLATILE = ["analysed_at", "analysis_s"]
ENTRY = "from trace_analyzer.cli import main; main()"
CAP = "400MiB"
CAP_TEXT = "400 MiB"  # the cap as the error writes it back
ENV = {**os.environ, "POLARS_MAX_THREADS": "4"}
SMALL = 3
HUGE_NAMES, HUGE_NAME_MIB = 10, 48


def _small_run(folder: Path, i: int) -> None:
    """A one-GPU run: an op, its launch, two kernels; the second kernel starts i µs later."""
    write_trace(folder / "trace.json", kineto([
        X("cpu_op", "aten::mm", 0, 50, **{"External id": 1}),
        X("cuda_runtime", "cudaLaunchKernel", 1, 5, correlation=1, **{"External id": 1}),
        X("kernel", "k", 10, 20, pid=0, tid=7, device=0, stream=7, correlation=1),
        X("kernel", "k2", 40 + i, 20, pid=0, tid=7, device=0, stream=7, correlation=2)]))


def _huge_run(folder: Path) -> None:
    """A run whose trace inflates to HUGE_NAMES x HUGE_NAME_MIB MiB: kernels with long
    names, streamed into gzip (constant bytes compress about 270:1)."""
    folder.mkdir(parents=True)
    name = b"k" * (HUGE_NAME_MIB << 20)
    with gzip.open(folder / "trace.json.gz", "wb", compresslevel=1) as f:
        f.write(b'{"traceEvents": [')
        for i in range(HUGE_NAMES):
            f.write(b'%s{"ph": "X", "cat": "kernel", "name": "' % (b"," if i else b""))
            f.write(name)
            f.write(b'", "pid": 0, "tid": 7, "ts": %d, "dur": 5, '
                    b'"args": {"device": 0, "stream": 7}}' % (10 * i))
        f.write(b"]}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path, pl.DataFrame]:
    """SMALL small runs under one root, a huge run beside them, and the small runs' table as
    an undisturbed in-process batch (no cap) writes it."""
    base = tmp_path_factory.mktemp("limits")
    for i in range(SMALL):
        _small_run(base / "small" / f"r{i}", i)
    _huge_run(base / "huge")
    out = base / "reference.parquet"
    assert batch_mod.run_batch([base / "small"], out, jobs=1).succeeded == SMALL
    return base / "small", base / "huge", pl.read_parquet(out).drop(VOLATILE)


def _batch(*args: object, timeout: float = 90) -> subprocess.CompletedProcess:
    """Run `traceana batch ARGS` as a real process (its workers are real processes too)."""
    return subprocess.run([sys.executable, "-c", ENTRY, "batch", *map(str, args)],
                          capture_output=True, text=True, env=ENV, timeout=timeout)


def _check_capped(out: Path, small: Path, huge: Path, reference: pl.DataFrame) -> None:
    """The table of a capped batch: the huge run one failed row saying why, with no
    fingerprint; the small runs as without the cap."""
    df = pl.read_parquet(out)
    row = df.filter(pl.col("run_id") == str(huge)).to_dicts()
    assert len(row) == 1, row
    assert row[0]["error"].startswith(f"out of memory (over --worker-memory {CAP_TEXT}"), row
    assert row[0]["fingerprint"] is None  # so that the next batch tries it again
    assert df.filter(pl.col("run_id") != str(huge)).drop(VOLATILE).equals(reference)


def test_a_run_over_worker_memory_is_one_failed_row_and_the_batch_goes_on(runs, tmp_path):
    small, huge, reference = runs
    out = tmp_path / "runs.parquet"
    proc = _batch(small, huge, "-o", out, "--jobs", "2", "--worker-memory", CAP, "--strict")
    assert proc.returncode == 1, proc.stderr  # --strict: a run failed
    assert "Traceback" not in proc.stderr
    assert f"traceana: failed: {huge}: out of memory (over --worker-memory {CAP_TEXT}" \
        in proc.stderr
    assert f"{SMALL + 1} runs: {SMALL} succeeded, 1 failed" in proc.stderr
    _check_capped(out, small, huge, reference)
    # The next batch tries only that run again; without --strict a failed run exits 0.
    proc = _batch(small, huge, "-o", out, "--jobs", "2", "--worker-memory", CAP)
    assert proc.returncode == 0, proc.stderr
    assert f"1 failed (1 analysed, {SMALL} unchanged and skipped)" in proc.stderr
    _check_capped(out, small, huge, reference)


def test_worker_memory_with_one_job_still_caps_a_worker_process(runs, tmp_path):
    """--jobs 1 analyses in-process, which no cap can hold (the huge run would be analysed
    whole); with --worker-memory it uses one worker process, as with --timeout."""
    small, huge, reference = runs
    out = tmp_path / "runs.parquet"
    proc = _batch(small, huge, "-o", out, "--jobs", "1", "--worker-memory", CAP)
    assert proc.returncode == 0, proc.stderr
    _check_capped(out, small, huge, reference)


def test_a_memory_error_in_python_is_the_same_failed_row(runs, tmp_path):
    """Past the cap in Python (a MemoryError, not polars' abort): the same row, and the
    worker is replaced by a fresh one for the runs after it."""
    small, _, reference = runs
    hog = tmp_path / "greedy"
    _small_run(hog, 0)
    out = tmp_path / "runs.parquet"
    res = batch_mod.run_batch([hog, small], out, jobs=1, analyse=greedy,
                              worker_memory=400 << 20)
    assert (res.succeeded, res.failed) == (SMALL, 1)
    row = pl.read_parquet(out).filter(pl.col("run_id") == str(hog)).to_dicts()[0]
    assert row["error"] == (f"out of memory (over --worker-memory {CAP_TEXT}); "
                            "the next batch tries it again")
    assert row["fingerprint"] is None
    assert pl.read_parquet(out).filter(pl.col("run_id") != str(hog)).drop(VOLATILE).equals(
        reference)


def test_a_bad_worker_memory_is_one_line(runs, tmp_path):
    small, _, _ = runs
    code, _, err = run_cli("batch", small, "-o", tmp_path / "r.parquet",
                           "--worker-memory", "lots")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("traceana: error: --worker-memory: not a size: 'lots'")
    assert not (tmp_path / "r.parquet").exists()


def test_worker_memory_is_refused_where_no_rlimit_data(runs, tmp_path, monkeypatch):
    """A platform without RLIMIT_DATA cannot cap a worker: refused, not silently ignored."""
    import resource

    small, _, _ = runs
    monkeypatch.delattr(resource, "RLIMIT_DATA")
    code, _, err = run_cli("batch", small, "-o", tmp_path / "r.parquet",
                           "--worker-memory", "2GiB")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--worker-memory needs Linux's RLIMIT_DATA" in err
    assert list(tmp_path.iterdir()) == []  # no table, no lock


def test_worker_memory_is_refused_off_linux(runs, tmp_path, monkeypatch):
    """macOS and the BSDs have RLIMIT_DATA, but it may not count mmap (where jemalloc puts
    polars' memory), so the cap would not hold: refused, where it was taken."""
    import sys

    small, _, _ = runs
    monkeypatch.setattr(sys, "platform", "darwin")
    code, _, err = run_cli("batch", small, "-o", tmp_path / "r.parquet",
                           "--worker-memory", "2GiB")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "this platform (darwin) cannot cap a worker" in err
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- on Dask


@pytest.fixture(scope="module")
def cluster():
    """One Dask worker process (daemonic, as `dask worker`'s are) running two tasks at once,
    with polars' threads at 4 as for the local batches."""
    distributed = pytest.importorskip(
        "distributed", reason="Dask distributed is not installed: pip install 'traceana[dask]'")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  env={"POLARS_MAX_THREADS": "4"}) as c:
        yield c


def _dask_workers(cluster) -> set[str]:
    import distributed

    with distributed.Client(cluster.scheduler_address, timeout="20s") as client:
        return set(client.scheduler_info()["workers"])


def test_timeout_on_dask_kills_the_run_as_locally(runs, cluster, tmp_path):
    small, _, reference = runs
    hung = tmp_path / "hang_here"
    _small_run(hung, 0)
    out = tmp_path / "runs.parquet"
    before = _dask_workers(cluster)
    start = time.monotonic()
    res = batch_mod.run_batch([small, hung], out, scheduler=cluster.scheduler_address,
                              timeout=3, analyse=dies_or_hangs)
    took = time.monotonic() - start
    assert took < 30, f"the batch took {took:.0f} s: the hung run was not cut off"
    assert (res.succeeded, res.failed) == (SMALL, 1)
    df = pl.read_parquet(out)
    row = df.filter(pl.col("run_id") == str(hung)).to_dicts()[0]
    assert row["error"] == "timed out after 3 s (--timeout); the next batch tries it again"
    assert row["analysis_s"] >= 3 and row["fingerprint"] is None
    assert df.filter(pl.col("run_id") != str(hung)).drop(VOLATILE).equals(reference)
    assert _dask_workers(cluster) == before  # the Dask worker itself was not lost


def test_worker_memory_and_timeout_on_dask_through_the_cli(runs, cluster, tmp_path):
    small, huge, reference = runs
    out = tmp_path / "runs.parquet"
    proc = _batch(small, huge, "-o", out, "--scheduler", cluster.scheduler_address,
                  "--timeout", "60", "--worker-memory", CAP)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{SMALL + 1} runs: {SMALL} succeeded, 1 failed" in proc.stderr
    _check_capped(out, small, huge, reference)
