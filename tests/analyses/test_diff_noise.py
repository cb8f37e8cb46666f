"""traceana diff over several runs per side: means, spread, Welch's t-test, the verdict.

Each run is a tiny Kineto trace this file builds: ten kernels on one stream with nine gaps
between them, with a seeded random jitter: each run's kernels and its gaps off by up to
±3 % together, and every kernel and gap by up to ±3 % more. The expected means,
sample standard deviations and t statistics are computed here from the durations written;
the two-sided 97.5 % t quantiles are checked against Student's t integrated numerically.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import pytest
from conftest import X, kineto, run_cli, write_trace

from trace_analyzer.questions.diff.stats import T975, Spread, t_critical, welch

BASE_NS = 1_793_620_800_000_000_000
HOST, GPU, STREAM = 4242, 0, 7
KERNEL_NS, GAP_NS, KERNELS = 50_000, 20_000, 10
JITTER = 0.03


def write_run(path: Path, kernels: list[int], gaps: list[int]) -> dict[str, float]:
    """Write one run (kernels and gaps in ns, one stream); return what it measures by
    construction: device time, idle, window (µs) and idle %."""
    events, t = [], 1_000_000  # ns after the base time
    for i, dur in enumerate(kernels):
        corr, ext = 1000 + i, i + 1
        events += [
            X("cpu_op", "aten::mm", (t - 40_000) / 1000, 15, pid=HOST, tid=HOST,
              **{"External id": ext}),
            X("cuda_runtime", "cudaLaunchKernel", (t - 35_000) / 1000, 3, pid=HOST, tid=HOST,
              correlation=corr, **{"External id": ext}),
            X("kernel", "k_mm", t / 1000, dur / 1000, pid=GPU, tid=STREAM, device=GPU,
              stream=STREAM, correlation=corr),
        ]
        t += dur + (gaps[i] if i < len(gaps) else 0)
    write_trace(path / "trace.json", kineto(events, baseTimeNanoseconds=BASE_NS))
    busy, idle = sum(kernels), sum(gaps)
    return {"device_time": busy / 1000, "idle_us": idle / 1000,
            "window_us": (busy + idle) / 1000, "idle_pct": 100 * idle / (busy + idle)}


def jittered(rng: random.Random, mean_ns: float, n: int) -> list[int]:
    """``n`` durations around ``mean_ns``: the whole run off by up to ±3 % (a slower or faster
    run), each one by up to ±3 % more."""
    run = 1 + rng.uniform(-JITTER, JITTER)
    return [round(mean_ns * run * (1 + rng.uniform(-JITTER, JITTER))) for _ in range(n)]


def write_side(folder: Path, seed: int, runs: int = 5, kernel: float = KERNEL_NS,
               gap: float = GAP_NS) -> list[dict[str, float]]:
    """Write ``runs`` runs under ``folder`` (run0, run1, ...) with seeded jitter."""
    rng = random.Random(seed)
    return [write_run(folder / f"run{i}", jittered(rng, kernel, KERNELS),
                      jittered(rng, gap, KERNELS - 1)) for i in range(runs)]


def welch_t(b: list[float], h: list[float]) -> tuple[float, float]:
    """Welch's t and its Welch–Satterthwaite degrees of freedom, by the textbook formulas."""
    vb, vh = statistics.variance(b) / len(b), statistics.variance(h) / len(h)
    t = (statistics.mean(h) - statistics.mean(b)) / math.sqrt(vb + vh)
    df = (vb + vh) ** 2 / (vb**2 / (len(b) - 1) + vh**2 / (len(h) - 1))
    return t, df


def diff_json(*args: object) -> tuple[int, dict, str]:
    code, out, err = run_cli("diff", *map(str, args), "--format", "json")
    return code, (json.loads(out) if out.strip() else {}), err


