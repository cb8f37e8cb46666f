"""Clocks within one run (issue 18): an Explorer export off its trace.json's clock is aligned
onto it, and a few events far outside the run's span are excluded (loading/offsets.py,
loading/clocks.py, docs/formats.md "Layouts and runs")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from conftest import X, kineto, run_cli, write_trace

import trace_analyzer as ta
from trace_analyzer.errors import InputError
from trace_analyzer.loading.clocks import FAR_REASON

NAIVE = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"
S = 1_000_000_000  # ns in a second
HOUR, DAY = 3600 * S, 86400 * S
YEAR = 365.25 * DAY


def _copy(to: Path, shift_ns: int, *, framework: bool = True) -> Path:
    """Copy the naive RMSNorm run to ``to`` with both its Explorer exports (Parquet and legacy
    JSON) moved by ``shift_ns``; without ``framework``, the exports lose their framework rows
    (Explorer's copies of trace.json's events), so nothing can be matched."""
    shutil.copytree(NAIVE, to, ignore=shutil.ignore_patterns(".traceana-cache"))
    table = to / "explorer/parquet/SystemProfileEvents.parquet"
    df = pl.read_parquet(table).with_columns(pl.col("start_ts", "end_ts") + shift_ns)
    if not framework:
        df = df.filter(pl.col("trace_event_source") != "framework")
    df.write_parquet(table)
    legacy = to / "explorer/json/system_profile.json"
    doc = json.loads(legacy.read_text())
    doc["trace_event"] = [
        {**e, "timestamp": e["timestamp"] + shift_ns}
        for e in doc["trace_event"]
        if framework or e.get("trace_event_source") != "framework"
    ]
    legacy.write_text(json.dumps(doc))
    return to


def _clock_warnings(p: ta.Profile) -> list[str]:
    return [w for w in p.warnings if "trace.json's" in w and "clock" in w]


@pytest.mark.parametrize(
    ("shift_ns", "words"),
    [(3 * HOUR, "3.0 hours ahead of"), (-3 * HOUR, "3.0 hours behind"), (30 * S, "30 s ahead of")],
)
def test_an_export_off_its_trace_json_gives_the_unshifted_hops_and_causes(
    tmp_path, shift_ns, words
):
    base = ta.load(_copy(tmp_path / "base", 0))
    off = ta.load(_copy(tmp_path / "off", shift_ns))
    same = pl.exclude("file")  # the folders differ; every time is back on trace.json's clock
    assert off.events.select(same).equals(base.events.select(same))
    hops = ta.chains(off).table
    assert hops.equals(ta.chains(base).table)
    assert (hops["dispatch_to_hw_us"] >= 0).all()
    g, g0 = ta.gaps(off), ta.gaps(base)
    assert g.window == g0.window and g.summary == g0.summary
    assert g.gaps.equals(g0.gaps)  # each gap's cause, evidence and ops as unshifted
    assert _clock_warnings(base) == []
    warned = _clock_warnings(off)
    assert len(warned) == 2 and all(words in w for w in warned), warned  # Parquet and JSON

    code, out, _ = run_cli("gaps", tmp_path / "off", "--no-cache", "--format", "json")
    assert code == 0
    run = json.loads(out)["runs"][0]
    assert any(words in w for w in run["warnings"])


def test_an_export_with_nothing_to_match_or_within_a_microsecond_is_left_as_it_is(tmp_path):
    """Guards (they hold before the change too): no match, no warning, nothing moved."""
    base = ta.load(_copy(tmp_path / "base", 0))
    hw0 = base.events.filter(pl.col("source") == "neuron_hw")["start_ns"].min()
    bare = ta.load(_copy(tmp_path / "bare", 30 * S, framework=False))
    assert _clock_warnings(bare) == []
    assert bare.events.filter(pl.col("source") == "neuron_hw")["start_ns"].min() == hw0 + 30 * S
    near = ta.load(_copy(tmp_path / "near", 500))  # within the 1 µs matching tolerance
    assert _clock_warnings(near) == []
    assert near.events.filter(pl.col("source") == "neuron_hw")["start_ns"].min() == hw0 + 500


T0 = 1_700_000_000_000_000.0  # epoch µs (no baseTimeNanoseconds): 1.7e18 ns
STEPS = 100  # each step: an op, its launch and its kernel, 100 µs apart (300 events)


def _steps(t0: float = T0, steps: int = STEPS, every_us: float = 100) -> list[dict]:
    out = []
    for i in range(steps):
        t = t0 + every_us * i
        ext = {"External id": i}
        out += [
            X("cpu_op", "aten::mm", t, 20, pid=1, tid=1, **ext),
            X("cuda_runtime", "cudaLaunchKernel", t + 1, 5, pid=1, tid=1, correlation=i, **ext),
            X("kernel", "k", t + 30, 40, pid=0, tid=7, device=0, stream=7, correlation=i),
        ]
    return out


def _kernel(ts_us: float, corr: int = 10_000) -> dict:
    return X("kernel", "k", ts_us, 40, pid=0, tid=7, device=0, stream=7, correlation=corr)


def _gaps(folder: Path, *extra: str) -> tuple[dict, str]:
    code, out, err = run_cli("gaps", folder, "--no-cache", "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)["runs"][0], err


def _same_analysis(a: dict, b: dict) -> None:
    for key in ("window", "summary", "devices", "lanes", "gaps", "device_gaps"):
        assert a[key] == b[key], key


OUTLIERS = {
    # ts 5e9 µs: 83 minutes after boot, 53.9 years before the run
    "a kernel on the boot clock": (_kernel(5e9), "hardware", T0 - 5e9 - 40, "before"),
    # 3.2 years after the run's last kernel ends (T0 + 9,970 µs)
    "a kernel years later": (_kernel(T0 + 1e14), "hardware", 1e14 - 9_970, "after"),
    "a host op at ts 0": (X("cpu_op", "aten::mm", 0.0, 20, pid=1, tid=1), "framework_op",
                          T0 - 20, "before"),
}


@pytest.mark.parametrize("case", list(OUTLIERS))
def test_one_event_far_outside_the_run_is_excluded_and_the_analysis_is_the_runs(tmp_path, case):
    event, kind, away_us, side = OUTLIERS[case]
    write_trace(tmp_path / "base/trace.json", kineto(_steps()))
    write_trace(tmp_path / "odd/trace.json", kineto([*_steps(), event]))  # last: epoch µs read
    for extra in ((), ("--window", "0ms:5ms")):  # --window counts from the run's first event
        base, _ = _gaps(tmp_path / "base", *extra)
        odd, err = _gaps(tmp_path / "odd", *extra)
        _same_analysis(odd, base)
    assert base["window"]["duration_ns"] == 5_000_000
    far = [w for w in odd["warnings"] if "excluded" in w]
    years = away_us * 1000 / YEAR
    assert len(far) == 1 and f"1 event ({kind}) lies {years:.1f} years {side}" in far[0], far
    assert "other 300 events" in far[0]
    assert ta.load(tmp_path / "odd").dropped == {FAR_REASON: 1}
    with pytest.raises(InputError):  # counted as a drop: --strict refuses it
        ta.load(tmp_path / "odd", strict=True)


@pytest.mark.parametrize(("far", "excluded"), [(3, True), (4, False)])
def test_at_most_one_event_in_a_hundred_is_excluded(tmp_path, far, excluded):
    """3 far kernels among 303 events are 1 %: excluded; 4 among 304 are more: kept."""
    odd = [_kernel(5e9 + 100 * i, 10_000 + i) for i in range(far)]
    write_trace(tmp_path / "base/trace.json", kineto(_steps()))
    write_trace(tmp_path / "odd/trace.json", kineto([*_steps(), *odd]))
    base, _ = _gaps(tmp_path / "base")
    got, _ = _gaps(tmp_path / "odd")
    if excluded:
        _same_analysis(got, base)
        assert ta.load(tmp_path / "odd").dropped == {FAR_REASON: far}
    else:  # real work, or another run: left as it is (the window reaches them)
        assert got["window"]["start_ns"] == 5_000_000_000_000
        assert ta.load(tmp_path / "odd").dropped == {}


def test_a_late_phase_and_an_event_within_the_runs_own_span_are_kept(tmp_path):
    """Guards (they hold before the change too): a second phase of real work two minutes
    after the first, and one kernel two minutes after a run 75 minutes long, stay."""
    late = T0 + 120e6 + 9_970  # two minutes after the first phase's last kernel ends
    write_trace(tmp_path / "phases/trace.json", kineto(_steps() + _steps(late)))
    got, _ = _gaps(tmp_path / "phases")
    assert got["summary"]["executions"] == 2 * STEPS
    assert got["window"]["end_ns"] == int(late + 9_970) * 1000
    long_run = _steps(steps=151, every_us=30e6)  # 75 minutes, a step every 30 s
    end_us = T0 + 150 * 30e6 + 70
    write_trace(tmp_path / "long/trace.json", kineto([*long_run, _kernel(end_us + 120e6)]))
    got, _ = _gaps(tmp_path / "long")
    assert got["summary"]["executions"] == 152
    assert ta.load(tmp_path / "long").dropped == {}


def test_a_files_own_outlier_does_not_join_two_runs_days_apart(tmp_path):
    """A host event at ts 0 in one of two traces 200 days apart made its span reach the other
    file, and the two runs were merged; its outlier set aside, they are two runs (parts)."""
    write_trace(tmp_path / "a.json", kineto(_steps()))
    later = T0 + 200 * DAY / 1000
    write_trace(tmp_path / "b.json", kineto([*_steps(later), X("cpu_op", "x", 0.0, 1, pid=1)]))
    code, out, err = run_cli("gaps", tmp_path, "--no-cache", "--format", "json")
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert [r["root"] for r in runs] == [f"{tmp_path}#a.json", f"{tmp_path}#b.json"]
    said = runs[0]["warnings"][0]
    assert "200.0 days apart" in said and "a.json" in said and "b.json" in said


STRETCHED = {
    # a kernel that starts in the run and "lasts" 3.2 years: its end far past every other end
    "a kernel with a wrong duration": (
        X("kernel", "k", T0 + 50, 1e14, pid=0, tid=7, device=0, stream=7, correlation=10_000),
        "hardware"),
    # a host op that ends in the run and starts at ts 0: its start far before every other start
    "a host op from ts 0 into the run": (X("cpu_op", "aten::mm", 0.0, T0 + 10, pid=1, tid=1),
                                         "framework_op"),
}


@pytest.mark.parametrize("case", list(STRETCHED))
def test_one_event_with_a_wrong_duration_is_excluded(tmp_path, case):
    """Grouping by time keeps an event that covers the whole run, so one real start with a
    wrong duration (or a real end with a wrong start) made the window years long."""
    event, kind = STRETCHED[case]
    write_trace(tmp_path / "base/trace.json", kineto(_steps()))
    write_trace(tmp_path / "odd/trace.json", kineto([*_steps(), event]))
    base, _ = _gaps(tmp_path / "base")
    odd, _ = _gaps(tmp_path / "odd")
    _same_analysis(odd, base)  # the window was 3.2 years (54 years for the host op)
    (said,) = [w for w in odd["warnings"] if "wrong duration" in w]
    assert f"1 event ({kind} 1) lasts up to" in said and "other 300 events" in said, said
    assert ta.load(tmp_path / "odd").dropped == {FAR_REASON: 1}


def test_events_that_cover_the_run_for_real_are_kept(tmp_path):
    """Guards: a step that spans a 75-minute run, and a 10-minute op with work only at its two
    ends (its end near the run's last other end), stay."""
    long_run = _steps(steps=151, every_us=30e6)
    step = X("user_annotation", "ProfilerStep#1", T0 - 5, 150 * 30e6 + 100, pid=1, tid=1)
    write_trace(tmp_path / "long/trace.json", kineto([*long_run, step]))
    assert ta.load(tmp_path / "long").dropped == {}
    ends = _steps(steps=20) + _steps(T0 + 600e6, steps=20)
    op = X("cpu_op", "aten::wait", T0, 600e6 + 2_000, pid=1, tid=2)
    write_trace(tmp_path / "ends/trace.json", kineto([*ends, op]))
    assert ta.load(tmp_path / "ends").dropped == {}


HOST = "i-0123456789abcdef0"


def _two_processes(to: Path, shifts: dict[int, int]) -> Path:
    """Copy the naive run to ``to`` as two processes, 4242 and a copy of it as 4343 (its own
    capture folder, its own rows in the Parquet export), each process's export rows moved by
    ``shifts[pid]``: two hosts' clocks in one export. The legacy JSON export is left out."""
    shutil.copytree(NAIVE, to, ignore=shutil.ignore_patterns(".traceana-cache", "json"))
    src = next((to / f"{HOST}_pid_4242").rglob("trace.json"))
    doc = json.loads(src.read_text())
    for e in doc["traceEvents"]:
        for key in ("pid", "tid"):
            if e.get(key) == 4242:
                e[key] = 4343
    dst = to / f"{HOST}_pid_4343" / src.parent.name / "trace.json"
    write_trace(dst, doc)
    table = to / "explorer/parquet/SystemProfileEvents.parquet"
    one = pl.read_parquet(table)
    other = one.with_columns(
        pl.col("id") + 10**6,
        *(pl.when(pl.col(c) == 4242).then(4343).otherwise(pl.col(c)).alias(c)
          for c in ("process_id", "thread_id")),
    )
    both = pl.concat([one, other]).with_columns(
        pl.col(c) + pl.col("process_id").replace_strict(shifts, default=0)
        for c in ("start_ts", "end_ts")
    )
    both.write_parquet(table)
    return to


def test_an_export_of_two_processes_on_two_clocks_is_aligned_process_by_process(tmp_path):
    """One export, two processes whose clocks differ (3 hours and 1 hour ahead): one offset
    for the export was no offset at all (neither held most of the matches), so neither moved."""
    base = ta.load(_two_processes(tmp_path / "base", {}))
    off = ta.load(_two_processes(tmp_path / "off", {4242: HOUR, 4343: 3 * HOUR}))
    assert base.events.height == 2 * ta.load(NAIVE).events.height  # the premise: two copies
    same = pl.exclude("file")
    assert off.events.select(same).sort("event_id").equals(base.events.select(same).sort("event_id"))
    said = sorted(w for w in off.warnings if "clock runs" in w)
    assert len(said) == 2 and "process 4242's clock runs 1.0 hours ahead" in said[0] \
        and "process 4343's clock runs 3.0 hours ahead" in said[1], said


def test_a_lane_on_another_clock_is_said(tmp_path):
    """A GPU stream whose every kernel (100 of the run's 400 events) sits on the boot clock,
    53.9 years before the host side: too many to exclude, so kept, but it was not said."""
    boot = [X("kernel", "k", 5e9 + 100 * i, 40, pid=0, tid=9, device=0, stream=9, correlation=i)
            for i in range(STEPS)]
    write_trace(tmp_path / "odd/trace.json", kineto([*_steps(), *boot]))
    got, _ = _gaps(tmp_path / "odd")
    (said,) = [w for w in got["warnings"] if "another clock" in w]
    assert f"{STEPS} events (on PID:1/GPU:0/stream:9) lie up to 53.9 years before" in said, said
    assert ta.load(tmp_path / "odd").dropped == {}  # kept: nothing excluded
    # a second phase of real work two minutes later is kept and not said
    write_trace(tmp_path / "phases/trace.json", kineto(_steps() + _steps(T0 + 120e6 + 9_970)))
    got, _ = _gaps(tmp_path / "phases")
    assert not [w for w in got["warnings"] if "clock" in w]
