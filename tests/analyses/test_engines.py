"""`traceana engines` (questions/engines/analysis.py) on small device profiles built in memory, with every
expected figure worked out by hand here (docs/device.md has the same worked example).

The example: one NEFF, ``rms.neff``, one execution from 1,000 to 11,000 ns on physical core 0
(window 10 µs); a device of 128 × 128 TensorEngine at 1 GHz on one core (peak 32.768 TFLOP/s)
and 409.6 GB/s of HBM (ridge 80 FLOP/byte).

    tensor  MATMUL     1,000- 3,000  dot.1   32,768,000 FLOPs (hardware ×2)
    tensor  EVENT_SEMAPHORE 3,000-4,000      a wait
    tensor  MATMUL     4,000- 6,000  dot.1   32,768,000 FLOPs
    tensor  MATMUL    10,000-11,000  dot.2   16,384,000 FLOPs; 32,768,000 of transposes
    vector  TENSOR_TENSOR 1,000-5,000 add.1  reads 1,024,000 B of HBM
    vector  TENSOR_REDUCE 5,000-7,000 reduce.2
    vector  TENSOR_REDUCE 6,000-8,000 reduce.2  writes 1,024,000 B of HBM
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from trace_analyzer.errors import UsageError
from trace_analyzer.model.device import (
    ACTIVE_COLUMNS,
    DMA_COLUMNS,
    EXECUTION_COLUMNS,
    INSTRUCTION_COLUMNS,
    THROTTLE_COLUMNS,
    DeviceProfile,
    DeviceRun,
)
from trace_analyzer.questions.engines.analysis import EnginesResult, engines

NEFF = "rms.neff"
METADATA = {
    "tensor_engine_num_rows": 128, "tensor_engine_num_cols": 128,
    "tensor_engine_clock_freq": 1.0, "num_physical_cores": 1,
    "hbm_ddr_bandwidth": 409.6e9,
}  # fmt: skip
PEAK, BW = 128 * 128 * 2 * 1e9, 409.6e9


def frame(columns: dict[str, Any], rows: list[dict[str, Any]]) -> pl.DataFrame:
    """A contract table of ``rows`` (absent columns null; ``duration_ns`` from the times)."""
    full = []
    for r in rows:
        r = dict(r)
        if "duration_ns" in columns and "start_ns" in r:
            r.setdefault("duration_ns", r["end_ns"] - r["start_ns"])
        full.append({c: r.get(c) for c in columns})
    return pl.DataFrame(full, schema=columns)


def ins(engine, opcode, start, end, hlo=None, *, neff=NEFF, pcore=0, **more):
    wait = opcode.startswith("EVENT_SEMAPHORE")
    base = {"raw_flops": 0, "adjusted_flops": 0, "flops_transpose": 0, "hbm_read_bytes": 0,
            "hbm_write_bytes": 0, "spill_save_bytes": 0, "spill_reload_bytes": 0}  # fmt: skip
    return {**base, "engine": engine, "opcode": opcode, "start_ns": start, "end_ns": end,
            "hlo_name": hlo, "neff": neff, "pcore": pcore, "wait": wait, **more}  # fmt: skip


F = 32_768_000
INSTRUCTIONS = [
    ins("tensor", "MATMUL", 1_000, 3_000, "dot.1", raw_flops=F, adjusted_flops=2 * F,
        nki_source_location="rms.py:10"),
    ins("tensor", "EVENT_SEMAPHORE", 3_000, 4_000),
    ins("tensor", "MATMUL", 4_000, 6_000, "dot.1", raw_flops=F, adjusted_flops=2 * F,
        nki_source_location="rms.py:10"),
    ins("tensor", "MATMUL", 10_000, 11_000, "dot.2", raw_flops=F // 2, adjusted_flops=F,
        flops_transpose=F),
    ins("vector", "TENSOR_TENSOR", 1_000, 5_000, "add.1", hbm_read_bytes=1_024_000),
    ins("vector", "TENSOR_REDUCE", 5_000, 7_000, "reduce.2"),
    ins("vector", "TENSOR_REDUCE", 6_000, 8_000, "reduce.2", hbm_write_bytes=1_024_000),
]  # fmt: skip
ACTIVE = [  # merged, waits left out; the last one lies after the execution
    {"engine": "tensor", "pcore": 0, "start_ns": s, "end_ns": e}
    for s, e in ((1_000, 3_000), (4_000, 6_000), (10_000, 11_000), (20_000, 21_000))
] + [{"engine": "vector", "pcore": 0, "start_ns": 1_000, "end_ns": 8_000}]
DMA = [
    {"start_ns": 1_000, "end_ns": 2_000, "transfer_bytes": 1_024},
    {"start_ns": 1_500, "end_ns": 2_500, "transfer_bytes": 1_024},
    {"start_ns": 5_000, "end_ns": 6_000, "transfer_bytes": 8_192},
]
THROTTLE = [{"timestamp_ns": 4_500, "duration_ns": 500, "pcore": 0},
            {"timestamp_ns": 30_000, "duration_ns": 700, "pcore": 0}]  # fmt: skip


def profile(**over: Any) -> DeviceProfile:
    """The example profile; ``over`` replaces its parts."""
    base = DeviceProfile(
        root=Path("/x/rms"),
        name="rms",
        metadata=dict(METADATA),
        executions=frame(EXECUTION_COLUMNS, [{"execution": 0, "neff": NEFF, "start_ns": 1_000,
                                              "end_ns": 11_000}]),
        instructions=frame(INSTRUCTION_COLUMNS, INSTRUCTIONS),
        active=frame(ACTIVE_COLUMNS, ACTIVE),
        dma=frame(DMA_COLUMNS, [{**d, "neff": NEFF, "pcore": 0} for d in DMA]),
        throttle=frame(THROTTLE_COLUMNS, THROTTLE),
    )  # fmt: skip
    return replace(base, **over)


def run_of(*profiles: DeviceProfile, **kw: Any) -> EnginesResult:
    return engines(DeviceRun(Path("/x"), list(profiles)), **kw)


def one(df: pl.DataFrame, **where: Any) -> dict[str, Any]:
    rows = df.filter(**where).to_dicts()
    assert len(rows) == 1, (where, rows)
    return rows[0]


def test_each_engine_s_active_time_instructions_idle_and_waits():
    r = run_of(profile())
    tensor = one(r.engines, engine="tensor")
    # active: 2,000 + 2,000 + 1,000 in the execution (20,000-21,000 lies outside it)
    assert tensor["active_ns"] == 5_000 and tensor["active_pct"] == pytest.approx(50.0)
    assert tensor["instruction_ns"] == 5_000 and tensor["instructions"] == 3  # no wait
    assert tensor["idle_ns"] == 10_000 - 5_000
    assert tensor["wait_ns"] == 1_000 and tensor["waits"] == 1
    vector = one(r.engines, engine="vector")
    assert vector["active_ns"] == 7_000 and vector["active_pct"] == pytest.approx(70.0)
    assert vector["instruction_ns"] == 4_000 + 2_000 + 2_000 and vector["instructions"] == 3
    assert vector["idle_ns"] == 10_000 - 7_000  # the union is 1,000-8,000
    assert vector["wait_ns"] == 0 and vector["waits"] == 0


def test_the_window_dma_and_throttling_of_a_core():
    c = one(run_of(profile()).cores, neff=NEFF, pcore=0)
    assert c["window_ns"] == 10_000 and c["executions"] == 1
    assert c["dma_active_ns"] == 1_500 + 1_000  # 1,000-2,500 and 5,000-6,000
    assert c["dma_bytes"] == 10_240 and c["dma_count"] == 3
    assert c["dma_mean_bytes"] == pytest.approx(10_240 / 3)
    assert c["dma_small_pct"] == pytest.approx(200 / 3)
    assert c["throttle_ns"] == 500  # the other lies after the execution
    assert c["short_gaps"] == 1  # 3,000-4,000 (the wait is no work); 6,000-10,000 is longer
    assert c["model_flops"] == 81_920_000 and c["hardware_flops"] == 163_840_000
    assert c["transpose_flops"] == 32_768_000 and c["hbm_bytes"] == 2_048_000
    assert c["spill_bytes"] == 0


def test_mfu_hfu_mbu_intensity_and_a_memory_bound_verdict():
    r = run_of(profile())
    n = one(r.neffs, neff=NEFF)
    capacity = 10_000 / 1e9 * PEAK  # 327,680,000 FLOPs in the window
    assert n["mfu_pct"] == pytest.approx(100 * 81_920_000 / capacity) == pytest.approx(25.0)
    assert n["hfu_pct"] == pytest.approx(50.0)
    assert n["mbu_pct"] == pytest.approx(100 * 2_048_000 / (10_000 / 1e9 * BW)) == 50.0
    assert n["intensity"] == pytest.approx(40.0)  # under the ridge, 80
    assert one(r.profiles, profile="rms")["ridge"] == pytest.approx(80.0)
    assert n["verdict"] == "memory-bound"
    assert n["achieved_flops"] == pytest.approx(8.192e12)
    assert n["roof_flops"] == pytest.approx(40 * BW)  # 16.384 TFLOP/s
    assert n["headroom"] == pytest.approx(2.0)


def test_the_top_hlo_ops_on_the_roofline_both_ways():
    roof = run_of(profile()).roofline.filter(level="hlo")
    assert roof["name"].to_list() == ["add.1", "dot.1", "reduce.2", "dot.2"]  # by time
    dot = one(roof, name="dot.1")  # no HBM bytes: compute-bound, under the peak
    assert dot["time_ns"] == 4_000 and dot["intensity"] is None
    assert dot["verdict"] == "compute-bound" and dot["roof_flops"] == pytest.approx(PEAK)
    assert dot["headroom"] == pytest.approx(PEAK / (2 * F / 4e-6))  # 2.0
    red = one(roof, name="reduce.2")  # bytes, no FLOPs: memory-bound, nothing achieved
    assert red["time_ns"] == 3_000 and red["intensity"] == 0
    assert red["verdict"] == "memory-bound" and red["headroom"] is None


def test_a_compute_bound_neff():
    heavy = [ins("tensor", "MATMUL", 1_000, 11_000, "dot.9", raw_flops=200_000_000,
                 hbm_read_bytes=1_000_000)]  # fmt: skip
    r = run_of(profile(instructions=frame(INSTRUCTION_COLUMNS, heavy)))
    n = one(r.neffs, neff=NEFF)
    assert n["intensity"] == pytest.approx(200.0) and n["verdict"] == "compute-bound"
    assert n["roof_flops"] == pytest.approx(PEAK)
    assert n["headroom"] == pytest.approx(PEAK / 2e13)


def test_the_top_opcodes_hlo_ops_and_nki_lines_by_time():
    tops = run_of(profile(), top=2).tops
    ops = tops.filter(kind="opcode")
    assert ops.select("engine", "name", "count", "ns").rows() == [
        ("tensor", "MATMUL", 3, 5_000), ("vector", "TENSOR_REDUCE", 2, 4_000),
    ]  # fmt: skip (TENSOR_TENSOR's 4,000 ns too: a tie goes by name)
    assert tops.filter(kind="hlo")["name"].to_list() == ["add.1", "dot.1"]
    assert tops.filter(kind="nki").select("name", "count", "ns").rows() == [("rms.py:10", 2, 4_000)]


def kinds(r: EnginesResult) -> set[str]:
    return {h["kind"] for h in r.hints}


def test_each_hint_fires_with_its_numbers():
    r = run_of(profile())
    assert kinds(r) == {"small_dma", "transpose", "tensor_gaps"}
    said = {h["kind"]: h for h in r.hints}
    assert "3 moved 10 KiB, 3.33 KiB each on average, 66.67 % of them under 4 KiB" in said[
        "small_dma"]["text"]
    assert said["transpose"]["figure"] == pytest.approx(20.0)
    assert "transposes are 20 % of the FLOPs (32,768,000 of 163,840,000)" in said[
        "transpose"]["text"]
    assert said["tensor_gaps"]["text"].startswith(
        "the TensorEngine idles in 1 gap under 3 µs: it throttles down and ramps again")
    assert all(h["neff"] == NEFF and h["pcore"] == 0 for h in r.hints)
    spilled = [*INSTRUCTIONS, ins("vector", "SPILL", 8_000, 9_000, spill_save_bytes=2_048,
                                  spill_reload_bytes=2_048)]  # fmt: skip
    r = run_of(profile(instructions=frame(INSTRUCTION_COLUMNS, spilled)))
    spill = [h for h in r.hints if h["kind"] == "spill"]
    assert spill and spill[0]["figure"] == 4_096 and spill[0]["text"].startswith("4 KiB spilled")


def test_no_hint_fires_on_a_well_fed_profile():
    fed = [ins("tensor", "MATMUL", 1_000, 5_000, raw_flops=F, flops_transpose=F // 10),
           ins("tensor", "MATMUL", 5_000, 9_000, raw_flops=F),  # touching: no gap
           ins("tensor", "MATMUL", 13_000, 14_000, raw_flops=F)]  # 4 µs apart: no short gap
    big = [{**d, "transfer_bytes": 65_536, "neff": NEFF, "pcore": 0} for d in DMA]
    r = run_of(profile(instructions=frame(INSTRUCTION_COLUMNS, fed),
                       dma=frame(DMA_COLUMNS, big)))  # fmt: skip
    assert r.hints == ()
    # a mean over 4 KiB with most transfers under it still fires
    mixed = [{**d, "neff": NEFF, "pcore": 0, "transfer_bytes": b}
             for d, b in zip(DMA, (100, 100, 100_000), strict=True)]  # fmt: skip
    r = run_of(profile(instructions=frame(INSTRUCTION_COLUMNS, fed),
                       dma=frame(DMA_COLUMNS, mixed)))  # fmt: skip
    assert kinds(r) == {"small_dma"}


def summary_of(r: EnginesResult) -> dict[str, Any]:
    """The Summary an export would write for the figures the comparison holds (seconds)."""
    out = {}
    for row in r.comparison.to_dicts():
        v = row["ours"]
        out[row["summary_field"]] = v / 1e9 if row["unit"] == "ns" else v
    return out


def test_the_summary_comparison_flags_a_mismatch_and_only_then():
    r = run_of(profile(summary={"total_time": 1e-5}))
    (row,) = r.comparison.filter(figure="total time").to_dicts()
    assert row["ours"] == 10_000 and row["export"] == pytest.approx(10_000)
    assert not row["mismatch"]
    # every figure the export lacks is a mismatch, said as such
    assert any("MFU (mfu_estimated_percent): ours 25 %, absent" in m for m in r.mismatches)
    same = summary_of(r)
    assert same["mfu_estimated_percent"] == pytest.approx(25.0)
    assert same["tensor_engine_active_time"] == pytest.approx(6e-6)  # all of ActiveTime
    assert run_of(profile(summary=same)).mismatches == ()
    within = {**same, "mfu_estimated_percent": 25.1}  # 0.4 % apart: the same
    assert run_of(profile(summary=within)).mismatches == ()
    off = {**same, "mfu_estimated_percent": 30.0}
    (m,) = run_of(profile(summary=off)).mismatches
    assert m == "rms: MFU (mfu_estimated_percent): ours 25 %, the export's 30 (16.67 % apart)"
    assert run_of(profile()).comparison.is_empty()  # no Summary: nothing compared


def test_without_metadata_the_utilisation_is_null_and_says_why():
    r = run_of(profile(metadata={}, missing=("Metadata",)))
    n = one(r.neffs, neff=NEFF)
    assert n["mfu_pct"] is None and n["mbu_pct"] is None and n["verdict"] is None
    assert n["intensity"] == pytest.approx(40.0)  # needs no peak
    why = one(r.profiles, profile="rms")["no_peaks"]
    assert why.startswith("no Metadata table")
    half = run_of(profile(metadata={**METADATA, "tensor_engine_clock_freq": None}))
    assert one(half.profiles, profile="rms")["no_peaks"] == (
        "Metadata lacks tensor_engine_clock_freq")
    assert one(half.neffs, neff=NEFF)["mbu_pct"] == pytest.approx(50.0)


def test_an_unknown_neff_without_execution_info_takes_its_instructions_span():
    bare = [{**i, "neff": None} for i in INSTRUCTIONS]
    r = run_of(profile(instructions=frame(INSTRUCTION_COLUMNS, bare),
                       executions=frame(EXECUTION_COLUMNS, []),
                       dma=frame(DMA_COLUMNS, []), missing=("ExecutionInfo",)))  # fmt: skip
    c = one(r.cores, neff="(unknown NEFF)")
    assert c["window_ns"] == 11_000 - 1_000 and c["executions"] is None
    tensor = one(r.engines, engine="tensor")
    assert tensor["active_ns"] == 6_000  # one NEFF, no ExecutionInfo: all of ActiveTime
    assert c["throttle_ns"] == 500  # the other lies after its span


def test_two_neffs_in_one_ntff_and_the_neff_glob():
    other = [ins("vector", "COPY", 20_000, 20_600, neff="b.neff")]
    execs = [{"execution": 0, "neff": NEFF, "start_ns": 1_000, "end_ns": 11_000},
             {"execution": 1, "neff": "b.neff", "start_ns": 20_000, "end_ns": 21_000}]
    p = profile(instructions=frame(INSTRUCTION_COLUMNS, [*INSTRUCTIONS, *other]),
                executions=frame(EXECUTION_COLUMNS, execs))  # fmt: skip
    r = run_of(p)
    assert one(r.cores, neff="b.neff")["window_ns"] == 1_000
    # the tensor's ActiveTime at 20,000 lies in b.neff's execution
    assert one(r.engines, neff="b.neff", engine="tensor")["active_ns"] == 1_000
    only = run_of(p, neff="b*")
    assert only.neffs["neff"].to_list() == ["b.neff"]
    with pytest.raises(UsageError, match=r"no NEFF matches neff 'z\*'; the NEFFs: b.neff, rms"):
        run_of(p, neff="z*")


def test_two_physical_cores_are_apart_and_the_profile_level_shares_them():
    second = [{**i, "pcore": 1} for i in INSTRUCTIONS if i["engine"] == "tensor"]
    active = [*ACTIVE[:3], *({**a, "pcore": 1} for a in ACTIVE[:3])]
    p = profile(instructions=frame(INSTRUCTION_COLUMNS, [*INSTRUCTIONS, *second]),
                active=frame(ACTIVE_COLUMNS, active),
                summary={"tensor_engine_active_time_percent": 50.0})  # fmt: skip
    r = run_of(p)
    assert r.cores["pcore"].to_list() == [0, 1]
    assert one(r.engines, engine="tensor", pcore=1)["active_ns"] == 5_000
    assert one(r.cores, pcore=1)["model_flops"] == 81_920_000
    assert one(r.neffs, neff=NEFF)["model_flops"] == 2 * 81_920_000  # both cores, one window
    # the profile: 10,000 ns of tensor activity over a 10,000 ns window on 2 cores
    row = one(r.comparison, figure="tensor active %")
    assert row["ours"] == pytest.approx(50.0) and not row["mismatch"]


def test_the_result_s_json_repr_and_unexported_pairs():
    pair = {"ntff": "x.ntff", "neff": "x.neff", "command": "neuron-explorer view -n x.neff"}
    r = engines(DeviceRun(Path("/x"), [profile()], [pair]))
    doc = r.to_json()
    assert doc["unexported"] == [pair] and doc["engines"] == r.engines.to_dicts()
    assert set(doc) >= {"profiles", "neffs", "cores", "tops", "roofline", "comparison", "hints"}
    assert repr(r) == "EnginesResult(root='/x', 1 profile, 1 neff, 2 engines)"
    empty = engines(DeviceRun(Path("/y"), [], [pair]))
    assert empty.engines.is_empty() and empty.unexported == (pair,)
