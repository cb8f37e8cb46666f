"""Next steps (issue 16): the naive RMSNorm profile's aten::add gap is a transfer with the
host-scalar hint, and the summary recommends fusion with the saving its gaps bound. The
expected figures come from the fixture generator's record (fixtures/*/truth.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import trace_analyzer as ta

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("variant", ["rmsnorm_naive", "rmsnorm_naive_lnc2"])
def test_the_naive_profile_says_what_to_change(variant):
    truth = json.loads((FIXTURES / variant / "truth.json").read_text())
    lane0 = [g for g in truth["gaps"] if g["lane"].endswith(":0")]
    copied = [g for g in lane0 if g["transfer_in_gap"]]
    late = [g for g in lane0 if g["dispatch_after_idle"] and not g["transfer_in_gap"]]
    g = ta.gaps(ta.load(FIXTURES / variant, cache=False))
    by_op = {h["op"]: h for h in g.hints if h["op"]}
    (add,) = [x for x in copied if x["next_op"] == "aten::add"]
    hint = by_op["aten::add"]
    assert hint["cause"] == "transfer" and hint["idle_ns"] == add["duration_ns"]
    assert "CPU-side scalar" in hint["hint"] and "create it on the device once" in hint["hint"]
    (fusion,) = [h for h in g.hints if h["op"] is None and h["cause"] == "host_dispatch"]
    assert fusion["gaps"] == len(late)
    assert fusion["idle_ns"] == sum(x["duration_ns"] for x in late)
    assert f"{sum(x['duration_ns'] for x in late) / 1000:.1f} µs" in fusion["hint"]
    assert "fusing" in fusion["hint"] and "RMSNorm" not in fusion["hint"]  # figures of this run only


def test_every_output_carries_the_next_steps(tmp_path):
    from conftest import run_cli
    for fmt in ("table", "markdown"):
        code, out, err = run_cli("gaps", FIXTURES / "rmsnorm_naive", "--format", fmt, "--no-cache")
        assert code == 0, err
        assert "next steps" in out and "create it on the device once" in out
    code, out, err = run_cli("gaps", FIXTURES / "rmsnorm_naive", "--format", "json", "--no-cache")
    (run,) = json.loads(out)["runs"]
    assert {h["cause"] for h in run["hints"]} == {"transfer", "host_dispatch", "runtime"}
    assert all(g["evidence"] for g in run["gaps"])


def test_by_step_gives_one_row_per_profiler_step():
    """--by step: the naive profile's one ProfilerStep holds every gap before its executions
    (truth.json: the step and the gaps the generator made)."""
    truth = json.loads((FIXTURES / "rmsnorm_naive" / "truth.json").read_text())
    step = int(truth["profiler_step"]["name"].rsplit("#", 1)[1])
    gaps = truth["gaps"]
    g = ta.gaps(ta.load(FIXTURES / "rmsnorm_naive", cache=False))
    assert g.steps["step"].to_list() == [step]
    assert g.steps["idle_ns"].to_list() == [sum(x["duration_ns"] for x in gaps)]
    assert g.steps["gaps"].to_list() == [len(gaps)]
    from conftest import run_cli
    code, out, err = run_cli("gaps", FIXTURES / "rmsnorm_naive", "--by", "step", "--no-cache")
    assert code == 0, err
    assert "by step" in out and re.search(rf"\|\s+{step} \|", out), out
