"""`traceana kernels` (questions/kernels/analysis.py) on real traces and the Neuron fixtures, against
figures this test computes itself: per kernel name, the count and summed duration of the raw
JSON's device records, the median, 95th percentile and maximum of the top kernel's durations
(Python's statistics), the NEFFs of truth.json. Nothing here is taken from traceana's output.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from conftest import run_cli

import trace_analyzer as ta
from trace_analyzer.questions.kernels.analysis import kernels

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "corpus"
DLRM = SHARED / "real/param/dlrm_kineto"
RCCL = SHARED / "real/tracelens/mi300_resnet"
FIXTURES = REPO / "fixtures"
COMM = re.compile(r"nccl|rccl", re.I)  # docs/kernels.md: the communication kernels
MEMORY = ("gpu_memcpy", "gpu_memset")
LAUNCH = ("cuda_runtime", "cuda_driver")
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    return path


def ns(us: float) -> int:
    return round(us * 1000)


def raw(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def device(events: list[dict], step: int | None = None) -> dict[str, list[int]]:
    """Per name, the durations (ns) of the device records (kernels, copies, sets) that last
    at all; ``step``: only those launched (their runtime call, by correlation) in it."""
    launch = {e["args"]["correlation"]: ns(e["ts"]) for e in events
              if e.get("cat") in LAUNCH and "correlation" in e.get("args", {})}
    span = next(((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
                 if e.get("cat") == "user_annotation" and e["name"] == f"ProfilerStep#{step}"),
                None)  # fmt: skip
    out: dict[str, list[int]] = defaultdict(list)
    for e in events:
        if e.get("cat") not in ("kernel", *MEMORY) or ns(e["dur"]) <= 0:
            continue
        if span is not None:
            t = launch.get(e.get("args", {}).get("correlation"), ns(e["ts"]))
            if not span[0] <= t < span[1]:
                continue
        out[e["name"]].append(ns(e["dur"]))
    return out


def check_rows(table, expected: dict[str, list[int]]) -> None:
    """Every name's count exactly, its total within 1 ns an event (µs floats rounded)."""
    got = {r["name"]: r for r in table.to_dicts()}
    assert set(got) == set(expected)
    for name, durs in expected.items():
        assert got[name]["count"] == len(durs), name
        assert abs(got[name]["total_ns"] - sum(durs)) <= len(durs), name
    assert abs(table["share_pct"].sum() - 100) < 0.01 * table.height


def check_top(table, expected: dict[str, list[int]]) -> None:
    """The top kernel's name, median, 95th percentile (linear, between the nearest ranks:
    statistics' "inclusive" method) and maximum, from the raw durations."""
    top = max(expected, key=lambda n: sum(expected[n]))
    row = table.row(0, named=True)
    durs = sorted(expected[top])
    assert row["name"] == top
    assert abs(row["p50_ns"] - statistics.median(durs)) <= 1
    p95 = statistics.quantiles(durs, n=20, method="inclusive")[18] if len(durs) > 1 else durs[0]
    assert abs(row["p95_ns"] - p95) <= 1
    assert abs(row["max_ns"] - durs[-1]) <= 1 and abs(row["min_ns"] - durs[0]) <= 1


def test_dlrm_rank0_nccl() -> None:
    path = need(next(iter(sorted(need(DLRM).glob("worker0_*")))))
    expected = device(raw(path))
    result = kernels(ta.load(path))
    rows = result.kernels
    assert rows["rank"].unique().to_list() == [0]
    check_rows(rows, expected)
    check_top(rows, expected)
    kinds = {r["name"]: r["kind"] for r in rows.to_dicts()}
    nccl = [n for n in expected if COMM.search(n)]
    assert nccl and all(kinds[n] == "communication" for n in nccl)
    memory = {e["name"] for e in raw(path) if e.get("cat") in MEMORY}
    assert memory and all(kinds[n] == "memory" for n in memory)
    per_kind = {r["kind"]: r for r in result.kinds.to_dicts()}
    comm = [d for n in nccl for d in expected[n]]
    assert per_kind["communication"]["count"] == len(comm)
    assert abs(per_kind["communication"]["total_ns"] - sum(comm)) <= len(comm)


def test_dlrm_every_rank_apart() -> None:
    result = kernels(ta.load(need(DLRM)))
    assert sorted(result.kinds["rank"].unique().to_list()) == list(range(8))
    for rank in range(8):
        mine = result.kernels.filter(rank=rank)
        assert mine["total_ns"].to_list() == sorted(mine["total_ns"].to_list(), reverse=True)
        assert abs(mine["share_pct"].sum() - 100) < 0.01 * mine.height


def test_mi300_rocm() -> None:
    path = need(RCCL / "resnet_act_checkpoint.json.gz")
    events = raw(path)
    expected = device(events)
    rows = kernels(ta.load(path)).kernels
    check_rows(rows, expected)
    check_top(rows, expected)
    rccl = [r for r in rows.to_dicts() if COMM.search(r["name"])]
    assert rccl and all(r["kind"] == "communication" for r in rccl)


def test_mi300_one_step() -> None:
    path = need(RCCL / "resnet_act_checkpoint.json.gz")
    events = raw(path)
    steps = sorted(int(m[1]) for e in events if (m := STEP.match(e["name"]))
                   and e.get("cat") == "user_annotation")  # fmt: skip
    step = steps[1]
    result = kernels(ta.load(path), step=step)
    assert result.step == step
    check_rows(result.kernels, device(events, step))
    with pytest.raises(ta.UsageError, match="no ProfilerStep#999"):
        kernels(ta.load(path), step=999)


