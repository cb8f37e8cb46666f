"""traceana diff and gaps as gates that cannot pass by mistake: empty sides, missing metrics,
too few executions, saved summaries that are malformed or measured differently.

Exit codes (docs/diff.md): 0 no gate failed, 1 a gate failed or could not be measured,
2 bad usage, an unusable side or a gate that compared nothing (one line on stderr). Inputs are built here: a host-only
Kineto trace (cpu_op events only) and small GPU traces with a known number of kernels.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import X, kineto, one_line_error, run_cli, write_trace

ROOT = Path(__file__).resolve().parents[2]
NAIVE = ROOT / "fixtures" / "rmsnorm_naive"
FUSED = ROOT / "fixtures" / "rmsnorm_fused"
BASE_NS = 1_793_620_800_000_000_000
HOST, GPU, STREAM = 4242, 0, 7


def host_only(folder: Path) -> Path:
    """A run with framework ops and no hardware execution (a CPU-only profile)."""
    write_trace(folder / "trace.json", kineto([
        X("user_annotation", "ProfilerStep#3", 0, 900, pid=HOST, tid=HOST),
        X("cpu_op", "aten::add", 10, 50, pid=HOST, tid=HOST),
        X("cpu_op", "aten::mul", 100, 50, pid=HOST, tid=HOST),
    ], baseTimeNanoseconds=BASE_NS))
    return folder


def gpu_run(folder: Path, kernels: int, dur: float = 10, gap: float = 5) -> Path:
    """A run of ``kernels`` kernels of ``dur`` µs on one stream, ``gap`` µs apart."""
    events = [X("kernel", f"k{i}", 1000 + i * (dur + gap), dur, pid=GPU, tid=STREAM, device=GPU,
                stream=STREAM) for i in range(kernels)]
    write_trace(folder / "trace.json", kineto(events, baseTimeNanoseconds=BASE_NS))
    return folder


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> Path:
    return host_only(tmp_path_factory.mktemp("host") / "cpu")


def diff(*args: object) -> tuple[int, str, str]:
    return run_cli("diff", *map(str, args))


# --- a side with no hardware executions ------------------------------------------------------

def test_empty_head_is_exit_2_naming_it(host):
    line = one_line_error(*diff(NAIVE, host, "--fail-on", "device_time_pct_delta>5"))
    assert line == (f"traceana: error: head ({host}) has no hardware executions: nothing to "
                    "compare (--allow-empty to compare anyway)")


def test_empty_base_is_exit_2_naming_it(host):
    line = one_line_error(*diff(host, NAIVE))
    assert line.startswith(f"traceana: error: base ({host}) has no hardware executions")


def test_host_only_against_a_device_profile_is_not_unchanged(host):
    one_line_error(*diff(host, NAIVE, "--format", "json"))
    code, out, err = diff(host, NAIVE, "--format", "json", "--allow-empty")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["verdict"] == "inconclusive"
    assert run["verdict_text"] == "base has no hardware executions: inconclusive"
    assert run["not_comparable"] == "base has no hardware executions"


def test_allow_empty_is_honest_and_gates_on_the_missing_side_fail(host):
    code, out, err = diff(NAIVE, host, "--allow-empty", "--fail-on", "device_time_pct_delta>5",
                          "--fail-on", "executions<1")
    assert code == 1
    assert "head has no hardware executions: inconclusive" in out and "better" not in out
    failed = [line for line in err.splitlines() if "failed" in line]
    assert failed == [
        f"traceana: {NAIVE} → {host}: --fail-on 'device_time_pct_delta>5' failed: "
        "device_time_pct_delta is undefined (head has no hardware executions)",
        f"traceana: {NAIVE} → {host}: --fail-on 'executions<1' failed: executions = 0",
    ]


def test_gaps_gate_on_a_profile_without_hardware_compared_nothing(host):
    # a gate that compared nothing never passes: exit 2, one line (tests/cli/test_empty_gates.py)
    line = one_line_error(*run_cli("gaps", str(host), "--fail-on", "idle_pct>20"))
    assert line == (f"traceana: error: {host}: the gate compared nothing ('idle_pct>20': "
                    "idle_pct is undefined (no hardware executions)); a gate that compared "
                    "nothing never passes (--allow-empty-gate to let it)")
    # even a metric that reads 0 in the summary is not measured when nothing ran
    line = one_line_error(*run_cli("gaps", str(host), "--fail-on", "idle_us>100"))
    assert "idle_us is undefined" in line


def test_gaps_statistics_of_a_run_without_gaps_are_zero_for_the_gate():
    # the fused fixture is one execution: no gap, so no gap is longer than 500 µs
    code, _, err = run_cli("gaps", str(FUSED), "--fail-on", "gap_max_us>500")
    assert code == 0, err
    code, _, err = run_cli("gaps", str(FUSED), "--fail-on", "gap_max_us>=0")
    assert code == 1 and "gap_max_us = 0.0" in err


def test_a_gate_that_holds_keeps_its_message():
    code, _, err = run_cli("gaps", str(NAIVE), "--fail-on", "gap_count>=5")
    assert code == 1 and err.strip().endswith("--fail-on 'gap_count>=5' failed: gap_count = 5")


# --- a metric one side lacks -------------------------------------------------------------------

def test_diff_gate_on_a_metric_undefined_on_head_fails(tmp_path):
    # step time: base (the naive fixture) has ProfilerStep#3, this GPU run has no step
    head = gpu_run(tmp_path / "nostep", kernels=6)  # (a GPU run against a Neuron one)
    code, _, err = diff(NAIVE, head, "--fail-on", "step_time_us_pct_delta>5",
                        "--fail-on", "executions<0", "--allow-mismatch")
    assert code == 1
    assert ("--fail-on 'step_time_us_pct_delta>5' failed: step_time_us_pct_delta is undefined "
            "(head has no step time (no ProfilerStep))") in err


def test_relative_change_from_zero_is_undefined_and_fails():
    # the fused fixture has no idle from transfer; the naive one has 172.1 µs of it
    code, _, err = diff(FUSED, NAIVE, "--fail-on", "idle_transfer_us_pct_delta>50",
                        "--fail-on", "executions<0")  # the gate compares something
    assert code == 1 and "is undefined (base is 0: no relative change)" in err
    # alone, it compared nothing: exit 2 (a gate that compared nothing never passes)
    line = one_line_error(*diff(FUSED, NAIVE, "--fail-on", "idle_transfer_us_pct_delta>50"))
    assert "the gate compared nothing" in line
    code, _, err = diff(FUSED, NAIVE, "--fail-on", "idle_transfer_us_delta>200")
    assert code == 0, err


# --- too few executions --------------------------------------------------------------------------

def test_far_fewer_executions_is_exit_2_unless_asked(tmp_path):
    base, head = gpu_run(tmp_path / "many", 40), gpu_run(tmp_path / "few", 2)
    line = one_line_error(*diff(base, head))
    assert "head" in line and "2 hardware executions, 5.0 % of base's 40" in line
    assert "--min-executions-share 10" in line
    code, _, err = diff(base, head, "--min-executions-share", "5")
    assert code == 0, err
    code, out, err = diff(base, head, "--allow-empty", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["runs"][0]["verdict"] == "inconclusive"


def test_the_bundled_fusion_passes_the_default_share():
    # fused has 1 of naive's 6 executions (16.7 %): a fusion, not a broken profile
    code, _, err = diff(NAIVE, FUSED)
    assert code == 0, err


# --- sides that are saved summaries ------------------------------------------------------------

def test_a_malformed_summary_is_exit_2_naming_the_file(tmp_path):
    cases = {
        "bad_number.json": {"schema_version": 1, "path": "x", "runs": [{"summary": {"busy_ns": "x"}}]},
        "no_runs.json": {"schema_version": 1, "path": "x", "runs": []},
        "future.json": {"kind": "traceana-baseline", "schema_version": 99, "runs": []},
        "no_metrics.json": {"kind": "traceana-baseline", "schema_version": 1,
                            "options": {"step": None, "min_gap_ns": 0}, "runs": [{"ops": []}]},
    }
    for name, doc in cases.items():
        p = tmp_path / name
        p.write_text(json.dumps(doc))
        line = one_line_error(*diff(p, NAIVE))
        assert str(p) in line, line
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": 1, "runs": [')
    assert "not valid JSON" in one_line_error(*diff(broken, NAIVE))


def test_a_diff_json_is_not_a_side(tmp_path):
    out = tmp_path / "d.json"
    assert run_cli("diff", str(NAIVE), str(FUSED), "-o", str(out))[0] == 0
    line = one_line_error(*diff(out, NAIVE))
    assert str(out) in line and "gaps --format json" in line


def test_a_summary_measured_otherwise_is_exit_2(tmp_path):
    saved = tmp_path / "naive.json"
    assert run_cli("baseline", "save", str(NAIVE), "-o", str(saved))[0] == 0
    assert "--step" in one_line_error(*diff(saved, FUSED, "--step", "3"))
    assert "--min-gap" in one_line_error(*diff(saved, FUSED, "--min-gap", "5us"))
    gaps_json = tmp_path / "naive-step.json"
    assert run_cli("gaps", str(NAIVE), "--step", "3", "--format", "json", "-o", str(gaps_json))[0] == 0
    code, _, err = diff(gaps_json, FUSED, "--step", "3")
    assert code == 0, err
    assert "--step" in one_line_error(*diff(gaps_json, FUSED))


def test_baseline_save_refuses_an_empty_run_and_its_own_input(tmp_path, host):
    empty = tmp_path / "empty"
    write_trace(empty / "trace.json", kineto([], baseTimeNanoseconds=BASE_NS))
    line = one_line_error(*run_cli("baseline", "save", str(empty), "-o", str(tmp_path / "e.json")))
    assert "no hardware executions" in line
    # a host-only run has what a host-only diff compares: its step time and ops' self CPU
    code, _, err = run_cli("baseline", "save", str(host), "-o", str(tmp_path / "h.json"))
    assert code == 0, err
    (run,) = json.loads((tmp_path / "h.json").read_text())["runs"]
    assert run["metrics"]["step_time_us"] == 900 and run["metrics"]["self_cpu_us"] == 100
    saved = tmp_path / "naive.json"
    assert run_cli("baseline", "save", str(NAIVE), "-o", str(saved))[0] == 0
    assert "the input itself" in one_line_error(*run_cli("baseline", "save", str(saved),
                                                         "-o", str(saved)))


def test_baseline_summaries_of_the_fixtures_are_small(tmp_path):
    for fixture in sorted((ROOT / "fixtures").glob("rmsnorm_*")):
        saved = tmp_path / f"{fixture.name}.json"
        code, _, err = run_cli("baseline", "save", str(fixture), "-o", str(saved))
        assert code == 0, err
        assert saved.stat().st_size < 50_000
        doc = json.loads(saved.read_text())
        assert doc["kind"] == "traceana-baseline" and doc["schema_version"] == 1
        assert "gaps" not in doc["runs"][0]


def test_baseline_compare_is_diff(tmp_path):
    saved = tmp_path / "naive.json"
    assert run_cli("baseline", "save", str(NAIVE), "-o", str(saved))[0] == 0
    a = run_cli("baseline", "compare", str(saved), str(FUSED), "--format", "json")
    b = diff(saved, FUSED, "--format", "json")
    # the same output and exit; its older spelling says the one on stderr (issue 39)
    assert a[:2] == b[:2] and a[0] == 0
    assert a[2].startswith("traceana: note: the one spelling of this comparison is: traceana diff")


def test_a_glob_that_matches_nothing_is_exit_2(tmp_path):
    line = one_line_error(*diff(tmp_path / "nothing-*", NAIVE))
    assert "no path matches" in line and "base" in line


# --- two host-only sides: compared on the host (issue 39) --------------------------------------

def test_two_host_only_runs_are_compared_on_the_host(tmp_path, host):
    slower = tmp_path / "slower"  # the step 1,200 µs instead of 900, aten::add 80 µs instead of 50
    write_trace(slower / "trace.json", kineto([
        X("user_annotation", "ProfilerStep#3", 0, 1200, pid=HOST, tid=HOST),
        X("cpu_op", "aten::add", 10, 80, pid=HOST, tid=HOST),
        X("cpu_op", "aten::mul", 100, 50, pid=HOST, tid=HOST),
    ], baseTimeNanoseconds=BASE_NS))
    code, out, err = diff(host, slower, "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    m = {r["metric"]: r for r in run["metrics"]}
    assert (m["step_time_us"]["base"], m["step_time_us"]["head"]) == (900, 1200)
    assert m["step_time_us"]["delta"] == 300 and m["self_cpu_us"]["delta"] == 30
    assert run["verdict"] == "worse" and run["time_metric"] == "step_time_us"
    assert run["host_only"] and run["not_comparable"] is None
    (add,) = [o for o in run["ops"] if o["name"] == "aten::add"]
    got = (add["self_cpu_us_base"], add["self_cpu_us_head"], add["self_cpu_us_delta"])
    assert got == (50, 80, 30)
    # a gate on a host metric gates; on a device metric it would compare nothing: exit 2
    code, _, err = diff(host, slower, "--fail-on", "step_time_us_pct_delta>10")
    assert code == 1 and "step_time_us_pct_delta = 33.33" in err, err
    line = one_line_error(*diff(host, slower, "--fail-on", "idle_pct_delta>2"))
    assert "idle_pct is measured on hardware" in line and "it would compare nothing" in line


def test_a_host_only_run_against_a_device_run_is_still_refused(host):
    line = one_line_error(*diff(host, NAIVE, "--fail-on", "step_time_us_pct_delta>5"))
    assert line.startswith(f"traceana: error: base ({host}) has no hardware executions")
