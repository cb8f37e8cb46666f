"""traceana batch and trend: runs in folders and archives, errors recorded, incremental, Dask."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sys
import tarfile
import zipfile
from pathlib import Path

import polars as pl
import pytest
from conftest import run_cli

from trace_analyzer import batch as batch_mod
from trace_analyzer.inputs.archive import MemberPath, open_archive
from trace_analyzer.inputs.discover import discover

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
KINDS = ["rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled", "rmsnorm_naive_lnc2"]
# Columns that differ between two analyses of the same run.
VOLATILE = ["analysed_at", "analysis_s"]
NUMBERS = ["executions", "busy_ns", "idle_ns", "window_ns", "idle_pct", "gap_count",
           "gap_p50_ns", "gap_p90_ns", "gap_max_ns"]


def _capture_json(folder: Path, i: int, kind: str) -> None:
    (folder / "capture.json").write_text(json.dumps({
        "backend": "neuron", "variant": kind.removeprefix("rmsnorm_"), "workload": "rmsnorm",
        "started_at": f"2026-01-{1 + i % 28:02d}T12:00:00+00:00"}))


def _tree(dest: Path, i: int) -> Path:
    """Copy fixture ``i % 4`` to ``dest`` (without truth.json) with a capture.json."""
    kind = KINDS[i % len(KINDS)]
    shutil.copytree(FIXTURES / kind, dest, ignore=shutil.ignore_patterns("truth.json", ".traceana-cache"))
    _capture_json(dest, i, kind)
    return dest


def _add_tree(add, folder: Path, prefix: str) -> None:
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            add(f, f"{prefix}/{f.relative_to(folder).as_posix()}")


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    """26 runs: 12 folders, 6 in a .tar.gz, 6 in a .zip, a truncated trace, a corrupt archive."""
    top = tmp_path_factory.mktemp("archive")
    staging = tmp_path_factory.mktemp("staging")
    for i in range(12):
        _tree(top / "folders" / f"run{i:02d}", i)
    with tarfile.open(top / "packed.tar.gz", "w:gz") as tar:
        for i in range(6):
            _add_tree(lambda f, name: tar.add(f, arcname=name),
                      _tree(staging / f"t{i:02d}", i), f"tar/run{i:02d}")
        link = tarfile.TarInfo("tar/run00/link.json")  # a link member: skipped, never followed
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    with zipfile.ZipFile(top / "packed.zip", "w") as z:
        for i in range(6):
            _add_tree(lambda f, name: z.write(f, name), _tree(staging / f"z{i:02d}", i + 2),
                      f"zip/run{i:02d}")
    bad = _tree(top / "broken" / "truncated", 0)
    trace = next(bad.rglob("trace.json"))
    trace.write_bytes(trace.read_bytes()[:200])
    data = (top / "packed.tar.gz").read_bytes()
    (top / "broken" / "cut.tar.gz").write_bytes(data[: len(data) // 3])
    return top


def _batch(*args) -> tuple[int, str, str]:
    return run_cli("batch", *args)


def _gaps_devices(path: Path) -> dict[str, list[dict]]:
    code, out, err = run_cli("gaps", path, "--format", "json")
    assert code == 0, err
    return {run["root"]: run["devices"] for run in json.loads(out)["runs"]}


@pytest.fixture(scope="module")
def batched(archive, tmp_path_factory) -> tuple[Path, pl.DataFrame, str]:
    out = tmp_path_factory.mktemp("out") / "runs.parquet"
    code, stdout, err = _batch(archive, "-o", out, "--jobs", "2")
    assert code == 0, err
    return out, pl.read_parquet(out), err


def test_every_run_is_in_the_table_and_errors_are_recorded(archive, batched):
    out, df, err = batched
    assert df["run_id"].n_unique() == 26
    assert df.columns == list(batch_mod.SCHEMA)
    errors = df.filter(pl.col("error").is_not_null())
    assert sorted(errors["run_id"]) == [str(archive / "broken" / "cut.tar.gz"),
                                        str(archive / "broken" / "truncated")]
    assert "not a readable archive" in errors.filter(pl.col("run_id").str.ends_with("gz"))["error"][0]
    assert "not valid JSON" in errors.filter(pl.col("run_id").str.ends_with("truncated"))["error"][0]
    assert "26 runs: 24 succeeded, 2 failed" in err
    ids = set(df["run_id"])
    assert f"{archive / 'packed.tar.gz'}!/tar/run05" in ids
    assert f"{archive / 'packed.zip'}!/zip/run05" in ids
    tar_row = df.filter(pl.col("run_id") == f"{archive / 'packed.tar.gz'}!/tar/run05").row(0, named=True)
    assert tar_row["path"] == str(archive / "packed.tar.gz") and tar_row["member"] == "tar/run05"
    assert tar_row["variant"] == "fused" and tar_row["backend"] == "neuron"
    assert tar_row["capture_time"].isoformat().startswith("2026-01-06T12:00:00")
    ok = df.filter(pl.col("error").is_null())
    assert ok["traceana_version"].unique().to_list() == ["0.1.0"]
    assert ok["linked_pct"].min() == 100.0
    assert set(ok["format"]) == {"explorer-json,explorer-parquet,kineto-json"}


def test_numbers_equal_traceana_gaps(archive, batched):
    _, df, _ = batched
    expected: dict[str, list[dict]] = {}
    for path in (archive / "folders", archive / "packed.tar.gz", archive / "packed.zip"):
        expected.update(_gaps_devices(path))
    assert len(expected) == 24
    for run_id, devices in expected.items():
        rows = df.filter(pl.col("run_id") == run_id).sort("device").to_dicts()
        assert [r["device"] for r in rows] == sorted(d["device"] for d in devices), run_id
        for row, dev in zip(rows, sorted(devices, key=lambda d: d["device"])):
            assert {k: row[k] for k in NUMBERS} == {k: dev[k] for k in NUMBERS}, run_id


def test_top_idle_op_is_the_op_with_most_idle_before_it(archive, batched):
    _, df, _ = batched
    run_id = str(archive / "folders" / "run00")  # naive: a single device
    code, out, _ = run_cli("gaps", run_id, "--format", "json")
    ops = json.loads(out)["runs"][0]["ops"]
    row = df.filter(pl.col("run_id") == run_id).row(0, named=True)
    assert (row["top_idle_op"], row["top_idle_op_ns"]) == (ops[0]["op"], ops[0]["idle_before_ns"])


def test_second_batch_skips_everything_and_a_new_run_adds_a_row(archive, batched, tmp_path):
    out = tmp_path / "runs.parquet"
    shutil.copy(batched[0], out)
    code, _, err = _batch(archive, "-o", out, "--jobs", "2")
    assert code == 0, err
    assert "0 analysed, 26 unchanged and skipped" in err
    assert pl.read_parquet(out).drop(VOLATILE).equals(batched[1].drop(VOLATILE))
    extra = tmp_path / "more" / "new_run"
    _tree(extra, 3)
    # The new run sits under a second root; the old roots are still named.
    code, _, err = _batch(archive, tmp_path / "more", "-o", out, "--jobs", "1")
    assert code == 0, err
    assert "27 runs: 25 succeeded, 2 failed (1 analysed, 26 unchanged" in err
    df = pl.read_parquet(out)
    assert df.height == batched[1].height + 1
    assert df.filter(pl.col("run_id") == str(extra)).height == 1


def test_changed_run_is_analysed_again(tmp_path):
    run = _tree(tmp_path / "root" / "a", 0)
    _tree(tmp_path / "root" / "b", 1)
    out = tmp_path / "runs.parquet"
    assert _batch(tmp_path / "root", "-o", out, "--jobs", "1")[0] == 0
    first = pl.read_parquet(out)
    trace = next(run.rglob("trace.json"))
    os.utime(trace, ns=(trace.stat().st_atime_ns, trace.stat().st_mtime_ns + 10**9))
    code, _, err = _batch(tmp_path / "root", "-o", out, "--jobs", "1")
    assert "1 analysed, 1 unchanged" in err
    second = pl.read_parquet(out)
    assert second.height == first.height
    changed = second.filter(pl.col("run_id") == str(run))["fingerprint"][0]
    assert changed != first.filter(pl.col("run_id") == str(run))["fingerprint"][0]
    # --hash: content, not mtime; touching alone is not a change then.
    assert _batch(tmp_path / "root", "-o", out, "--hash", "--jobs", "1")[0] == 0
    os.utime(trace, ns=(trace.stat().st_atime_ns, trace.stat().st_mtime_ns + 10**9))
    code, _, err = _batch(tmp_path / "root", "-o", out, "--hash", "--jobs", "1")
    assert "0 analysed, 2 unchanged" in err
    assert pl.read_parquet(out)["fingerprint"].str.starts_with("sha256:").all()


def test_strict_exits_1_on_a_failed_run(tmp_path):
    _tree(tmp_path / "root" / "good", 0)
    bad = tmp_path / "root" / "bad"
    bad.mkdir(parents=True)
    (bad / "trace.json").write_text('{"traceEvents": [')
    out = tmp_path / "runs.parquet"
    code, _, err = _batch(tmp_path / "root", "-o", out, "--jobs", "1")
    assert code == 0 and "1 succeeded, 1 failed" in err
    code, _, err = _batch(tmp_path / "root", "-o", out, "--jobs", "1", "--strict")
    assert code == 1 and "1 failed" in err


def test_interrupted_batch_leaves_a_whole_table_and_resumes(tmp_path):
    for i in range(4):
        _tree(tmp_path / "root" / f"r{i}", i)
    out = tmp_path / "runs.parquet"

    def stop_after_two(done, failed, total):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        batch_mod.run_batch([tmp_path / "root"], out, jobs=1, progress=stop_after_two,
                            checkpoint_s=0)
    assert pl.read_parquet(out)["run_id"].n_unique() == 2
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    res = batch_mod.run_batch([tmp_path / "root"], out, jobs=1)
    assert (res.analysed, res.skipped, res.succeeded) == (2, 2, 4)


def _swallowing(at: int):
    """An ``analyse`` that, in its ``at``-th run, receives a SIGTERM whose raise native code
    swallowed: the handler ran (``STOPS``), the run went on and failed oddly."""
    from trace_analyzer.batch.rows import analyse_run
    from trace_analyzer.batch.stops import STOPS

    calls = []

    def analyse(spec):
        calls.append(spec)
        rows = analyse_run(spec)
        if len(calls) == at:
            STOPS.append(signal.SIGTERM)
            rows = [{**rows[0], "error": "TypeError: '<unprintable str object>' is not a Polars data type"}]
        return rows

    return analyse, calls


def test_a_stop_swallowed_by_a_run_leaves_that_run_to_the_next_batch(tmp_path):
    """SIGTERM or Ctrl-C raised while native code ran a Python callback can be swallowed
    there: the run fails oddly and the batch would go on. The stop is raised again after that
    run, which is not kept as a failed row (a failed, unchanged run is skipped by the next
    batch), so the next batch analyses it."""
    from trace_analyzer.batch.stops import STOPS, BatchStopped

    for i in range(4):
        _tree(tmp_path / "root" / f"r{i}", i)
    out = tmp_path / "runs.parquet"
    analyse, calls = _swallowing(at=2)
    try:
        with pytest.raises(BatchStopped):
            batch_mod.run_batch([tmp_path / "root"], out, jobs=1, analyse=analyse, checkpoint_s=0)
    finally:
        STOPS.clear()
    assert len(calls) == 2
    assert pl.read_parquet(out)["run_id"].n_unique() == 1  # the second run is not kept
    res = batch_mod.run_batch([tmp_path / "root"], out, jobs=1)
    assert (res.analysed, res.skipped, res.succeeded) == (3, 1, 4)


def test_a_write_a_stop_broke_is_the_stop_and_the_table_is_written_after_it(tmp_path, monkeypatch):
    """A stop whose exception polars wrapped in a write error of its own is the stop, not "cannot
    write" (exit 2): the table is written again as the batch unwinds, with every finished run."""
    from trace_analyzer.batch import table as table_mod
    from trace_analyzer.batch.stops import STOPS, BatchStopped

    for i in range(4):
        _tree(tmp_path / "root" / f"r{i}", i)
    out = tmp_path / "runs.parquet"
    real, writes = table_mod.write_atomic, []

    def broken_once(path, write):
        writes.append(path)
        if len(writes) == 2:
            STOPS.append(signal.SIGTERM)
            raise pl.exceptions.ComputeError("the stop, wrapped")
        real(path, write)

    monkeypatch.setattr(table_mod, "write_atomic", broken_once)
    try:
        with pytest.raises(BatchStopped):
            batch_mod.run_batch([tmp_path / "root"], out, jobs=1, checkpoint_s=0)
    finally:
        STOPS.clear()
    assert len(writes) == 3 and pl.read_parquet(out)["run_id"].n_unique() == 2


