"""From an op down to its engines (questions/engines/below.py; `gaps` and `ops` show it): on the
RMSNorm fixtures, each op's NEFF and that NEFF's figures, against the fixture builder's truth
record (fixtures/<variant>/device_profiles/truth.json: which op each execution ran, each
NEFF's engines and roofline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled")


def truth(variant: str) -> dict:
    return json.loads((ROOT / "fixtures" / variant / "device_profiles" / "truth.json").read_text())


def json_run(command: str, path: Path) -> dict:
    code, out, err = run_cli(command, path, "--format", "json", "--no-cache")
    assert code == 0, err
    doc = json.loads(out)
    (run,) = doc["runs"] if "runs" in doc else [doc]
    return run


@pytest.mark.parametrize("command", ["gaps", "ops"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_each_op_reaches_the_engines_of_the_neff_it_ran(variant, command):
    t = truth(variant)
    rows = json_run(command, ROOT / "fixtures" / variant)["engines"]
    want = {}
    for e in t["executions"]:
        want[(e["op"], e["neff"])] = want.get((e["op"], e["neff"]), 0) + 1
    assert {(r["op"], r["neff"]): r["executions"] for r in rows} == want
    peak = t["peak_flops"]
    neffs = {n["neff"]: n for n in t["neffs"]}
    for r in rows:
        n = neffs[r["neff"]]
        assert r["verdict"] == n["verdict"]
        assert r["headroom"] == pytest.approx(n["headroom"], rel=1e-9)
        assert r["intensity"] == pytest.approx(n["arithmetic_intensity"], rel=1e-9)
        assert r["mfu_pct"] == pytest.approx(
            100 * n["model_flops"] / (n["window_ns"] / 1e9 * peak), rel=1e-9)
        (core,) = n["pcores"]  # one physical core in every fixture
        engines = core["engines"]
        busiest = max(engines, key=lambda k: engines[k]["active_ns"])
        assert r["busiest"] == busiest
        assert r["busiest_pct"] == pytest.approx(engines[busiest]["active_pct"], rel=1e-9)


def test_a_run_without_device_profiles_has_no_engines_below(corpus):
    trace = corpus / "critical_path" / "simple_add"
    assert "engines" not in json_run("gaps", trace)
    assert "engines" not in json_run("ops", trace)
    assert "engines" not in json_run("gaps", ROOT / "fixtures" / "rmsnorm_naive_lnc2")


def test_the_text_reports_show_the_engines_below_the_ops():
    for command in ("gaps", "ops"):
        code, out, err = run_cli(command, ROOT / "fixtures" / "rmsnorm_naive", "--no-cache")
        assert code == 0, err
        assert "below the ops: each op's NEFF on its engines" in out
        assert "memory-bound" in out


def test_with_top_the_table_below_follows_the_ops_shown_and_counts_the_rest():
    # ops --top 2 shows the two ops with the most device time; the table below them keeps
    # only their rows, in that order, and says how many rows it left out
    t = truth("rmsnorm_naive")
    code, out, err = run_cli(
        "ops", ROOT / "fixtures" / "rmsnorm_naive", "--format", "markdown", "--top", "2",
        "--no-cache")
    assert code == 0, err
    below = out.split("### below the ops")[1]
    rows = [ln.split("|")[1].strip() for ln in below.splitlines() if ln.startswith("| aten")]
    shown = [ln.split("|")[1].strip() for ln in out.split("### below the ops")[0].splitlines()
             if ln.startswith("| aten")]
    assert len(shown) == 2 and set(rows) == set(shown)
    assert rows == sorted(rows, key=shown.index)  # in the order of the table above
    pairs = {(e["op"], e["neff"]) for e in t["executions"]}
    left = len(pairs) - len(rows)
    assert left > 0 and f"… and {left} more rows" in below
