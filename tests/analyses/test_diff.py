"""traceana diff: two profiles side by side, the verdict, and the CI gates.

Expected values come from the fixtures' truth.json records and the published table.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from conftest import run_cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NAIVE, FUSED, COMPILED = (FIXTURES / f"rmsnorm_{v}" for v in ("naive", "fused", "compiled"))


def truth(path: Path) -> dict:
    return json.loads((path / "truth.json").read_text())


def diff_json(base: Path, head: Path, *args: str) -> tuple[int, dict, str]:
    code, out, err = run_cli("diff", str(base), str(head), "--format", "json", *args)
    return code, (json.loads(out) if out else {}), err


def window_and_idle(path: Path) -> tuple[int, int, int]:
    """(busy, idle in gaps, window) in ns from the generator's record, one core."""
    t = truth(path)
    execs = [e for e in t["executions"] if e["pcore_idx"] == 0]
    busy = sum(e["end_ns"] - e["start_ns"] for e in execs)
    window = max(e["end_ns"] for e in execs) - min(e["start_ns"] for e in execs)
    return busy, sum(g["duration_ns"] for g in t["gaps"]), window


def test_naive_to_fused_is_better_with_the_recorded_numbers():
    code, d, err = diff_json(NAIVE, FUSED)
    assert code == 0, err
    (run,) = d["runs"]
    m = {r["metric"]: r for r in run["metrics"]}
    busy_b, idle_b, window_b = window_and_idle(NAIVE)
    busy_h, idle_h, window_h = window_and_idle(FUSED)
    assert m["device_time"]["base"] == pytest.approx(busy_b / 1000)
    assert m["device_time"]["head"] == pytest.approx(busy_h / 1000)
    assert m["device_time"]["delta"] == pytest.approx((busy_h - busy_b) / 1000)
    assert m["device_time"]["pct_delta"] == pytest.approx(100 * (busy_h - busy_b) / busy_b, abs=0.01)
    assert m["idle_pct"]["base"] == pytest.approx(100 * idle_b / window_b, abs=0.005)
    assert m["idle_pct"]["head"] == 0
    assert m["executions"]["base"] == 6 and m["executions"]["head"] == 1
    assert run["verdict"] == "better"
    # Published device times: 2,355 µs naive (2,354.9), 403.3 µs fused.
    assert m["device_time"]["base"] == pytest.approx(2354.9)
    assert m["device_time"]["head"] == pytest.approx(403.3)


def test_ops_added_and_removed():
    _, d, _ = diff_json(NAIVE, FUSED)
    (run,) = d["runs"]
    removed = {o["name"]: o["device_us_base"] for o in run["removed"]}
    added = {o["name"]: o["device_us_head"] for o in run["added"]}
    assert removed == pytest.approx({"aten::mul": 1164.5, "aten::add": 434.6,
                                     "aten::rsqrt": 415.0, "aten::mean": 340.8})
    assert added["aten::_fused_rms_norm"] == pytest.approx(403.3)


def test_same_profile_is_unchanged_with_zero_deltas():
    code, d, err = diff_json(NAIVE, NAIVE)
    assert code == 0, err
    (run,) = d["runs"]
    assert run["verdict"] == "unchanged"
    assert all(r["delta"] in (0, None) for r in run["metrics"])
    assert run["added"] == [] and run["removed"] == []


def test_per_cause_idle_is_compared():
    _, d, _ = diff_json(NAIVE, FUSED)
    m = {r["metric"]: r for r in d["runs"][0]["metrics"]}
    add_gap = next(g for g in truth(NAIVE)["gaps"] if g["next_op"] == "aten::add")
    assert m["idle_transfer_us"]["base"] == pytest.approx(add_gap["duration_ns"] / 1000)
    assert m["idle_transfer_us"]["head"] == 0


def test_fused_to_naive_fails_the_gates_after_printing():
    code, out, err = run_cli("diff", str(FUSED), str(NAIVE), "--format", "markdown",
                             "--fail-on", "idle_pct_delta>2", "--fail-on", "device_time_pct_delta>5")
    assert code == 1
    assert out.startswith("## diff:") and "worse" in out
    failed = [line for line in err.splitlines() if "failed" in line]
    assert len(failed) == 2
    assert "idle_pct_delta" in failed[0] and "device_time_pct_delta" in failed[1]


def test_naive_to_fused_passes_the_same_gates():
    code, _, err = run_cli("diff", str(NAIVE), str(FUSED), "--fail-on", "idle_pct_delta>2",
                           "--fail-on", "device_time_pct_delta>5")
    assert code == 0, err