@pytest.fixture(scope="module")
def sides(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("noise")
    return {
        "root": root,
        "base": write_side(root / "base", seed=1),
        # the same code again: the jitter differs, the mean kernel is 0.5 % longer
        "same": write_side(root / "same", seed=2, kernel=KERNEL_NS * 1.005),
        # gaps 30 % longer: a clear regression
        "slow": write_side(root / "slow", seed=3, gap=GAP_NS * 1.3),
    }


def test_means_and_spread_are_of_the_runs(sides):
    code, d, err = diff_json(sides["root"] / "base", sides["root"] / "slow")
    assert code == 0, err
    m = {r["metric"]: r for r in d["runs"][0]["metrics"]}
    # µs are rounded to the ns (and the mean to 3 decimals); a run's idle % to 2 decimals
    for metric, tol in (("device_time", 2e-3), ("idle_us", 2e-3), ("window_us", 2e-3),
                        ("idle_pct", 1e-2)):
        b = [r[metric] for r in sides["base"]]
        h = [r[metric] for r in sides["slow"]]
        row = m[metric]
        assert row["base_runs"] == row["head_runs"] == 5
        assert row["base"] == pytest.approx(statistics.mean(b), abs=tol)
        assert row["head"] == pytest.approx(statistics.mean(h), abs=tol)
        assert row["base_sd"] == pytest.approx(statistics.stdev(b), abs=tol)
        assert row["head_sd"] == pytest.approx(statistics.stdev(h), abs=tol)
        t, df = welch_t(b, h)
        assert row["t"] == pytest.approx(t, rel=2e-2), metric
        assert row["df"] == pytest.approx(df, rel=5e-2), metric
    assert m["executions"]["base"] == m["executions"]["head"] == KERNELS


def test_a_change_inside_the_noise_is_inconclusive(sides):
    # By construction: head's kernels are 0.5 % longer on average, the jitter is ±3 %.
    for metric in ("device_time", "window_us", "idle_pct"):
        t, df = welch_t([r[metric] for r in sides["base"]], [r[metric] for r in sides["same"]])
        assert abs(t) < t_critical(df), (metric, t)  # the construction is inside the noise
    code, d, err = diff_json(sides["root"] / "base", sides["root"] / "same")
    assert code == 0, err
    (run,) = d["runs"]
    assert run["verdict"] == "inconclusive"
    assert run["verdict_text"].endswith(": inconclusive")
    assert "not significant" in run["verdict_text"]
    assert "Welch" in run["noise"] and "5 runs in base, 5 in head" in run["noise"]
    assert {s["state"] for s in run["signals"]} <= {"noise", "flat"}


def test_gaps_thirty_percent_longer_are_worse(sides):
    b = [r["window_us"] for r in sides["base"]]
    h = [r["window_us"] for r in sides["slow"]]
    t, df = welch_t(b, h)
    assert t > t_critical(df)  # 9 gaps × 6 µs more on a 680 µs window, ±3 % noise
    code, d, err = diff_json(sides["root"] / "base", sides["root"] / "slow")
    assert code == 0, err
    (run,) = d["runs"]
    assert run["verdict"] == "worse"
    m = {r["metric"]: r for r in run["metrics"]}
    assert m["window_us"]["significant"] is True and m["idle_pct"]["significant"] is True
    pct = 100 * (statistics.mean(h) - statistics.mean(b)) / statistics.mean(b)
    assert run["verdict_text"].startswith(f"window {pct:+.1f} %")


def test_a_glob_names_the_runs_of_a_side(sides):
    root = sides["root"]
    code, d, err = diff_json(root / "base" / "run*", root / "slow")
    assert code == 0, err
    (run,) = d["runs"]
    assert len(run["base_samples"]) == 5 and run["verdict"] == "worse"


def test_min_runs_makes_delta_gates_wait_for_significance(sides):
    root = sides["root"]
    same = (root / "base", root / "same")
    # the mean device time rose by about 0.5 %: the condition holds on the means alone
    args = ("--fail-on", "device_time_pct_delta>0.1")
    code, _, err = run_cli("diff", *map(str, same), *args)
    assert code == 1 and "device_time_pct_delta" in err
    code, out, err = run_cli("diff", *map(str, same), *args, "--min-runs", "3")
    assert code == 0, err
    assert "not significant" in out
    code, d, _ = diff_json(*same, *args, "--min-runs", "3")
    assert d["runs"][0]["failed"] == [] and len(d["runs"][0]["gate_notes"]) == 1
    code, _, err = run_cli("diff", str(root / "base"), str(root / "slow"), "--min-runs", "3",
                           "--fail-on", "idle_pct_delta>1")
    assert code == 1 and "idle_pct_delta" in err


def test_min_runs_needs_that_many_runs_on_each_side(sides):
    root = sides["root"]
    code, out, err = run_cli("diff", str(root / "base"), str(root / "slow" / "run0"),
                             "--min-runs", "3")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "--min-runs 3" in line and "has 5 runs" in line and "has 1 run" in line


def test_saved_summaries_as_the_base_give_the_verdict_of_the_traces(sides, tmp_path):
    root = sides["root"]
    for head, word in (("same", "inconclusive"), ("slow", "worse")):
        _, ref, _ = diff_json(root / "base", root / head)
        gaps_json = tmp_path / "base-gaps.json"
        code, _, err = run_cli("gaps", str(root / "base"), "--format", "json", "-o", str(gaps_json))
        assert code == 0, err
        saved = tmp_path / "base-summary.json"
        code, out, err = run_cli("baseline", "save", str(root / "base"), "-o", str(saved))
        assert code == 0 and "saved 5 runs" in out, err
        for base in (gaps_json, saved):
            code, d, err = diff_json(base, root / head)
            assert code == 0, err
            (run,) = d["runs"]
            assert run["verdict"] == ref["runs"][0]["verdict"] == word
            got = {r["metric"]: r for r in run["metrics"]}
            for r in ref["runs"][0]["metrics"]:
                if base == gaps_json and r["metric"] == "self_cpu_us":  # it carries no ops' time
                    assert got["self_cpu_us"]["base"] is None and r["base"] is not None
                    continue
                for key in ("base", "head", "base_sd", "head_sd", "t", "significant"):
                    assert got[r["metric"]][key] == r[key], (base.name, r["metric"], key)
        # the summary keeps the ops; the gaps JSON has only the idle before each
        _, from_saved, _ = diff_json(saved, root / head)
        assert from_saved["runs"][0]["ops"] == ref["runs"][0]["ops"]
        _, from_gaps, _ = diff_json(gaps_json, root / head)
        assert any("gaps JSON" in n for n in from_gaps["runs"][0]["not_compared"])
        assert all(o["device_us_delta"] is None for o in from_gaps["runs"][0]["ops"])


def test_welch_of_constant_samples():
    same, other = Spread(3, 5.0, 0.0), Spread(3, 6.0, 0.0)
    assert welch(same, same).significant is False
    assert welch(same, other).significant is True
    assert welch(Spread(1, 5.0, None), other) is None


def student_t_cdf(t: float, df: int) -> float:
    """P(T ≤ t) for Student's t with ``df`` degrees of freedom: Simpson's rule on its
    density from 0 to t (t ≥ 0), plus one half."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def pdf(x: float) -> float:
        return c * (1 + x * x / df) ** (-(df + 1) / 2)

    n = 2000
    h = t / n
    s = pdf(0) + pdf(t) + sum((4 if i % 2 else 2) * pdf(i * h) for i in range(1, n))
    return 0.5 + s * h / 3


@pytest.mark.parametrize("df", sorted(T975))
def test_the_t_table_is_the_975_quantile(df):
    assert student_t_cdf(T975[df], df) == pytest.approx(0.975, abs=2e-4)


def test_a_fractional_df_takes_the_lower_tabulated_one():
    assert t_critical(4.9) == T975[4]
    assert t_critical(35) == T975[30]
    assert t_critical(500) == T975[120]
    assert t_critical(math.inf) == 1.96
    assert t_critical(0.5) == T975[1]
