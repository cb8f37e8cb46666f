"""A folder of unrelated traces is several runs, in every command and in ``batch``, and
``--run NAME`` (or the file's path) picks one (issue 38; loading/parts.py, docs/formats.md
"Layouts and runs").

Three real traces from three projects, years apart, in one folder (links to the corpus): the
early Kineto array form of 2020, a TensorBoard-plugin trace of 2021 and a ROCm 6.2 trace of
2024. Each part must be what the trace gives named alone, and its device time the union of its
kernels per device, computed here from the raw file."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import polars as pl
import pytest
from conftest import X, kineto, run_process, union_of, write_trace

import trace_analyzer as ta
from trace_analyzer.errors import UsageError

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
TRACES = {  # the name in the folder -> the corpus file
    "a_2020.json.gz": "real3/kineto_array/resnet50_num_workers_4/worker0.pt.trace.json.gz",
    "b_2021.json.gz": "real/kineto/tb_plugin_resnet50/worker0.1623143089861.pt.trace.json.gz",
    "c_2024.json.gz": "hta/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
}


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    for name, rel in TRACES.items():
        if not (SHARED / rel).is_file():
            pytest.skip(f"../shared/corpus is absent: no {SHARED / rel}")
        os.symlink(SHARED / rel, folder / name)
    return folder


def _kernel_time(path: Path) -> int:
    """The device time of a raw trace: per device, the union of its kernels' intervals (ns),
    added over its devices."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    per_device: dict[int, list[tuple[int, int]]] = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in ("Kernel", "kernel"):
            start = round(e["ts"] * 1000)
            per_device.setdefault(e["args"]["device"], []).append((start, start + round(e["dur"] * 1000)))
    return sum(b - a for iv in per_device.values() for a, b in union_of(iv))


def _json(*args: object) -> tuple[int, dict, str]:
    code, out, err, *_ = run_process(*args, "--no-cache", "--format", "json", timeout=120)
    return code, (json.loads(out) if code == 0 else {}), err


def test_each_trace_is_a_run_of_its_own_the_same_as_named_alone(tmp_path):
    folder = _folder(tmp_path)
    code, doc, err = _json("gaps", folder)
    assert code == 0, err
    runs = {r["root"]: r for r in doc["runs"]}
    assert list(runs) == [f"{folder}#{name}" for name in TRACES]  # in time order
    for i, name in enumerate(TRACES):
        run = runs[f"{folder}#{name}"]
        said = run["warnings"][0]
        assert "so they are 3 runs" in said and "--run NAME" in said, run["warnings"]
        # the device time is the raw kernels' union, and the whole answer the file's alone
        busy = sum(d["busy_ns"] for d in run["devices"])
        assert busy == pytest.approx(_kernel_time(folder / name), abs=len(run["devices"]))
        code, alone, err = _json("gaps", folder / name)
        assert code == 0, err
        (one,) = alone["runs"]
        assert (run["summary"], run["window"]) == (one["summary"], one["window"])
        # --run NAME picks it (its name, or the part shown: one spelling per trace)
        picked = name if i % 2 else f"{folder}#{name}"
        code, got, err = _json("gaps", folder, "--run", picked)
        assert code == 0, err
        assert [r["root"] for r in got["runs"]] == [run["root"]]
        assert got["runs"][0]["summary"] == run["summary"]


def test_a_command_of_one_run_names_the_parts_and_takes_one(tmp_path):
    folder = _folder(tmp_path)
    code, out, err, *_ = run_process("report", folder, "--no-cache", "-o", tmp_path / "r.html")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "3 runs found" in lines[0] and f"{folder}#a_2020.json.gz" in lines[0]
    assert "--run NAME" in lines[0]
    code, out, err, *_ = run_process(
        "report", folder, "--no-cache", "-o", tmp_path / "r.html", "--run", "c_2024.json.gz"
    )
    assert code == 0, err
    assert f"{folder}#c_2024.json.gz" in (tmp_path / "r.html").read_text()
    code, out, err, *_ = run_process("gaps", folder, "--no-cache", "--run", "nothing.json")
    assert code == 2 and "--run nothing.json" in err and len(err.strip().splitlines()) == 1


