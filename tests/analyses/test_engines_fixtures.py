"""`traceana engines` on the RMSNorm fixtures' device profiles, against the fixture builder's
truth record (fixtures/<variant>/device_profiles/truth.json: the generator's own figures,
computed from the rows it wrote, with the same formulas it used for the export's Summary).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

import trace_analyzer as ta

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled")
# the truth record's names of the hints, and the analysis's
HINT_KINDS = {"small_dma": "small_dma", "spills": "spill", "transposes": "transpose",
              "tensor_idle_gaps": "tensor_gaps"}
REL = 1e-9


def truth(variant: str) -> dict:
    return json.loads((ROOT / "fixtures" / variant / "device_profiles" / "truth.json").read_text())


_RESULTS: dict[str, dict] = {}


def result(variant: str) -> dict:
    """`traceana engines fixtures/<variant> --format json --top 50`, parsed (one run)."""
    if variant not in _RESULTS:
        code, out, err = run_cli("engines", ROOT / "fixtures" / variant, "--format", "json",
                                 "--top", "50")
        assert code == 0, err
        doc = json.loads(out)
        (_RESULTS[variant],) = doc["runs"] if "runs" in doc else [doc]
    return _RESULTS[variant]


@pytest.mark.parametrize("variant", VARIANTS)
def test_per_neff_figures_and_roofline_are_the_builder_s(variant):
    t, r = truth(variant), result(variant)
    got = {n["neff"]: n for n in r["neffs"]}
    assert set(got) == {n["neff"] for n in t["neffs"]}
    for want in t["neffs"]:
        n = got[want["neff"]]
        assert n["executions"] == len(want["executions"])
        for ours, theirs in (("window_ns", "window_ns"), ("model_flops", "model_flops"),
                             ("hardware_flops", "hardware_flops"),
                             ("transpose_flops", "transpose_flops"), ("hbm_bytes", "hbm_bytes")):
            assert n[ours] == want[theirs], (want["neff"], ours)
        assert (n["spill_bytes"] or 0) == want["spill_bytes"]
        for ours, theirs in (("intensity", "arithmetic_intensity"),
                             ("achieved_flops", "achieved_flops"), ("roof_flops", "roof_flops"),
                             ("headroom", "headroom")):
            assert n[ours] == pytest.approx(want[theirs], rel=REL), (want["neff"], ours)
        assert n["verdict"] == want["verdict"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_per_core_engines_dma_tops_and_throttling_are_the_builder_s(variant):
    t, r = truth(variant), result(variant)
    engines = {(e["neff"], e["pcore"], e["engine"]): e for e in r["engines"]}
    cores = {(c["neff"], c["pcore"]): c for c in r["cores"]}
    tops = r["tops"]
    for n in t["neffs"]:
        for pc in n["pcores"]:
            key = (n["neff"], pc["pcore"])
            c = cores[key]
            assert c["window_ns"] == pc["window_ns"]
            for engine, want in pc["engines"].items():
                e = engines[(*key, engine)]
                assert (e["active_ns"], e["instruction_ns"], e["instructions"], e["idle_ns"],
                        e["wait_ns"], e["waits"]) == (
                    want["active_ns"], want["instruction_ns"], want["instruction_count"],
                    want["idle_ns"], want["wait_ns"], want["wait_count"]), (key, engine)
                assert e["active_pct"] == pytest.approx(want["active_pct"], rel=REL)
            dma = pc["dma"]
            assert (c["dma_active_ns"], c["dma_bytes"], c["dma_count"]) == (
                dma["active_ns"], dma["bytes"], dma["count"])
            assert c["dma_small_pct"] == pytest.approx(100 * dma["small_count"] / dma["count"])
            assert c["throttle_ns"] == pc["throttle_ns"]
            assert c["short_gaps"] == pc["tensor_short_gaps"]["count"]
            mine = [x for x in tops if (x["neff"], x["pcore"]) == key]
            opcodes = [(f"{x['engine']}:{x['name']}", x["ns"], x["count"])
                       for x in mine if x["kind"] == "opcode"]
            # the record lists the first few, by time
            want_ops = [(o["name"], o["time_ns"], o["count"]) for o in pc["top_opcodes"]]
            assert want_ops and opcodes[: len(want_ops)] == want_ops
            hlo = [(x["name"], x["ns"], x["count"]) for x in mine if x["kind"] == "hlo"]
            want_hlo = [(o["name"], o["time_ns"], o["count"]) for o in pc["top_hlo"]]
            assert hlo[: len(want_hlo)] == want_hlo


@pytest.mark.parametrize("variant", VARIANTS)
def test_mfu_mbu_equal_the_summary_the_builder_wrote_and_nothing_mismatches(variant):
    t, r = truth(variant), result(variant)
    (p,) = r["profiles"]
    s = t["summary"]
    assert p["mfu_pct"] == pytest.approx(s["mfu_estimated_percent"], rel=REL)
    assert p["hfu_pct"] == pytest.approx(s["hfu_estimated_percent"], rel=REL)
    assert p["mbu_pct"] == pytest.approx(s["mbu_estimated_percent"], rel=REL)
    assert p["intensity"] == pytest.approx(s["mm_arithmetic_intensity"], rel=REL)
    assert p["ridge"] == pytest.approx(s["peak_flops_bandwidth_ratio"], rel=REL)
    assert p["window_ns"] == round(s["total_time"] * 1e9)
    assert r["comparison"] and not any(c["mismatch"] for c in r["comparison"])
    assert r["mismatches"] == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_hints_are_those_constructed(variant):
    t, r = truth(variant), result(variant)
    want = {(HINT_KINDS[h["hint"]], h["neff"]) for h in t["hints"]}
    assert {(h["kind"], h["neff"]) for h in r["hints"]} == want


def test_both_verdicts_occur_as_constructed():
    verdicts = {n["verdict"] for v in VARIANTS for n in result(v)["neffs"]}
    assert verdicts == {"memory-bound", "compute-bound"}
    assert {n["verdict"] for n in result("rmsnorm_naive")["neffs"]} == {"memory-bound"}
    assert {n["verdict"] for n in result("rmsnorm_compiled")["neffs"]} == {"compute-bound"}


def test_the_library_gives_the_command_s_figures():
    e = ta.engines(ta.load_device(ROOT / "fixtures" / "rmsnorm_fused"))
    assert e.neffs["mfu_pct"].to_list() == [n["mfu_pct"] for n in result("rmsnorm_fused")["neffs"]]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_bounds_ladder_is_the_builders_record(variant):
    """Each NEFF's bounds ladder (issue 36: memory-bound at the DMA's active time, at peak
    bandwidth, without spills; compute-bound at the TensorEngine's active time, at peak
    FLOPs, without transposes; a perfect pipeline) and the speed-up each rung leaves, as the
    fixture builder computed them from the rows it wrote (device_truth.ladder)."""
    want = {n["neff"]: n["ladder"] for n in truth(variant)["neffs"]}
    got = {r["neff"]: r for r in result(variant)["ladder"]}
    assert set(got) == set(want)
    for neff, rungs in want.items():
        for key, value in rungs.items():
            if value is None:
                assert got[neff][key] is None, (neff, key)
            else:
                assert got[neff][key] == pytest.approx(value, rel=REL), (neff, key)