def truth(variant: str) -> dict[str, set[tuple[int, int, int]]]:
    """Per NEFF of truth.json, its executions: (exec_id, start, end), the cores of one as one."""
    doc = json.loads((FIXTURES / variant / "truth.json").read_text())
    out: dict[str, set[tuple[int, int, int]]] = defaultdict(set)
    for e in doc["executions"]:
        out[e["model_name"]].add((e["exec_id"], e["start_ns"], e["end_ns"]))
    return out


@pytest.mark.parametrize("variant", ["rmsnorm_naive", "rmsnorm_naive_lnc2"])
def test_neuron_per_neff(variant: str) -> None:
    expected = truth(variant)
    result = kernels(ta.load(FIXTURES / variant, args=True))
    got = {r["neff"]: r for r in result.kernels.to_dicts()}
    assert set(got) == set(expected)
    assert sum(len(v) for v in expected.values()) == 6
    for neff, runs in expected.items():
        assert got[neff]["name"] == neff  # a file name with no folder: itself
        assert got[neff]["count"] == len(runs)
        assert got[neff]["total_ns"] == sum(e - s for _, s, e in runs)
        assert got[neff]["kind"] == "compute"
    assert result.notes == ()


def test_neuron_without_args_says_so() -> None:
    # the Explorer Parquet reader keeps the executions' args: the NEFFs are named unasked
    result = kernels(ta.load(FIXTURES / "rmsnorm_naive"))
    assert set(result.kernels["neff"].to_list()) == set(truth("rmsnorm_naive"))
    # a run read without them (as the other readers read) is told apart by nothing, and says so
    profile = ta.load(FIXTURES / "rmsnorm_naive")
    bare = replace(profile, events=profile.events.with_columns(args_json=pl.lit(None, pl.String)))
    result = kernels(bare)
    assert result.kernels["name"].to_list() == ["nc_exec_running"]
    assert result.kernels["count"].to_list() == [6]
    assert result.kernels["neff"].to_list() == [None]
    assert any("args=True" in n for n in result.notes)


def test_cli_neuron_reads_the_neffs() -> None:
    code, out, err = run_cli("kernels", FIXTURES / "rmsnorm_naive", "--no-cache", "--format",
                             "json")  # fmt: skip
    assert code == 0, err
    rows = json.loads(out)["runs"][0]["kernels"]
    assert {r["neff"] for r in rows} == set(truth("rmsnorm_naive"))


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "csv"])
def test_cli_formats(fmt: str) -> None:
    path = need(RCCL)
    code, out, err = run_cli("kernels", path, "--no-cache", "--format", fmt)
    assert code == 0, err
    top = max(device(raw(path / "resnet_act_checkpoint.json.gz")).items(),
              key=lambda kv: sum(kv[1]))[0]  # fmt: skip
    if fmt == "json":
        doc = json.loads(out)
        assert doc["runs"][0]["kernels"][0]["name"] == top
    elif fmt == "csv":
        head, first = out.splitlines()[:2]
        assert head.startswith("rank,pid,neff,name,kind,count,total_ns,share_pct")
        assert top.split("(")[0] in first
    else:
        assert "kernels by total device time" in out and "communication" in out
        assert "ncclDevKernel_Generic" in out


def test_cli_missing_step_is_a_usage_error() -> None:
    code, out, err = run_cli("kernels", FIXTURES / "rmsnorm_naive", "--no-cache", "--step", "99")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "ProfilerStep#99" in err


def test_cli_top_per_rank() -> None:
    code, out, err = run_cli("kernels", need(DLRM), "--no-cache", "--top", "2")
    assert code == 0, err
    lines = [line for line in out.splitlines() if re.match(r"\| rank \d ", line)]
    kernel_rows = [line for line in lines if "%" in line and line.count("|") > 8]
    per_rank = defaultdict(int)
    for line in kernel_rows:
        per_rank[line.split("|")[1].strip()] += 1
    assert per_rank == {f"rank {r}": 2 for r in range(8)}
    assert "more kernels" in out


def test_compile_cache_neffs_are_told_apart_by_their_folder() -> None:
    import polars as pl

    from trace_analyzer.questions.kernels.analysis import named

    cache = "/var/tmp/neuron-compile-cache/neuronxcc-2.1/MODULE_{}/model.neff"
    done = pl.DataFrame({
        "event_id": [1, 2, 3], "pid": [7, 7, 7], "device": ["NC0"] * 3,
        "name": ["nc_exec_running"] * 3, "start_ns": [0, 10, 20], "end_ns": [5, 15, 26],
        "kind": ["compute"] * 3, "step": [None, None, None],
    })  # fmt: skip
    events = pl.DataFrame({
        "event_id": [1, 2, 3], "rank": [None, None, None], "exec_id": [1, 2, 3],
        "source": ["neuron_hw"] * 3,
        "args_json": [json.dumps({"model_name": cache.format(m)}) for m in "aab"],
    })  # fmt: skip
    rows = named(done, events, [])
    assert sorted(rows["name"].to_list()) == ["MODULE_a/model.neff"] * 2 + ["MODULE_b/model.neff"]
    assert set(rows["neff"].to_list()) == {cache.format("a"), cache.format("b")}