def test_markdown_is_a_short_pull_request_comment():
    code, out, _ = run_cli("diff", str(NAIVE), str(FUSED), "--format", "markdown")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("## diff:")
    assert lines[2].startswith("**") and lines[2].endswith(": better**")
    assert len(lines) < 60


def test_csv_has_one_row_per_compared_metric():
    code, out, _ = run_cli("diff", str(NAIVE), str(COMPILED), "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {"metric", "base", "head", "delta", "pct_delta"} <= set(rows[0])
    assert {r["metric"] for r in rows} >= {"device_time", "idle_pct", "gap_count"}


@pytest.mark.parametrize("args", [
    ["--fail-on", "nonsense>1"], ["--fail-on", "idle_pct_delta>>2"], ["--min-gap", "7"],
])
def test_bad_usage_is_exit_2_with_one_line(args):
    code, out, err = run_cli("diff", str(NAIVE), str(FUSED), *args)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_folder_of_several_runs_is_a_side_of_several_samples():
    code, d, err = diff_json(FIXTURES, FUSED)
    assert code == 0, err
    (run,) = d["runs"]
    roots = sorted(str(p.parent) for p in FIXTURES.glob("*/truth.json"))  # 4 RMSNorm, allreduce_2nc
    assert sorted(run["base_samples"]) == roots and run["head_samples"] == [str(FUSED)]
    m = {r["metric"]: r for r in run["metrics"]}
    execs = [len(truth(Path(p))["executions"]) for p in roots]
    assert m["executions"]["base_runs"] == len(roots) == 5 and m["executions"]["head_runs"] == 1
    assert m["executions"]["base"] == pytest.approx(sum(execs) / len(roots))
    assert run["noise"] == "head has one run (base 5): no noise estimate"


def test_json_is_version_2_with_spread_and_signals():
    _, d, _ = diff_json(NAIVE, FUSED)
    assert d["schema_version"] == 2
    (run,) = d["runs"]
    row = run["metrics"][0]
    for key in ("base_runs", "head_runs", "base_sd", "head_sd", "t", "df", "t_critical",
                "significant"):
        assert key in row
    assert row["base_runs"] == row["head_runs"] == 1 and row["base_sd"] is None
    assert row["significant"] is None  # one run per side: not tested
    assert run["noise"] == "one run per side: no noise estimate"
    assert [s["metric"] for s in run["signals"]] == ["step_time_us", "device_time", "idle_pct"]
    assert run["base_source"] == run["head_source"] == "trace"


def step_ns(path: Path) -> int:
    s = truth(path)["profiler_step"]
    return s["end_ns"] - s["start_ns"]


def test_the_verdict_weighs_the_step_time_and_says_so():
    # both fixtures hold ProfilerStep#3; the step is the host span of the one iteration
    _, d, _ = diff_json(NAIVE, FUSED)
    (run,) = d["runs"]
    assert run["time_metric"] == "step_time_us"
    m = {r["metric"]: r for r in run["metrics"]}
    assert m["step_time_us"]["base"] == pytest.approx(step_ns(NAIVE) / 1000)
    assert m["step_time_us"]["head"] == pytest.approx(step_ns(FUSED) / 1000)
    pct = 100 * (step_ns(FUSED) - step_ns(NAIVE)) / step_ns(NAIVE)
    assert run["verdict_text"].startswith(f"step time {pct:+.1f} %")
    _, d, _ = diff_json(NAIVE, FUSED, "--step", "3")
    (run,) = d["runs"]
    assert run["time_metric"] == "window_us"
    assert run["verdict_text"].startswith("ProfilerStep#3 -")


def test_the_text_report_leads_with_the_verdict():
    code, out, _ = run_cli("diff", str(NAIVE), str(FUSED))
    assert code == 0
    lines = out.splitlines()
    pct = 100 * (step_ns(FUSED) - step_ns(NAIVE)) / step_ns(NAIVE)
    assert lines[2].endswith(": better") and lines[2].startswith(f"step time {pct:+.1f} %")
    assert lines[4] == "one run per side: no noise estimate."
    # published device times, 2,354.9 µs and 403.3 µs, auto-scaled
    assert "device time" in lines[2] and "(2.35 ms → 403.3 µs)" in lines[2]


def test_missing_head_is_exit_2_naming_it(tmp_path):
    code, _, err = run_cli("diff", str(NAIVE), str(tmp_path / "nope"))
    assert code == 2 and "nope" in err
