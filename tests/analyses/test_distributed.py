"""`traceana ranks` (questions/ranks/analysis.py) on real multi-rank traces, against figures this
test computes itself from the raw JSON: kernels by stream and kind, their step by their
launch's time, the unions and intersections of their intervals in each window, the ranks'
collectives' ends. Nothing here is taken from traceana's own output.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
from pathlib import Path

import pytest
from conftest import run_cli, union_of

import trace_analyzer as ta
from trace_analyzer.questions.ranks.analysis import ranks

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
DLRM = SHARED / "real/param/dlrm_kineto"
RCCL = SHARED / "real/tracelens/mi300_resnet"
NCCL = SHARED / "hta/tests/data/nccl_parser_config"
COMM = re.compile(r"nccl|rccl", re.I)  # docs/distributed.md: the communication kernels
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def need(path: Path) -> Path:
    if not path.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    return path


def ns(us: float) -> int:
    return round(us * 1000)


def raw(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def model(doc: dict) -> dict[int, dict]:
    """Per host ProfilerStep: the window (the step's span, to the end of the last work it
    launched) and its breakdown (every piece of work in it), from the raw records."""
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = {int(m[1]): (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in ev
             if e.get("cat") == "user_annotation" and (m := STEP.match(e["name"]))}
    launch = {e["args"]["correlation"]: ns(e["ts"]) for e in ev
              if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})}
    work: dict[int, list[tuple[int, int, str]]] = {n: [] for n in steps}
    every: list[tuple[int, int, str]] = []  # all the device's work: what runs in a window
    for e in ev:
        if e.get("cat") not in DEVICE_CATS:
            continue
        s, end = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
        t = launch.get(e.get("args", {}).get("correlation"), s)  # its launch, else its start
        kind = ("memory" if e["cat"] != "kernel" else
                "communication" if COMM.search(e["name"]) else "compute")
        if end > s:
            every.append((s, end, kind))
        for n, (s0, s1) in steps.items():
            if s0 <= t < s1 and end > s:
                work[n].append((s, end, kind))
    out = {}
    for n, (s0, s1) in steps.items():
        w1 = max([s1, *(e for _, e, _ in work[n])])
        # the window runs to the end of the work the step launched; all the work in it counts
        clipped = [(max(s, s0), min(e, w1), k) for s, e, k in every if min(e, w1) > max(s, s0)]
        out[n] = {"start": s0, "window": w1 - s0, **sweep(clipped, w1 - s0)}
    return out


def sweep(intervals: list[tuple[int, int, str]], window: int) -> dict[str, int]:
    """The time each combination of kinds runs: each kind's union (blocks 1 ns apart are one,
    the clock's resolution, as the gaps merge them), boundaries sorted, a count per kind."""
    intervals = [(s, e, k) for k in ("compute", "communication", "memory")
                 for s, e in union_of([(s, e) for s, e, kk in intervals if kk == k])]
    points = sorted({t for s, e, _ in intervals for t in (s, e)})
    sums = dict.fromkeys(("compute", "communication", "overlap", "exposed", "memory", "busy"), 0)
    for a, b in zip(points, points[1:]):
        on = {k for s, e, k in intervals if s <= a and e >= b}
        c, m, x = ("compute" in on), ("communication" in on), ("memory" in on)
        sums["compute"] += (b - a) * c
        sums["communication"] += (b - a) * m
        sums["overlap"] += (b - a) * (c and m)
        sums["exposed"] += (b - a) * (m and not c)
        sums["memory"] += (b - a) * (x and not c and not m)
        sums["busy"] += (b - a) * (c or m or x)
    sums["idle"] = window - sums.pop("busy")
    return sums


def rows_of(result, rank: int | None = None) -> dict[int, dict]:
    return {r["step"]: r for r in result.steps.to_dicts() if rank is None or r["rank"] == rank}


def check(row: dict, want: dict) -> None:
    got = {
        "window": row["window_ns"], "compute": row["compute_ns"],
        "communication": row["communication_ns"], "overlap": row["overlap_ns"],
        "exposed": row["exposed_communication_ns"], "memory": row["memory_ns"],
        "idle": row["idle_ns"],
    }  # fmt: skip
    assert got == {k: want[k] for k in got}
    parts = row["compute_ns"] + row["exposed_communication_ns"] + row["memory_ns"] + row["idle_ns"]
    assert parts == row["window_ns"]  # the breakdown adds up to the window


@pytest.fixture(scope="module")
def dlrm():
    return ranks(ta.load(need(DLRM)))


@pytest.fixture(scope="module")
def dlrm_raw() -> dict[int, dict]:
    docs = [raw(p) for p in sorted(need(DLRM).glob("*.json.gz"))]
    return {d["distributedInfo"]["rank"]: d for d in docs}


def test_eight_ranks_found_with_their_numbers(dlrm, dlrm_raw):
    assert sorted(dlrm.ranks["rank"].to_list()) == sorted(dlrm_raw) == list(range(8))


