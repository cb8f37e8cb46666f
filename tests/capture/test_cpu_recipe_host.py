"""The README's CPU recipe, end to end (issue 39): the three RMSNorm variants captured on the
CPU with the capture module, then ``traceana gaps`` and ``traceana diff`` on them as real
processes. A host-only run must show its step time and its top ops by self CPU time, and
never say "host activity only" without what to run instead; the diff of two of them must
compare them. Every figure is held to what this test computes from the raw trace JSON
(``conftest.raw_host_figures``), never to traceana's own output."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import raw_host_figures, run_process

pytestmark = pytest.mark.torch
pytest.importorskip("torch", reason="the CPU recipe captures with torch (requirements-capture.txt)")

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("compiled", "fused", "naive")  # as gaps lists the runs: by folder


@pytest.fixture(scope="module")
def profile_out(tmp_path_factory) -> Path:
    """``python -m capture rmsnorm --variant all --out DIR``, as the README's recipe runs it
    (``--backend cpu``: what ``auto`` picks on a machine without an accelerator)."""
    out = tmp_path_factory.mktemp("recipe") / "profile_out"
    done = subprocess.run(
        [sys.executable, "-m", "capture", "rmsnorm", "--variant", "all", "--backend", "cpu",
         "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def raw(run: Path) -> dict:
    (trace,) = run.glob("*_pid_*/*/trace.json")
    return raw_host_figures(json.loads(trace.read_text()))


def traceana(*args: object) -> str:
    code, out, err, *_ = run_process(*args, "--no-cache", timeout=120)
    assert code == 0, err
    return out


def test_gaps_shows_every_run_its_step_time_and_top_ops(profile_out):
    runs = {Path(r["root"]).name: r for r in
            json.loads(traceana("gaps", profile_out, "--format", "json"))["runs"]}  # fmt: skip
    assert sorted(runs) == sorted(VARIANTS)
    for variant, run in runs.items():
        want, host = raw(profile_out / variant), run["host"]
        assert want["steps"], f"{variant}: the capture recorded no ProfilerStep"
        got_steps = {s["step"]: s["duration_ns"] for s in host["steps"]}
        assert sorted(got_steps) == sorted(want["steps"]), variant
        for step, ns in want["steps"].items():  # µs with three decimals, read as ns: ±1 ns
            assert got_steps[step] == pytest.approx(ns, abs=1), (variant, step)
        median = statistics.median(want["steps"].values())
        assert host["step_time_ns"] == pytest.approx(median, abs=1), variant
        # the ops by self CPU time, in that order, with their calls and self CPU (µs)
        ranked = sorted(want["self_ns"].items(), key=lambda kv: (-kv[1], kv[0]))
        got = host["ops"][: min(5, len(ranked))]
        assert [o["name"] for o in got] == [name for name, _ in ranked[: len(got)]], variant
        for o in got:
            tolerance = 0.002 * want["calls"][o["name"]] * 3  # ns rounding of ts and dur
            assert o["self_cpu_us"] == pytest.approx(want["self_ns"][o["name"]] / 1000,
                                                     abs=tolerance), (variant, o)  # fmt: skip
            assert o["calls"] == want["calls"][o["name"]]
        commands = [n["command"] for n in host["next"]]
        assert commands == [f"traceana ops {profile_out / variant}",
                            f"traceana critical {profile_out / variant}"]  # fmt: skip


def test_gaps_text_never_says_host_only_without_what_to_run(profile_out):
    for fmt in ("table", "markdown"):
        out = traceana("gaps", profile_out, "--format", fmt)
        said = [line for line in out.splitlines() if "host activity only" in line]
        assert len(said) == 3 and all("traceana ops" in line for line in said), said
        for variant in VARIANTS:
            want = raw(profile_out / variant)
            section = out.split(f"gaps: {profile_out / variant}")[1].split("gaps: ")[0]
            (step,) = want["steps"].values()  # the recipe records one step: ProfilerStep#3
            assert f"host: step time {_duration(step)} (ProfilerStep#3)" in section, section
            top = min(want["self_ns"], key=lambda name: (-want["self_ns"][name], name))
            plain = section.replace("\\", "")  # Markdown escapes some _ of a name
            assert "ops by self CPU time" in section and f"| {top} " in plain, section
            assert f"traceana critical {profile_out / variant}" in section


def test_gaps_csv_is_the_ops_by_self_cpu_of_each_run(profile_out):
    lines = traceana("gaps", profile_out, "--format", "csv").splitlines()
    assert lines[0] == "name,calls,self_cpu_us,cpu_total_us,run"
    for variant in VARIANTS:
        rows = [line for line in lines[1:] if line.endswith(f",{profile_out / variant}")]
        assert len(rows) == len(raw(profile_out / variant)["self_ns"]), variant


def test_diff_of_two_cpu_variants_compares_their_step_time(profile_out):
    base, head = profile_out / "naive", profile_out / "fused"
    (run,) = json.loads(traceana("diff", base, head, "--format", "json"))["runs"]
    (b,), (h,) = raw(base)["steps"].values(), raw(head)["steps"].values()
    m = {r["metric"]: r for r in run["metrics"]}
    # µs with 3 decimals against ns rounded from the raw µs: within 2 ns (each end rounds once)
    assert m["step_time_us"]["base"] == pytest.approx(b / 1000, abs=0.0021)
    assert m["step_time_us"]["delta"] == pytest.approx((h - b) / 1000, abs=0.0041)
    assert run["host_only"] and run["time_metric"] == "step_time_us"
    assert run["verdict"] in ("better", "worse", "mixed", "unchanged")
    word = "better" if h < b * 0.99 else "worse" if h > b * 1.01 else None
    if word:  # the step time decides when it moved by more than 1 %
        assert run["verdict"] == word, run["verdict_text"]
    text = traceana("diff", base, head)
    assert "step time" in text.splitlines()[2] and "ops that changed most (self CPU time)" in text


def _duration(ns: int) -> str:
    """A duration as traceana writes one (docs/output.md), of the figure computed here."""
    from trace_analyzer.numbers import duration

    return duration(ns)