def test_the_library_loads_the_parts(tmp_path):
    folder = _folder(tmp_path)
    runs = ta.load_runs(folder)
    assert [p.name for p in runs] == [f"{folder}#{n}" for n in TRACES]
    assert [[s.path.name for s in p.run.sources] for p in runs] == [[n] for n in TRACES]
    with pytest.raises(UsageError, match="3 runs found"):
        ta.load(folder)
    p = ta.load(folder, run="b_2021.json.gz")
    assert p.name == f"{folder}#b_2021.json.gz" and p.events.height == runs[1].events.height


def test_the_cache_keeps_each_part_and_serves_it(tmp_path):
    folder = _folder(tmp_path)
    fresh = ta.load_runs(folder, cache=True)
    again = ta.load_runs(folder, cache=True)
    assert [p.cached for p in fresh] == [False] * 3 and [p.cached for p in again] == [True] * 3
    for a, b in zip(fresh, again, strict=True):
        assert a.name == b.name and a.warnings == b.warnings
        assert a.events.drop("args_json", strict=False).equals(b.events.drop("args_json", strict=False))
    # under another spelling too, and one part alone
    other = ta.load(Path(os.path.relpath(folder)), cache=True, run="c_2024.json.gz")
    assert other.events.height == fresh[2].events.height


def test_batch_keeps_a_row_set_per_part_and_skips_them_when_unchanged(tmp_path):
    folder = _folder(tmp_path)
    table = tmp_path / "runs.parquet"
    code, out, err, *_ = run_process("batch", folder, "-o", table, timeout=180)
    assert code == 0, err
    df = pl.read_parquet(table)
    real = os.path.realpath(folder)
    assert sorted(df["run_id"].unique()) == [f"{real}#{n}" for n in TRACES]
    assert sorted(df["part"].unique()) == sorted(TRACES)
    for name in TRACES:
        rows = df.filter(pl.col("part") == name)
        assert rows["busy_ns"].sum() == pytest.approx(_kernel_time(folder / name), abs=rows.height)
    code, out, err, *_ = run_process("batch", folder, "-o", table, timeout=180)
    assert code == 0 and "0 analysed" in out + err, out + err
    assert pl.read_parquet(table).equals(df)


def test_files_sharing_a_pid_are_analysed_by_every_command(tmp_path):
    """Two traces of one pid at one time keep their lanes apart by file; the critical path then
    read a lane column of text where it wanted the dictionary's codes (an internal error)."""
    for name in ("b.json", "c.json"):
        events = [X("kernel", "k0", 0, 40, pid=0, tid=7, device=0, stream=7),
                  X("kernel", "k1", 140, 20, pid=0, tid=7, device=0, stream=7)]  # fmt: skip
        write_trace(tmp_path / name, kineto(events, baseTimeNanoseconds=1_700_000_000 * 10**9))
    for command in ("critical", "gaps", "chain", "ops"):
        code, out, err, *_ = run_process(command, tmp_path, "--no-cache")
        assert code == 0, (command, err)


def test_run_picks_a_run_folder_before_reading_the_others(tmp_path):
    """In a folder of run folders, --run names one by its folder; the others are not read (a
    broken one beside it does not stop the command)."""
    events = [X("kernel", "k0", 0, 40, pid=0, tid=7, device=0, stream=7)]
    write_trace(tmp_path / "x" / "trace.json", kineto(events, baseTimeNanoseconds=1_700_000_000 * 10**9))
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "trace.json").write_text("{not json")
    code, out, err, *_ = run_process("report", tmp_path, "--no-cache", "-o", tmp_path / "r.html")
    assert code == 2 and "2 runs found" in err and "--run NAME" in err
    code, out, err, *_ = run_process("gaps", tmp_path, "--no-cache", "--run", "x", "--format", "json")
    assert code == 0, err
    assert [r["root"] for r in json.loads(out)["runs"]] == [str(tmp_path / "x")]