def test_each_rank_and_step_matches_the_raw_files(dlrm, dlrm_raw):
    for rank, doc in dlrm_raw.items():
        want, got = model(doc), rows_of(dlrm, rank)
        assert set(got) == set(want) == {10}
        for step in want:
            check(got[step], want[step])


def test_clocks_aligned_on_the_collectives_ends(dlrm, dlrm_raw):
    def ends(doc):
        k = sorted((e for e in doc["traceEvents"] if e.get("cat") == "kernel"
                    and COMM.search(e["name"])), key=lambda e: e["ts"])
        return [(e["name"], ns(e["ts"]) + ns(e["dur"])) for e in k]

    first = ends(dlrm_raw[0])
    offsets = {r["rank"]: r for r in dlrm.ranks.to_dicts()}
    for rank, doc in dlrm_raw.items():
        diffs = [e - fe for (n, e), (fn, fe) in zip(ends(doc), first) if n == fn]
        assert offsets[rank]["offset_from"] == "collectives"
        assert abs(offsets[rank]["offset_ns"] - statistics.median(diffs)) <= 1
        assert abs(offsets[rank]["offset_ns"]) < 10_000  # one host: one clock, within 10 µs


def test_the_straggler_is_the_rank_the_others_wait_for(dlrm, dlrm_raw):
    waits = {r: model(d)[10]["exposed"] for r, d in dlrm_raw.items()}
    (row,) = dlrm.stragglers.to_dicts()
    slowest = min(waits, key=waits.get)
    assert (row["step"], row["rank"], row["ranks"]) == (10, slowest, 8)
    others = statistics.median(w for r, w in waits.items() if r != slowest)
    assert row["behind_ns"] == int(others) - waits[slowest]
    starts = {r: model(d)[10]["start"] for r, d in dlrm_raw.items()}
    late = starts[slowest] - statistics.median(s for r, s in starts.items() if r != slowest)
    assert abs(row["late_start_ns"] - late) < 10_000  # less its clock offset, under 10 µs
    assert row["why"] == "started late"  # rank 7 began its step last, 4.5 ms after the rest


@pytest.mark.parametrize("folder", [RCCL, NCCL], ids=["rccl-mi300", "nccl-hta"])
def test_collectives_recognised_and_their_overlap_with_compute(folder):
    (path,) = need(folder).glob("*.json*")
    want = model(raw(path))
    got = rows_of(ranks(ta.load(folder)))
    assert set(got) == set(want) and want
    assert any(w["communication"] > 0 for w in want.values())  # the list finds them
    for step in want:
        check(got[step], want[step])


