"""Shares (idle %, device %, a transfer's % of its gap, trend's idle %) stay right at the
limits of what the readers accept (issue 18): computed as 100 × ns in Int64 they overflowed
past 9.2e16 ns (2.9 years), so a 1e15 µs kernel showed 7.77 % of the device time and a
1e17 ns gap -84 % idle. Every expected percentage is computed here in plain Python from the
durations the test writes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import polars as pl
from conftest import X, kineto, run_cli, write_trace

import trace_analyzer as ta
from trace_analyzer.questions.trend.analysis import trend
from trace_analyzer.units import MAX_DURATION_NS

US = 1_000  # ns per µs: Kineto writes µs
BASE = 1_793_620_800_000_000_000  # baseTimeNanoseconds: Nov 2026; the ts are µs after it
I64_MAX = 2**63 - 1


def pct(part: int, whole: int) -> float:
    return round(100 * part / whole, 2)


def run_of(tmp_path, kernels: list[tuple[int, int]], copies=(), queued: bool = False):
    """Load a trace of ``kernels`` ((ts, dur) in µs) on GPU 0 stream 7, each launched by its
    own op (linked by correlation) as it starts (``queued``: all at ts 0), and ``copies``
    (gpu_memcpy (ts, dur)) on the same stream."""
    evs = []
    for i, (ts, dur) in enumerate(kernels, start=1):
        at = i if queued else ts
        evs.append(X("cpu_op", f"aten::op{i}", at, 1, 1, 1, **{"External id": i}))
        evs.append(X("cuda_runtime", "cudaLaunchKernel", at, 1, 1, 1, correlation=i))
        evs.append(X("kernel", f"k{i}", ts, dur, 0, 7, device=0, stream=7, correlation=i))
    for ts, dur in copies:
        evs.append(X("gpu_memcpy", "Memcpy HtoD", ts, dur, 0, 7, device=0, stream=7))
    path = write_trace(tmp_path / "run" / "trace.json", kineto(evs, baseTimeNanoseconds=BASE))
    return ta.load(path)


# (kernel A, kernel B) as (ts, dur) in µs: the idle between them is the one gap. Every test
# runs each case (the last one is within Int64 even as 100 × ns: it holds the small end).
LIMITS = {
    "gap 1e17 ns": [(0, 5 * 10**13), (15 * 10**13, 5 * 10**13)],
    "window near int64": [(0, 10**15), (7 * 10**15, 2 * 10**14)],  # ends at 8.99e18 ns
    "MAX_DURATION_NS apart": [(0, 10), (MAX_DURATION_NS // US, 10)],
}


def test_idle_percentages_at_the_limits(tmp_path):
    for i, (case, ((a0, ad), (b0, bd))) in enumerate(LIMITS.items()):
        assert BASE + (b0 + bd) * US <= I64_MAX  # a time the reader takes
        window = (b0 + bd - a0) * US
        idle = (b0 - a0 - ad) * US
        g = ta.gaps(run_of(tmp_path / str(i), LIMITS[case]))
        device = g.devices.row(0, named=True)
        assert (device["idle_ns"], device["window_ns"]) == (idle, window), case
        want = pct(idle, window)
        assert device["idle_pct"] == want, case
        assert device["active_idle_pct"] == want, case  # first to last execution: the window
        assert g.lanes.row(0, named=True)["idle_pct"] == want, case
        assert g.summary["idle_pct"] == want, case


def test_device_percentages_at_the_limits(tmp_path):
    for i, (case, ((_, ad), (_, bd))) in enumerate(LIMITS.items()):
        table = ta.ops(run_of(tmp_path / str(i), LIMITS[case])).table
        shares = dict(zip(table["name"], table["device_pct"], strict=True))
        assert shares == {"aten::op1": pct(ad, ad + bd), "aten::op2": pct(bd, ad + bd)}, case


def test_a_transfers_share_of_a_gap_past_int64_over_100(tmp_path):
    gap_us, copy_us = 2 * 10**14, 15 * 10**13  # 2e17 ns idle, 1.5e17 ns of it in a copy
    p = run_of(tmp_path, [(10, 10), (20 + gap_us, 10)], copies=[(20 + 10**13, copy_us)],
               queued=True)
    (row,) = ta.gaps(p).gaps.filter(pl.col("cause") == "transfer").iter_rows(named=True)
    assert f"covers {round(100 * copy_us / gap_us)} % of the gap" in row["evidence"]


def test_trend_idle_percentages_past_int64_over_100():
    idle, window = 10**17, 3 * 10**17
    when = datetime(2026, 1, 1, tzinfo=UTC)
    table = pl.DataFrame({
        "run_id": ["r"], "error": [None], "capture_time": [when], "modified_time": [when],
        "variant": ["v"], "backend": ["cuda"], "device": ["GPU:0"], "busy_ns": [window - idle],
        "idle_ns": [idle], "window_ns": [window], "executions": [2],
    }, schema_overrides={"error": pl.String})
    (result,) = trend(table, "runs.parquet").runs
    assert result.table["idle_pct"].to_list() == [pct(idle, window)]


def parallel_run(tmp_path, n: int, dur_us: int):
    """Write a run of ``n`` kernels of ``dur_us`` each, all from ts 0 on streams of their own,
    each launched by a call of one op (``aten::op``); return its folder."""
    evs = []
    for i in range(1, n + 1):
        evs.append(X("cpu_op", "aten::op", i, 1, 1, 1, **{"External id": i}))
        evs.append(X("cuda_runtime", "cudaLaunchKernel", i, 1, 1, 1, correlation=i))
        evs.append(X("kernel", f"k{i}", 10, dur_us, 0, i, device=0, stream=i, correlation=i))
    write_trace(tmp_path / "run" / "trace.json", kineto(evs, baseTimeNanoseconds=BASE))
    return tmp_path / "run"


def test_totals_that_would_pass_int64_are_refused_not_wrapped(tmp_path):
    """Ten kernels of 1e18 ns each, on ten streams at once: one op's device time is 1e19 ns,
    past int64, which polars' Int64 sum wrapped to a negative time with exit 0."""
    n, dur_us = 10, 10**15
    assert n * dur_us * US > I64_MAX >= BASE + (10 + dur_us) * US  # each time fits; the sum not
    run = parallel_run(tmp_path, n, dur_us)
    code, out, err = run_cli("ops", run, "--no-cache", "--format", "json")
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"traceana: error: {run}: ") and "64-bit" in line


def test_totals_just_under_int64_are_exact(tmp_path):
    """Four such kernels: 4e18 ns of device time on one op, plus four hardware lanes of
    1e18 ns span, stays under int64; the op's device time is exact."""
    n, dur_us = 4, 10**15
    assert n * dur_us * US + n * (dur_us * US) <= I64_MAX
    code, out, err = run_cli("ops", parallel_run(tmp_path, n, dur_us), "--no-cache",
                             "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    (op,) = [r for r in run["rows"] if r["name"] == "aten::op"]
    assert op["device_us"] == run["total_device_us"] == n * dur_us  # 4e15 µs: exact in a float
