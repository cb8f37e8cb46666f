"""The parts `traceana batch` shares with the rest of traceana (issue 14): the run fingerprint
of the analysis cache, the one atomic write, the per-device figures of questions/batch/devices.py,
and the inflation cap, which reaches the worker processes as an argument, not through the
environment."""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

import polars as pl
import pytest
from conftest import X, kineto, write_trace

from trace_analyzer import batch as batch_mod
from trace_analyzer.questions.batch.devices import linked_pct, top_idle_ops
from trace_analyzer.inputs.discover import discover
from trace_analyzer.inputs.fingerprint import fingerprint
from trace_analyzer.loading.profile import load_parts
from trace_analyzer.questions.gaps.analysis import gaps


def _two_gpus() -> dict:
    """GPU 0: a kernel launched by aten::mm, then one no launch reaches (10 µs after it).
    GPU 1: two kernels launched by aten::a and aten::b, 50 µs apart."""
    return kineto(
        [
            X("cpu_op", "aten::mm", 0, 50, **{"External id": 1}),
            X("cuda_runtime", "cudaLaunchKernel", 1, 5, correlation=1, **{"External id": 1}),
            X("kernel", "k", 10, 20, pid=0, tid=7, device=0, stream=7, correlation=1),
            X("kernel", "k2", 40, 20, pid=0, tid=7, device=0, stream=7, correlation=2),
            X("cpu_op", "aten::a", 100, 50, **{"External id": 3}),
            X("cuda_runtime", "cudaLaunchKernel", 101, 5, correlation=3, **{"External id": 3}),
            X("kernel", "ka", 110, 10, pid=1, tid=7, device=1, stream=7, correlation=3),
            X("cpu_op", "aten::b", 160, 50, **{"External id": 4}),
            X("cuda_runtime", "cudaLaunchKernel", 161, 5, correlation=4, **{"External id": 4}),
            X("kernel", "kb", 170, 10, pid=1, tid=7, device=1, stream=7, correlation=4),
        ]
    )


def test_device_figures_come_from_gaps_and_chain(tmp_path):
    write_trace(tmp_path / "run" / "trace.json", _two_gpus())
    (run,) = discover(tmp_path / "run")
    (profile,) = load_parts(run)
    g = gaps(profile)
    assert g.chain is not None
    gpu0, gpu1 = sorted(g.devices["device"])
    assert top_idle_ops(g) == {gpu0: ("(unlinked)", 10_000), gpu1: ("aten::b", 50_000)}
    assert linked_pct(g.chain) == {gpu0: 50.0, gpu1: 100.0}
    # ... and they are the batch table's columns.
    out = tmp_path / "runs.parquet"
    batch_mod.run_batch([tmp_path / "run"], out)
    rows = pl.read_parquet(out).sort("device")
    assert rows.select("device", "top_idle_op", "top_idle_op_ns", "linked_pct").rows() == [
        (gpu0, "(unlinked)", 10_000, 50.0),
        (gpu1, "aten::b", 50_000, 100.0),
    ]


def test_device_figures_of_a_run_without_gaps_or_executions():
    empty = pl.DataFrame(schema={"lane": pl.String, "op": pl.String})
    assert linked_pct(empty) == {}


def test_the_fingerprint_is_the_analysis_caches(tmp_path):
    write_trace(tmp_path / "root" / "a" / "trace.json", _two_gpus())
    (spec,) = batch_mod.find_runs([tmp_path / "root"])
    assert spec.run is not None
    fp = fingerprint(spec.run, relative=True)  # whatever the spelling, as the cache
    assert (spec.fingerprint, spec.modified_ns) == (fp.digest, fp.newest_ns)
    assert spec.fingerprint.startswith("stat:")
    (hashed,) = batch_mod.find_runs([tmp_path / "root"], hash_files=True)
    assert hashed.fingerprint == fingerprint(spec.run, content=True, relative=True).digest


def test_a_broken_archive_keeps_a_stat_fingerprint_of_the_file(tmp_path):
    bad = tmp_path / "root" / "cut.tar.gz"
    bad.parent.mkdir()
    bad.write_bytes(b"\x1f\x8b not really gzip")
    (spec,) = batch_mod.find_runs([tmp_path / "root"])
    st = bad.stat()
    assert spec.run_id == str(bad) and spec.error
    assert (spec.fingerprint, spec.modified_ns) == (
        f"stat:{st.st_size}:{st.st_mtime_ns}",
        st.st_mtime_ns,
    )


def test_a_batch_removes_the_temporaries_of_dead_batches_only(tmp_path):
    write_trace(tmp_path / "root" / "a" / "trace.json", _two_gpus())
    out = tmp_path / "runs.parquet"
    dead = tmp_path / ".runs.parquet.999999999.tmp"  # no such process
    alive = tmp_path / f".runs.parquet.{os.getppid()}.tmp"
    for f in (dead, alive):
        f.write_bytes(b"PAR1")
    batch_mod.run_batch([tmp_path / "root"], out)
    assert not dead.exists() and alive.exists()
    assert pl.read_parquet(out)["run_id"].to_list() == [str(tmp_path / "root" / "a")] * 2


@pytest.fixture
def capped(tmp_path, monkeypatch) -> tuple[Path, int]:
    """A root with a plain trace, a .json.gz trace and a .tar.gz archive, and a cap that only
    the compressed ones exceed. The environment holds no cap."""
    monkeypatch.delenv("TRACEANA_MAX_BYTES", raising=False)
    root = tmp_path / "root"
    write_trace(root / "plain" / "trace.json", _two_gpus())
    write_trace(root / "gz" / "trace.json.gz", _two_gpus())
    member = write_trace(tmp_path / "staging" / "trace.json", _two_gpus())
    with tarfile.open(root / "packed.tar.gz", "w:gz") as tar:
        tar.add(member, arcname="run/trace.json")
    return root, len(json.dumps(_two_gpus())) // 2


def test_max_bytes_reaches_discovery_and_the_worker_processes(capped, tmp_path):
    root, cap = capped
    specs = batch_mod.find_runs([root], max_bytes=cap)
    assert {s.max_bytes for s in specs} == {cap}
    out = tmp_path / "runs.parquet"
    res = batch_mod.run_batch([root], out, jobs=2, max_bytes=cap)  # spawned workers
    assert (res.found, res.succeeded, res.failed) == (3, 1, 2)
    errors = dict(pl.read_parquet(out).select("run_id", "error").unique().rows())
    assert errors[str(root / "plain")] is None  # plain files are not capped
    for run_id in (str(root / "gz"), str(root / "packed.tar.gz")):
        assert f"decompresses to more than {cap:,} bytes" in errors[run_id], errors
    # Without the cap (and none in the environment), the same runs are read.
    again = batch_mod.run_batch([root], tmp_path / "free.parquet", jobs=2)
    assert (again.found, again.succeeded) == (3, 3)
