"""The `neuron-profile view --output-format json` device export: real Trainium2 profiles
(../shared/corpus/real3/allenkchau/, SOURCE.md), read by `traceana engines` as real processes.

Every expected figure is computed here from the raw JSON in a few plain lines: per physical
core and engine the summed `active_time` durations; over the profile, the union of an
engine's `active_time` intervals on every core, which the export's own `summary` holds (to
0.5 %: it counts in ps, its rows in ns). Named alone or inside its folder, one answer.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import run_process, union_of

REAL3 = Path(__file__).resolve().parents[2].parent / "shared/corpus/real3/allenkchau"
EXPORTS = {
    "fused_attention": "json_reports/fused_exec_2_profile_full.json",
    "baseline_bf16_s512": "json_reports/baseline_exec_2_profile_full.json",
}
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")


def export(folder: str) -> Path:
    path = REAL3 / folder / EXPORTS[folder]
    if not path.is_file():
        pytest.skip(f"{path} is absent: the shared corpus is not checked out beside the repo")
    return path


def union(spans: list[tuple[int, int]]) -> int:
    """The length of the union of ``spans`` (those that overlap or touch are one)."""
    return sum(e - s for s, e in union_of(spans, apart=0))


def engines_json(path: Path) -> dict:
    code, out, err, *_ = run_process("engines", path, "--format", "json", timeout=120)
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    return run


@pytest.mark.parametrize("folder", list(EXPORTS))
def test_engines_active_time_equals_the_export_s_active_time_and_summary(folder):
    path = export(folder)
    raw = json.loads(path.read_bytes())
    summary = raw["summary"][0]
    per_core: dict[tuple[int, str], int] = defaultdict(int)
    spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in raw["active_time"]:
        per_core[(r["pcore_idx"], r["engine"])] += r["duration_ns"]
        spans[r["engine"]].append((r["start_ts"], r["end_ts"]))

    run = engines_json(path)
    ours = {(r["pcore"], r["engine"]): r["active_ns"] for r in run["engines"]}
    assert ours == dict(per_core)
    assert {r["neff"] for r in run["engines"]} == {raw["neff_header"][0]["network_name"]}
    compared = {r["figure"]: r for r in run["comparison"]}
    for e in ENGINES:
        theirs_ns = summary[f"{e}_engine_active_time"] * 1e9
        assert abs(union(spans[e]) - theirs_ns) <= 0.005 * theirs_ns  # the export agrees
        row = compared[f"{e} active"]
        assert row["ours"] == union(spans[e]) and not row["mismatch"], row
        pct = compared[f"{e} active %"]  # the export's fraction of total_time, as a %
        assert pct["export"] == pytest.approx(100 * summary[f"{e}_engine_active_time_percent"])
        assert not pct["mismatch"], pct
    dma = [(r["timestamp"], r["timestamp"] + r["duration"]) for r in raw["dma"]]
    assert compared["DMA active"]["ours"] == union(dma) and not compared["DMA active"]["mismatch"]
    ins = raw["instruction"]
    span = max(r["timestamp"] + r["duration"] for r in ins) - min(r["timestamp"] for r in ins)
    assert compared["total time"]["ours"] == span and not compared["total time"]["mismatch"]
    for side in ("read", "write"):
        row = compared[f"HBM {side}"]
        assert row["ours"] == sum(r.get(f"hbm_{side}_bytes") or 0 for r in ins)
        assert row["ours"] == summary[f"hbm_{side}_bytes"]
    (note,) = run["notes"]  # what the JSON lacks next to the Parquet tables: named, no error
    assert "ExecutionInfo" in note and "raw_flops" in note


@pytest.mark.parametrize("folder", list(EXPORTS))
def test_the_same_answer_named_alone_and_inside_its_folder(folder):
    alone = engines_json(export(folder))
    inside = engines_json(REAL3 / folder)
    for table in ("profiles", "neffs", "cores", "engines", "tops", "comparison", "ladder"):
        if table == "profiles":
            strip = [{k: v for k, v in r.items() if k != "root"} for r in alone[table]]
            assert strip == [{k: v for k, v in r.items() if k != "root"} for r in inside[table]]
            continue
        assert alone[table] == inside[table], table
    assert inside["unexported"] == []  # its NTFF is the one the export was made from
    assert alone["notes"] == inside["notes"]


def test_info_lists_the_export_as_a_device_profile_source():
    path = export("fused_attention")
    for where in (path, REAL3 / "fused_attention"):
        code, out, err, *_ = run_process("info", where, "--no-cache", "--format", "json")
        assert code == 0, err
        sources = [s for run in json.loads(out)["runs"] for s in run["sources"]]
        (src,) = [s for s in sources if s["path"] == str(path)]
        assert src["format"] == "neuron-profile-json"
        assert "traceana engines" in src["notes"][0]
        assert "not a trace" not in out and "host activity only" not in out


def test_a_json_that_is_no_export_named_to_engines_is_one_line(tmp_path):
    other = tmp_path / "other.json"
    other.write_text('{"summary": [], "metadata": []}')
    code, out, err, *_ = run_process("engines", other)
    assert code == 2 and "not a neuron-profile device-profile JSON export" in err
    code, out, err, *_ = run_process("engines", tmp_path)  # in a folder: passed by
    assert code == 2 and "no device-profile export" in err