def test_bad_usage_is_one_line(tmp_path):
    _tree(tmp_path / "root" / "a", 0)
    code, out, err = _batch(tmp_path / "root", "-o", tmp_path / "runs.csv")
    assert code == 2 and "Parquet" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "junk.parquet").write_text("not parquet")
    code, out, err = _batch(tmp_path / "root", "-o", tmp_path / "junk.parquet")
    assert code == 2 and "not a readable batch table" in err
    code, out, err = _batch(tmp_path / "missing", "-o", tmp_path / "r.parquet")
    assert code == 2 and "no such file or folder" in err


def test_scheduler_without_dask_names_the_extra(tmp_path, monkeypatch):
    _tree(tmp_path / "root" / "a", 0)
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, out, err = _batch(tmp_path / "root", "-o", tmp_path / "r.parquet",
                            "--scheduler", "tcp://127.0.0.1:1")
    assert code == 2 and "traceana[dask]" in err and len(err.strip().splitlines()) == 1


def test_dask_scheduler_gives_the_same_table(archive, batched, tmp_path):
    distributed = pytest.importorskip(
        "distributed", reason="Dask distributed is not installed: pip install 'traceana[dask]'")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        out = tmp_path / "runs.parquet"
        code, _, err = _batch(archive, "-o", out, "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert "26 runs: 24 succeeded, 2 failed" in err
    assert pl.read_parquet(out).drop(VOLATILE).equals(batched[1].drop(VOLATILE))


# ----------------------------------------------------------------------------- archives


def test_archive_members_walk_like_a_folder(archive):
    root = open_archive(archive / "packed.tar.gz").root
    run = root / "tar" / "run00"
    assert str(run) == f"{archive / 'packed.tar.gz'}!/tar/run00"
    assert run.is_dir() and not run.is_file() and run.exists()
    assert (run / "capture.json").is_file()
    assert not (run / "link.json").exists()  # the symlink member is skipped
    names = [p.name for p in run.iterdir()]
    assert names == sorted(names) and "capture.json" in names and "explorer" in names
    parquet = run / "explorer" / "parquet"
    assert [p.name for p in parquet.glob("Metadata*.parquet")] == ["Metadata.parquet"]
    assert run.parent.parent == root and root.parents == []
    assert [r.root for r in discover(archive / "packed.zip")][:1] == \
        [open_archive(archive / "packed.zip").root / "zip" / "run00"]
    with pytest.raises(FileNotFoundError):
        (run / "nothing.json").read_bytes()


def test_member_paths_pickle_and_reopen(archive):
    import pickle

    run = discover(archive / "packed.zip")[0]
    again = pickle.loads(pickle.dumps(run))
    assert again.root == run.root and isinstance(again.root, MemberPath)
    assert again.sources[0].path.read_bytes() == run.sources[0].path.read_bytes()


def test_gaps_reads_an_archive_directly(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        _add_tree(lambda f, name: z.write(f, name), FIXTURES / "rmsnorm_naive", "naive")
    (tmp_path / "one.zip").write_bytes(buf.getvalue())
    code, out, err = run_cli("gaps", tmp_path / "one.zip", "--format", "json")
    assert code == 0, err
    ref = json.loads(run_cli("gaps", FIXTURES / "rmsnorm_naive", "--format", "json")[1])
    assert json.loads(out)["runs"][0]["summary"] == ref["runs"][0]["summary"]


def test_unsafe_member_names_are_skipped(tmp_path):
    with tarfile.open(tmp_path / "evil.tar", "w") as tar:
        for name in ("../escape/trace.json", "ok/trace.json"):
            data = json.dumps({"traceEvents": []}).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    archive = open_archive(tmp_path / "evil.tar")
    assert list(archive.files) == ["ok/trace.json"]


# ----------------------------------------------------------------------------- trend


def test_trend_table_by_variant(batched):
    out = batched[0]
    code, text, err = run_cli("trend", out, "--format", "json")
    assert code == 0, err
    result = json.loads(text)["runs"][0]
    assert result["failed_runs"] == 2
    groups = {g["group"]: g["runs"] for g in result["groups"]}
    assert groups == {"naive": 6, "fused": 6, "compiled": 6, "naive_lnc2": 6}
    naive = [r for r in result["rows"] if r["group"] == "naive"]
    assert [r["time"] for r in naive] == sorted(r["time"] for r in naive)
    assert {r["idle_pct"] for r in naive} == {11.92}
    code, text, _ = run_cli("trend", out)
    assert code == 0 and "2 failed runs left out" in text and "idle %" in text
    code, text, _ = run_cli("trend", out, "--format", "csv")
    assert text.splitlines()[0].startswith("group,time,run_id,idle_pct,device_time_ms")


def test_trend_by_glob_and_plot(batched, tmp_path):
    out = batched[0]
    globs = ("--glob", "*.tar.gz!*", "--glob", "*.zip!*", "--format", "json")
    code, text, err = run_cli("trend", out, "--by", "glob", *globs)
    assert code == 0, err
    groups = {g["group"]: g["runs"] for g in json.loads(text)["runs"][0]["groups"]}
    assert groups == {"*.tar.gz!*": 6, "*.zip!*": 6, "(other)": 12}
    assert json.loads(text)["by"] == "glob"
    # path-glob, its old word (issue 39): the same output, and a note on stderr naming glob
    code, old, err = run_cli("trend", out, "--by", "path-glob", *globs)
    assert code == 0 and old == text
    assert err.splitlines() == [
        'traceana: note: --by path-glob is now --by glob, the same grouping (docs/output.md, '
        '"Conventions")']
    code, _, err = run_cli("trend", out, "--by", "glob")
    assert code == 2 and "--glob" in err
    pytest.importorskip("matplotlib")
    code, _, err = run_cli("trend", out, "-o", tmp_path / "trend.png")
    assert code == 0, err
    assert (tmp_path / "trend.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
