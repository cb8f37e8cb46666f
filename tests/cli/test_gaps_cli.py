"""The `traceana gaps` command's contract: output formats, options, exit codes, the corpus,
and one tiny inline Kineto trace per gap cause.

Expected values come from the fixtures' truth.json, the inline inputs, and arithmetic here.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from pathlib import Path

import pytest
from conftest import CORPUS_DATA, X, kineto, one_line_error, run_cli, write_trace

import trace_analyzer

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
NAIVE = FIXTURES / "rmsnorm_naive"
CAUSES = {"host_dispatch", "launch_blocked", "event_wait", "launch_latency", "transfer", "sync", "graph", "collective", "runtime",
          "uncorrelated", "other"}  # docs/gaps.md, "The gap model"


@functools.cache
def truth(path: Path) -> dict:
    return json.loads((path / "truth.json").read_text())


@functools.cache
def cli(*args: str) -> tuple[int, str, str]:
    """``traceana gaps ARGS`` (cached: the inputs here are read-only)."""
    return run_cli("gaps", *args)


def naive_idle_pct() -> float:
    t = truth(NAIVE)
    idle = sum(g["duration_ns"] for g in t["gaps"])
    window = (max(e["end_ns"] for e in t["executions"])
              - min(e["start_ns"] for e in t["executions"]))
    return 100 * idle / window


# --- JSON -------------------------------------------------------------------------------------

def test_json_has_the_documented_fields():
    code, out, err = cli(str(NAIVE), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema_version"] == 1
    (run,) = doc["runs"]
    s = run["summary"]
    for k in ("busy_ns", "idle_ns", "gap_count", "executions"):
        assert isinstance(s[k], int), k
    assert isinstance(s["idle_pct"], float)
    assert isinstance(run["lanes"], list) and run["lanes"]
    for lane in run["lanes"]:
        assert isinstance(lane["lane"], str)
        for k in ("busy_ns", "idle_ns", "gap_count"):
            assert isinstance(lane[k], int), k
    t = truth(NAIVE)
    assert len(run["gaps"]) == len(t["gaps"])
    for g in run["gaps"]:
        assert isinstance(g["lane"], str)
        for k in ("start_ns", "end_ns", "duration_ns"):
            assert isinstance(g[k], int), k
        assert g["end_ns"] - g["start_ns"] == g["duration_ns"] > 0
        assert g["cause"] in CAUSES
        assert g["next_op"] is None or isinstance(g["next_op"], str)
    assert s["idle_pct"] == pytest.approx(naive_idle_pct(), abs=0.005)


def test_library_call_gives_the_same_summary_as_the_json():
    code, out, _ = cli(str(NAIVE), "--format", "json")
    (run,) = json.loads(out)["runs"]
    result = trace_analyzer.gaps(trace_analyzer.load(NAIVE))
    assert isinstance(result, trace_analyzer.GapsResult)
    assert json.loads(json.dumps(result.summary)) == run["summary"]


# --- Markdown -----------------------------------------------------------------------------------

def test_markdown_leads_with_the_verdict_then_the_top_gaps_and_no_dump():
    code, out, err = cli(str(NAIVE), "--format", "markdown")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("#")
    verdict = next(line for line in lines[1:] if line.strip())
    assert "idle" in verdict and f"{round(naive_idle_pct(), 2)} %" in verdict
    assert "<details>" not in out  # no unbounded list of every gap
    assert len(lines) < 60
    titles = [line for line in lines if line.startswith("### ")]
    assert titles == ["### by device", "### longest gaps (no compute on the device; at = time after the "
                      "window start)", "### idle before each op (by cause)",
                      "### below the ops: each op's NEFF on its engines (device profiles: "
                      "`traceana engines`)",  # the fixture holds device-profile exports
                      "### next steps"]
    start = lines.index(titles[1]) + 2
    table = lines[start:lines.index("", start)]
    assert table[1].startswith("|---") and "---:|" in table[1]  # numbers right-aligned
    rows = table[2:]
    t = truth(NAIVE)
    assert len(rows) == len(t["gaps"])  # 5 gaps: all of them (--top 10), the longest first
    for g in t["gaps"]:
        assert any(g["next_op"] in row for row in rows)
    assert "more gaps" not in out


def test_markdown_says_how_many_gaps_it_leaves_out():
    code, out, err = cli(str(NAIVE), "--format", "markdown", "--top", "2")
    assert code == 0, err
    n = len(truth(NAIVE)["gaps"])
    assert f"… and {n - 2} more gaps: `--top N` shows more, `--format json` has them all" in out
    assert "… and 2 more ops: `--top N` shows more" in out  # 4 ops, 2 shown


def test_text_reports_write_numbers_with_units_and_no_null():
    for fmt in ("table", "markdown"):
        code, out, err = cli(str(NAIVE), "--format", fmt)
        assert code == 0, err
        assert "172.1 µs" in out  # the longest gap, auto-scaled
        lines = out.splitlines()
        headers = [a for a, b in zip(lines, lines[1:], strict=False) if b.startswith("|---")]
        # by device, longest gaps, idle before each op, and the engines below the ops
        assert len(headers) == 4 and not any("µs" in h or " ms" in h for h in headers)
        assert "null" not in out and "None" not in out
        # the columns of causes that left no idle are hidden (graph, collective, ...)
        header = next(ln for ln in out.splitlines() if ln.startswith("| op "))
        assert "transfer" in header and "collective" not in header and "graph" not in header


# # --- CSV ----------------------------------------------------------------------------------------

def test_csv_has_one_row_per_gap():
    code, out, err = cli(str(NAIVE), "--format", "csv")
    assert code == 0, err
    got = list(csv.DictReader(io.StringIO(out)))
    t = truth(NAIVE)
    assert len(got) == len(t["gaps"])
    assert sorted((r["lane"], int(r["start_ns"]), int(r["end_ns"]), int(r["duration_ns"]),
                   r["next_op"]) for r in got) == \
        sorted((g["lane"], g["start_ns"], g["end_ns"], g["duration_ns"], g["next_op"])
               for g in t["gaps"])
    assert {r["cause"] for r in got} <= CAUSES


# --- durations and --fail-on ---------------------------------------------------------------------

@pytest.mark.parametrize("text,ns", [("5us", 5_000), ("1.2ms", 1_200_000), ("300ns", 300),
                                     ("0.5 ms", 500_000), ("5µs", 5_000)])
def test_durations_take_units(text, ns):
    code, out, err = cli(str(NAIVE), "--min-gap", text, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["min_gap_ns"] == ns
    t = truth(NAIVE)
    assert doc["runs"][0]["summary"]["gap_count"] == sum(g["duration_ns"] >= ns
                                                         for g in t["gaps"])


@pytest.mark.parametrize("text", ["5", "1.2", "junk", "5 parsecs", "us", ""])
def test_a_duration_without_a_unit_is_a_usage_error(text):
    line = one_line_error(*cli(str(NAIVE), "--min-gap", text))
    assert repr(text) in line


@pytest.mark.parametrize("window,message", [
    ("2ms", "--window wants START:END, e.g. 0:2ms or 0.5ms:2ms"),
    ("2:3", "'2' has no unit: give one of ns, us (or µs), ms, s, e.g. 2us or 2ms (0 alone "
     "needs none)"),
    ("0:junk", "'junk' is not a duration: give a number and a unit, e.g. 5us, 1.2ms, 300ns"),
    ("2ms:1ms", "--window START:END needs START < END"),
    ("1ms:1ms", "--window START:END needs START < END"),
])
def test_a_bad_window_is_a_usage_error(window, message):
    line = one_line_error(*cli(str(NAIVE), "--window", window, "--no-cache"))
    assert line == f"traceana: error: {message}"


@pytest.mark.parametrize("window", ["0:100ms", "0:2.5ms", "0ms:2.5ms", "0.0:100ms"])
def test_zero_alone_is_a_duration(window):
    code, out, err = cli(str(NAIVE), "--window", window, "--format", "json", "--no-cache")
    assert code == 0, err
    assert json.loads(out)["runs"][0]["window"]["origin"] == "--window"
    code, out, err = cli(str(NAIVE), "--min-gap", "0", "--format", "json")
    assert code == 0 and json.loads(out)["min_gap_ns"] == 0, err


def test_a_bare_number_is_refused_naming_the_units():
    line = one_line_error(*cli(str(NAIVE), "--min-gap", "40"))
    assert line == ("traceana: error: '40' has no unit: give one of ns, us (or µs), ms, s, "
                    "e.g. 40us or 40ms (0 alone needs none)")


@pytest.mark.parametrize("expr,says", [
    ("gap_max_us>100us", "the metric's unit is in its name (gap_max_us is in µs): "
                         "write 'gap_max_us>100'"),
    ("gap_max_us>1ms", "(gap_max_us is in µs): write 'gap_max_us>1000'"),
    ("idle_pct>20%", "(idle_pct is in %): write 'idle_pct>20'"),
    ("gap_count>5us", "gap_count is a plain number: write 'gap_count>5'"),
])
def test_a_fail_on_number_with_a_unit_says_the_metric_unit(expr, says):
    line = one_line_error(*cli(str(NAIVE), "--fail-on", expr))
    assert line.startswith(f"traceana: error: --fail-on '{expr}': ") and line.endswith(says)


def test_fail_on_prints_the_report_then_exits_1():
    code, out, err = cli(str(NAIVE), "--fail-on", "idle_pct>5")
    assert code == 1
    assert out.startswith("gaps: ") and "idle" in out  # the whole report is printed
    assert "idle before each op" in out
    assert "idle_pct>5" in err
    assert f"idle_pct = {round(naive_idle_pct(), 2)}" in err
    assert "Traceback" not in err


def test_fail_on_that_does_not_hold_exits_0():
    code, out, err = cli(str(NAIVE), "--fail-on", "idle_pct>50")
    assert (code, err) == (0, "")
    assert out.startswith("gaps: ")


def test_fail_on_gates_in_json_too():
    code, out, err = cli(str(NAIVE), "--format", "json", "--fail-on", "gap_count>=5",
                         "--fail-on", "gap_max_us>1000")
    assert code == 1
    (run,) = json.loads(out)["runs"]
    assert len(run["failed"]) == 1 and "gap_count>=5" in run["failed"][0]
    assert "gap_count>=5" in err and "gap_max_us" not in err


@pytest.mark.parametrize("expr", ["bogus>1", "idle_pct", "idle_pct>>5", "idle_pct>five",
                                  ">5", "idle pct>5"])
def test_a_bad_fail_on_is_a_usage_error(expr):
    line = one_line_error(*cli(str(NAIVE), "--fail-on", expr))
    assert "--fail-on" in line


def test_unknown_metric_is_named():
    line = one_line_error(*cli(str(NAIVE), "--fail-on", "bogus>1"))
    assert "'bogus'" in line and "idle_pct" in line  # names it and lists the known ones


def test_absent_step_is_a_usage_error_listing_the_steps():
    step = int(truth(NAIVE)["profiler_step"]["name"].rsplit("#", 1)[1])
    line = one_line_error(*cli(str(NAIVE), "--step", "99"))
    assert line == f"traceana: error: no ProfilerStep#99 in this profile; its steps: {step}"


def test_absent_step_in_a_profile_without_steps(tmp_path):
    path = write_trace(tmp_path / "trace.json", kineto(first_kernel() + [
        op("aten::b", 270, 20, 3), launch(275, 13, 3), kernel("k2", 300, 50, 13)],
        baseTimeNanoseconds=BASE))
    line = one_line_error(*run_cli("gaps", path, "--step", "1", "--no-cache"))
    assert line.endswith("no ProfilerStep#1 in this profile; it has no ProfilerStep annotations")


def test_absent_step_names_runs_of_steps(tmp_path):
    steps = [X("user_annotation", f"ProfilerStep#{n}", 100 * n, 90, pid=HOST, tid=HOST)
             for n in (4, 5, 6, 9)]
    path = write_trace(tmp_path / "trace.json", kineto(steps + first_kernel(),
                                                      baseTimeNanoseconds=BASE))
    line = one_line_error(*run_cli("gaps", path, "--step", "1", "--no-cache"))
    assert line.endswith("no ProfilerStep#1 in this profile; its steps: 4–6, 9")


@pytest.mark.parametrize("name,fmt", [("out.xlsx", None), ("out", None), ("out.xlsx", "table")])
def test_an_output_extension_that_names_no_format(tmp_path, name, fmt):
    target = tmp_path / name
    args = ("gaps", NAIVE, "-o", target, "--no-cache") + (("--format", fmt) if fmt else ())
    if fmt is None:
        line = one_line_error(*run_cli(*args))
        assert line.startswith(f"traceana: error: -o {target}: the extension names no output "
                               "format (.txt (table), .md/.markdown (markdown), .json (json), .csv (csv))")
        assert line.endswith("give --format to write another name")
        assert not target.exists()
    else:
        code, out, err = run_cli(*args)
        assert (code, out) == (0, ""), err
        assert target.read_text().startswith("gaps: ")


@pytest.mark.parametrize("ext,start", [(".txt", "gaps: "), (".md", "## gaps: "),
                                       (".json", "{"), (".csv", "lane,")])
def test_the_output_extension_names_the_format(tmp_path, ext, start):
    target = tmp_path / f"out{ext}"
    code, _, err = run_cli("gaps", NAIVE, "-o", target, "--no-cache")
    assert code == 0, err
    assert target.read_text().startswith(start)


def test_make_demo_command_exits_0():
    make = (ROOT / "Makefile").read_text()
    demo = re.search(r"^DEMO\s*\?=\s*(\S+)", make, re.M)[1]
    recipe = re.search(r"^demo:.*\n\t(.+)$", make, re.M)[1]
    assert recipe.split()[1:] == ["gaps", "$(DEMO)"]
    code, out, err = cli(str(ROOT / demo))
    assert code == 0, err
    assert out.startswith("gaps: ") and "% of the" in out


# --- a run without gaps ---------------------------------------------------------------------------

FUSED = FIXTURES / "rmsnorm_fused"  # one execution: no gap (its truth.json lists none)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_verdict_of_a_run_without_gaps_prints_no_none(fmt):
    assert truth(FUSED)["gaps"] == []
    code, out, err = cli(str(FUSED), "--format", fmt)
    assert code == 0, err
    assert "None" not in out


def test_by_op_on_a_run_without_gaps_draws_no_empty_table():
    code, out, err = cli(str(FUSED), "--by", "op")
    assert code == 0, err
    assert "||" not in out.splitlines()


@pytest.mark.parametrize("args,message", [
    (("--min-gap=-5us",), "--min-gap must not be negative"),
    (("--lane", "no/such/lane*"), "no hardware lane matches --lane 'no/such/lane*'"),
])
def test_negative_min_gap_and_a_lane_glob_matching_nothing_are_usage_errors(args, message):
    assert one_line_error(*cli(str(NAIVE), *args)) == f"traceana: error: {message}"


def test_min_gap_trims_lists_but_idle_by_cause_still_adds_up_to_idle():
    code, out, err = cli(str(NAIVE), "--min-gap", "30us", "--format", "json")
    assert code == 0, err
    summary = json.loads(out)["runs"][0]["summary"]
    kept = [g for g in truth(NAIVE)["gaps"] if g["duration_ns"] >= 30_000]
    assert summary["gap_count"] == len(kept)
    assert sum(summary["idle_by_cause_ns"].values()) == summary["idle_ns"]
    assert summary["idle_ns"] == sum(g["duration_ns"] for g in truth(NAIVE)["gaps"])


# --- the corpus -----------------------------------------------------------------------------------

CORPUS_FILES = sorted(
    [str(p.relative_to(CORPUS_DATA)) for p in CORPUS_DATA.rglob("*.json.gz")
     if not p.name.endswith("_et.json.gz")] + ["call_stack/backward_thread.json"]
) if CORPUS_DATA.is_dir() else []


@pytest.mark.parametrize("rel", CORPUS_FILES)
def test_every_corpus_trace_gives_non_negative_idle(corpus, rel):
    code, out, err = cli(str(corpus / rel), "--format", "json")
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert runs
    for run in runs:
        s = run["summary"]
        assert s["idle_ns"] >= 0
        # a lane's idle is the time in its gaps listed (all of them: no --min-gap); a device's
        # gaps are its time without compute, each split into its states, and its idle holds
        # their idle (and the idle at its edges, in no gap); its states add up to the window
        for key, rows, listed in (("lane", run["lanes"], run["gaps"]),
                                  ("device", run["devices"], run["device_gaps"])):
            for row in rows:
                assert row["idle_ns"] >= 0, row
                assert row["busy_ns"] <= row["window_ns"], row
                mine = [g for g in listed if g[key] == row[key]]
                if key == "lane":
                    assert row["idle_ns"] == sum(g["duration_ns"] for g in mine), row
                    continue
                states = ("busy_ns", "exposed_communication_ns", "memory_ns", "idle_ns",
                          "leading_ns", "trailing_ns")
                assert sum(row[k] for k in states) == row["window_ns"], row
                assert row["idle_ns"] >= sum(g["idle_ns"] for g in mine), row
                for g in mine:
                    parts = (g["exposed_communication_ns"], g["memory_ns"], g["idle_ns"])
                    assert min(parts) >= 0 and sum(parts) == g["duration_ns"], g
        assert s["idle_ns"] >= sum(g["idle_ns"] for g in run["device_gaps"])
        assert all(g["duration_ns"] > 0 and g["cause"] in CAUSES for g in run["gaps"])
        assert all(g["evidence"] for g in (*run["gaps"], *run["device_gaps"])), "no evidence"


def test_cpu_only_trace_says_nothing_ran_on_hardware(corpus):
    (path,) = (corpus / "cpu_only").glob("*.json.gz")
    code, out, err = cli(str(path))
    assert code == 0, err
    assert "no hardware lanes" in out
    code, out, err = cli(str(path), "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["summary"]["executions"] == 0 and run["gaps"] == []


# --- causes on tiny Kineto GPU traces ------------------------------------------------------------

BASE = 1_793_620_800_000_000_000  # baseTimeNanoseconds; ts below are µs after it
HOST, GPU, STREAM = 4242, 0, 7


def op(name, ts, dur, ext):
    return X("cpu_op", name, ts, dur, pid=HOST, tid=HOST, **{"External id": ext})


def launch(ts, corr, ext, dur=5, name="cudaLaunchKernel"):
    return X("cuda_runtime", name, ts, dur, pid=HOST, tid=HOST, correlation=corr,
             **{"External id": ext})


def kernel(name, ts, dur, corr=None):
    args = {"device": GPU, "stream": STREAM}
    if corr is not None:
        args["correlation"] = corr
    return X("kernel", name, ts, dur, pid=GPU, tid=STREAM, **args)


def first_kernel():
    """aten::a launches k1, which runs 200..250 µs: the lane falls idle at 250 µs."""
    return [op("aten::a", 100, 20, 1), launch(105, 11, 1), kernel("k1", 200, 50, 11)]


CASES = {
    # a host-to-device copy on the GPU covers 80 of the 100 µs before k2 (k2 was launched
    # long before the lane fell idle, so without the copy it would be `runtime`)
    "transfer": (first_kernel() + [
        op("aten::copy_", 130, 20, 2), launch(135, 12, 2, name="cudaMemcpyAsync"),
        X("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 255, 80, pid=GPU, tid=STREAM,
          device=GPU, stream=STREAM, correlation=12),
        op("aten::b", 140, 20, 3), launch(145, 13, 3), kernel("k2", 350, 50, 13)],
        (250, 350), "aten::b"),
    # k2 was queued at 145 µs, long before the lane fell idle, and the stream waits on an
    # event (a device-side cuda_sync on the same stream) for 90 of the 100 µs
    "sync": (first_kernel() + [
        op("aten::b", 140, 20, 3), launch(145, 13, 3),
        X("cuda_sync", "Stream Wait Event", 255, 90, pid=GPU, tid=STREAM, device=GPU,
          stream=STREAM),
        kernel("k2", 350, 50, 13)],
        (250, 350), "aten::b"),
    # the host sits in cudaDeviceSynchronize for 95 of the 100 µs and launches k2 only after
    # the lane fell idle: the host was late (host_dispatch), and its split says where it was
    "host_dispatch_despite_a_host_sync": (first_kernel() + [
        X("cuda_runtime", "cudaDeviceSynchronize", 250, 95, pid=HOST, tid=HOST),
        op("aten::b", 346, 20, 3), launch(348, 13, 3), kernel("k2", 350, 50, 13)],
        (250, 350), "aten::b"),
    # k2 was queued before k1 ended and starts 3 µs after it: the device's launch latency
    "launch_latency": (first_kernel() + [
        op("aten::b", 130, 20, 3), launch(135, 13, 3), kernel("k2", 253, 50, 13)],
        (250, 253), "aten::b"),
    # k2 has no launch and no correlation: nothing links it to an op (aten::b runs in the
    # gap but launches nothing)
    "uncorrelated": (first_kernel() + [op("aten::b", 260, 20, 3), kernel("k2", 300, 50)],
                     (250, 300), None),
    # k2's launch starts at 275 µs, after k1 ended at 250 µs
    "host_dispatch": (first_kernel() + [
        op("aten::b", 270, 20, 3), launch(275, 13, 3), kernel("k2", 300, 50, 13)],
        (250, 300), "aten::b"),
    # k2's launch starts at 135 µs, before k1 ended; k2 still starts only at 300 µs
    "runtime": (first_kernel() + [
        op("aten::b", 130, 20, 3), launch(135, 13, 3), kernel("k2", 300, 50, 13)],
        (250, 300), "aten::b"),
    # a copy covering only 20 of the 100 µs does not explain the gap: the launch came
    # early, so the rule falls through to `runtime`
    "runtime_despite_a_short_copy": (first_kernel() + [
        op("aten::copy_", 130, 20, 2), launch(135, 12, 2, name="cudaMemcpyAsync"),
        X("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 300, 20, pid=GPU, tid=STREAM,
          device=GPU, stream=STREAM, correlation=12),
        op("aten::b", 140, 20, 3), launch(145, 13, 3), kernel("k2", 350, 50, 13)],
        (250, 350), "aten::b"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_cause_on_a_tiny_kineto_trace(tmp_path, case):
    events, (idle_from, idle_to), next_op = CASES[case]
    assert 5 <= len(events) <= 15
    path = write_trace(tmp_path / "trace.json", kineto(events, baseTimeNanoseconds=BASE))
    code, out, err = run_cli("gaps", path, "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    (gap,) = run["gaps"]
    assert (gap["start_ns"], gap["end_ns"]) == (BASE + idle_from * 1000, BASE + idle_to * 1000)
    assert gap["duration_ns"] == (idle_to - idle_from) * 1000
    assert gap["next_op"] == next_op
    assert gap["cause"] == case.split("_despite")[0]
    s = run["summary"]
    (device_gap,) = run["device_gaps"]
    copied = {"transfer": 80_000, "runtime_despite_a_short_copy": 20_000}.get(case, 0)
    # a copy alone on the device is its copying time, not idle (docs/gaps.md)
    assert (device_gap["memory_ns"], s["memory_ns"]) == (copied, copied)
    idle = gap["duration_ns"] - copied
    assert s["idle_by_cause_ns"][gap["cause"]] == s["idle_ns"] == device_gap["idle_ns"] == idle
    assert s["executions"] == 2
    if case == "host_dispatch_despite_a_host_sync":  # late 250..348 µs: the sync call to 345,
        # nothing 345..346, aten::b from 346 to the launch at 348
        assert (gap["host_sync_ns"], gap["host_untraced_ns"], gap["host_framework_ns"],
                gap["host_runtime_ns"]) == (95_000, 1_000, 2_000, 0)
        assert gap["evidence"].startswith("next launched 98 µs after the lane went idle")