def test_the_command_prints_every_format(tmp_path):
    need(DLRM)
    code, out, err = run_cli("ranks", DLRM, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    (run,) = doc["runs"]
    assert len(run["ranks"]) == 8 and run["stragglers"][0]["rank"] == 7
    code, out, err = run_cli("ranks", DLRM)
    assert code == 0 and "straggler" in out and "rank 7" in out, out
    code, out, err = run_cli("ranks", DLRM, "--format", "csv")
    assert code == 0 and len(out.strip().splitlines()) == 9  # a header and a row per rank
    code, out, err = run_cli("ranks", DLRM, "--step", "3")
    assert code == 2 and "ProfilerStep#3" in err


def _rank_file(folder: Path, rank: int, compute_us: float, start_us: float = 0) -> None:
    """One rank: ProfilerStep#1 on the host from ``start_us``, a compute kernel of
    ``compute_us`` from 100 µs after it, then an all-reduce that ends at 900 µs on every
    rank."""
    from conftest import X, kineto, write_trace

    pid = 10 + rank
    gpu = {"pid": 0, "tid": 7, "device": rank, "stream": 7}
    write_trace(folder / f"rank{rank}.json", kineto([
        X("user_annotation", "ProfilerStep#1", start_us, 1000 - start_us, pid=pid, tid=pid),
        X("kernel", "gemm", 100 + start_us, compute_us, **gpu),
        X("kernel", "ncclDevKernel_AllReduce_Sum_f32", 100 + start_us + compute_us,
          800 - start_us - compute_us, **gpu),
    ], distributedInfo={"rank": rank, "world_size": 2}))


def test_the_rank_that_computes_more_is_the_straggler(tmp_path):
    _rank_file(tmp_path, 0, 100)
    _rank_file(tmp_path, 1, 780)
    r = ranks(ta.load(tmp_path))
    (row,) = r.stragglers.to_dicts()
    assert (row["rank"], row["why"]) == (1, "computes more")
    assert (row["wait_ns"], row["others_wait_ns"], row["behind_ns"]) == (20_000, 700_000, 680_000)
    assert row["extra_compute_ns"] == 680_000 and row["late_start_ns"] == 0
    assert r.ranks["offset_ns"].to_list() == [0, 0]  # the all-reduce ends together


def test_the_rank_that_started_late_is_the_straggler(tmp_path):
    _rank_file(tmp_path, 0, 100)
    _rank_file(tmp_path, 1, 100, start_us=60)  # its host began the step 60 µs later
    (row,) = ranks(ta.load(tmp_path)).stragglers.to_dicts()
    assert (row["rank"], row["why"], row["late_start_ns"]) == (1, "started late", 60_000)
    assert (row["behind_ns"], row["extra_compute_ns"]) == (60_000, 0)


def test_batch_rows_carry_rank_device_key_and_exposed_communication(dlrm_raw, tmp_path):
    """Each device row of `traceana batch`: its rank and key from the raw file (the host
    pid and the kernels' device), its exposed communication % and the run's straggler from
    the raw model."""
    import polars as pl

    table = tmp_path / "t.parquet"
    code, _, err = run_cli("batch", need(DLRM), "-o", table)
    assert code == 0, err
    rows = {r["device"]: r for r in pl.read_parquet(table).to_dicts()}
    exposed = {}
    for rank, doc in dlrm_raw.items():
        ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
        pid = {e["pid"] for e in ev if e.get("cat") == "cpu_op"}.pop()
        gpu = {e["pid"] for e in ev if e.get("cat") == "kernel"}.pop()
        row = rows[f"PID:{pid}/GPU:{gpu}"]
        assert (row["rank"], row["device_key"]) == (rank, f"rank{rank}/GPU:{gpu}")
        want = model(doc)[10]
        exposed[rank] = want["exposed"]
        assert row["exposed_comm_pct"] == round(100 * want["exposed"] / want["window"], 2)
    slow = min(exposed, key=exposed.get)
    others = sorted(v for r, v in exposed.items() if r != slow)
    assert {r["straggler_rank"] for r in rows.values()} == {slow}
    gap = int(statistics.median(others)) - exposed[slow]
    assert {r["straggler_gap_ns"] for r in rows.values()} == {gap}


def test_trend_splits_runs_by_rank_and_by_device(tmp_path):
    table = tmp_path / "t.parquet"
    assert run_cli("batch", need(DLRM), "-o", table)[0] == 0
    for by, groups in (("rank", {str(r) for r in range(8)}),
                       ("device", {f"rank{r}/GPU:{r}" for r in range(8)})):  # fmt: skip
        code, out, err = run_cli("trend", table, "--by", by, "--format", "json")
        assert code == 0, err
        rows = json.loads(out)["runs"][0]["rows"]
        assert {r["group"] for r in rows} == groups and len(rows) == 8


def test_the_report_page_has_the_ranks_section(dlrm_raw, tmp_path):
    """`traceana report`: a Ranks section with its plot, one row per rank and step, drawn from
    the embedded ranks JSON, whose figures are the raw files' (the model above)."""
    page = tmp_path / "r.html"
    code, _, err = run_cli("report", need(DLRM), "-o", page)
    assert code == 0, err
    text = page.read_text()
    section = text[text.index('<section id="ranks">'):]
    section = section[: section.index("</section>")]
    assert 'id="plot-ranks"' in section
    assert section.count("<tr>") == 1 + 8 + 1 + 1 + 1 + 8 + 1 + 1 + 1 + 8  # steps, stragglers,
    # clocks, the collectives' groups (one: matched by name) and the 8 longest waits (heads)
    assert 'id="plot-ranks-collectives"' in section  # each rank's wait in each collective
    block = text[text.index('id="traceana-ranks"'):]
    doc = json.loads(block[block.index("\n") + 1: block.index("</script>")])
    for row in doc["runs"][0]["steps"]:
        want = model(dlrm_raw[row["rank"]])[row["step"]]
        assert (row["exposed_communication_ns"], row["window_ns"]) == (want["exposed"], want["window"])


def test_the_report_page_has_the_kernels_and_launches_sections(dlrm_raw, tmp_path):
    """The Kernels section lists every (rank, kernel) the raw files hold, the Launches section
    every (rank, stream) with a launched kernel, each with its plot."""
    page = tmp_path / "r.html"
    assert run_cli("report", need(DLRM), "-o", page)[0] == 0
    text = page.read_text()
    kernels, streams = set(), set()
    for rank, doc in dlrm_raw.items():
        ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
        launched = {e["args"]["correlation"] for e in ev
                    if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})}
        for e in ev:
            if e.get("cat") in DEVICE_CATS and e.get("dur", 0) > 0:
                kernels.add((rank, e["name"]))
                if e.get("args", {}).get("correlation") in launched:
                    streams.add((rank, e["args"]["stream"]))
    for name, rows in (("kernels", len(kernels)), ("launches", len(streams))):
        section = text[text.index(f'<section id="{name}">'):]
        section = section[: section.index("</section>")]
        assert f'id="plot-{name}"' in section
        assert section.count("<tr>") == 1 + min(rows, 500), name  # a page lists 500 at most
        assert (rows > 500) == (f"The first 500 rows of {rows:,}" in section)
