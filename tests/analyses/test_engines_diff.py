"""`traceana engines HEAD --base BASE` as an analysis (questions/engines/diff.py): the naive
RMSNorm export against itself (every change 0), against a slowed copy (conftest.slowed_export:
TensorEngine twice as long, the first execution 10 % longer), and the fused export against the
compiled one (no NEFF name in common: compared as whole profiles). Expected figures come from the Parquet files, in plain
polars, never from traceana."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from conftest import NAIVE_EXPORT, slowed_export

from trace_analyzer.questions.engines.analysis import engines
from trace_analyzer.questions.engines.diff import ENGINES_DIFF_METRICS, engines_diff, gate
from trace_analyzer.questions.engines.diff import pct_delta as pct
from trace_analyzer.readers.device_profile import load_device
from trace_analyzer.units import parse_condition

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def export(fixture: str) -> Path:
    """The one device-profile export folder of ``fixture``."""
    (folder,) = (FIXTURES / fixture / "device_profiles").glob("*/Instruction.parquet")
    return folder.parent


def side(path: Path):
    return engines(load_device(path))


def conditions(*texts: str):
    return [parse_condition(t, ENGINES_DIFF_METRICS) for t in texts]


def truth(folder: Path) -> dict[str, dict]:
    """Per NEFF, from the export's files: its window (ExecutionInfo), and per engine its
    instruction time (waits left out) and ActiveTime, each counted in the execution its start
    lies in."""
    ex = pl.read_parquet(folder / "ExecutionInfo.parquet")
    ins = pl.read_parquet(folder / "Instruction.parquet").filter(
        pl.col("opcode") != "EVENT_SEMAPHORE"
    )
    act = pl.read_parquet(folder / "ActiveTime.parquet")
    out = {}
    for e in ex.iter_rows(named=True):
        s, t = e["execution_start_ts"], e["execution_end_ts"]
        inside = (pl.col("start_ts") >= s) & (pl.col("start_ts") < t)
        per = {}
        for name, df in (("instruction", ins), ("active", act)):
            sums = df.filter(inside).group_by(pl.col("engine").str.to_lowercase())
            per[name] = dict(sums.agg(pl.col("duration_ns").sum()).iter_rows())
        out[e["neff_name"]] = {"window": t - s, **per}
    return out


def mfu(folder: Path) -> float:
    """The profile's MFU by docs/device.md's formula, from Instruction and Metadata."""
    ins = pl.read_parquet(folder / "Instruction.parquet")
    m = pl.read_parquet(folder / "Metadata.parquet").row(0, named=True)
    peak = (m["tensor_engine_num_rows"] * m["tensor_engine_num_cols"] * 2
            * m["tensor_engine_clock_freq"] * 1e9 * m["num_physical_cores"])  # fmt: skip
    window_s = (ins["end_ts"].max() - ins["start_ts"].min()) / 1e9
    return 100 * ins["raw_flops"].fill_null(0).sum() / (window_s * peak)


def test_a_profile_against_itself_changes_nothing():
    base = side(NAIVE_EXPORT.parent)
    r = gate(engines_diff(base, base), conditions("window_pct_delta>5", "mfu_pct_delta<0"))
    assert set(r.neffs["status"]) == {"common"} and r.neffs.height == 6
    assert not r.added and not r.removed
    deltas = [c for c in r.neffs.columns if c.endswith("delta")]
    assert all(v == 0 for c in deltas for v in r.neffs[c].to_list()), deltas
    deltas = [c for c in r.engines.columns if c.endswith("delta")]
    assert r.engines.height == 30  # six NEFFs, five engines
    assert all(v == 0 for c in deltas for v in r.engines[c].to_list())
    assert all(v == 0 for v in r.metrics.values()), r.metrics
    assert r.failed == () and r.gate_notes == ()


def test_a_slowed_copy_against_the_original(tmp_path):
    head_path = slowed_export(tmp_path)
    base, head = truth(NAIVE_EXPORT), truth(head_path / NAIVE_EXPORT.name)
    r = engines_diff(side(NAIVE_EXPORT.parent), side(head_path))
    neffs = {n["neff"]: n for n in r.neffs.to_dicts()}
    assert set(neffs) == set(base) and all(n["status"] == "common" for n in neffs.values())
    for name, b in base.items():
        h, n = head[name], neffs[name]
        assert (n["window_ns_base"], n["window_ns_head"]) == (b["window"], h["window"])
        assert n["window_pct_delta"] == pytest.approx(
            100 * (h["window"] - b["window"]) / b["window"]
        )
        for e in r.engines.filter(pl.col("neff") == name).to_dicts():
            for kind in ("instruction", "active"):
                want_b, want_h = b[kind].get(e["engine"], 0), h[kind].get(e["engine"], 0)
                assert (e[f"{kind}_ns_base"], e[f"{kind}_ns_head"]) == (want_b, want_h), e
                assert e[f"{kind}_ns_delta"] == want_h - want_b
                assert e[f"{kind}_pct_delta"] == pytest.approx(pct(want_b, want_h))
    first = pl.read_parquet(NAIVE_EXPORT / "ExecutionInfo.parquet").row(0, named=True)["neff_name"]
    worst = max(base, key=lambda n: (head[n]["window"] - base[n]["window"]) / base[n]["window"])
    assert worst == first
    assert r.worst["window_pct_delta"] == first
    assert r.metrics["window_pct_delta"] == pytest.approx(
        100 * (head[first]["window"] - base[first]["window"]) / base[first]["window"]
    )
    tensor = [pct(base[n]["active"]["tensor"], head[n]["active"]["tensor"]) for n in base]
    assert r.metrics["tensor_active_pct_delta"] == pytest.approx(max(tensor))
    assert r.metrics["vector_active_pct_delta"] == 0
    assert r.overall["mfu_pct_base"] == pytest.approx(mfu(NAIVE_EXPORT))
    assert r.overall["mfu_pct_head"] == pytest.approx(mfu(head_path / NAIVE_EXPORT.name))


def test_gates_on_the_slowed_copy_name_the_neff(tmp_path):
    r = engines_diff(side(NAIVE_EXPORT.parent), side(slowed_export(tmp_path)))
    first = pl.read_parquet(NAIVE_EXPORT / "ExecutionInfo.parquet").row(0, named=True)["neff_name"]
    got = gate(r, conditions("window_pct_delta>5", "tensor_active_pct_delta>50",
                             "vector_active_pct_delta>0", "mfu_pct_delta>1"))  # fmt: skip
    assert len(got.failed) == 2, got.failed
    assert got.failed[0].startswith("--fail-on 'window_pct_delta>5' failed: window_pct_delta = ")
    assert got.failed[0].endswith(f"(NEFF {first})")
    assert got.failed[1].startswith("--fail-on 'tensor_active_pct_delta>50' failed")


def test_unmatched_neffs_are_compared_as_whole_profiles():
    # by name alone (the library's default), fused and compiled share no NEFF: each is added
    # or removed, and the NEFF-level gates compare the whole profiles instead of nothing
    def names(fixture: str) -> tuple[str, ...]:
        execs = pl.read_parquet(export(fixture) / "ExecutionInfo.parquet")
        return tuple(sorted(set(execs["neff_name"])))

    def whole(folder: Path) -> dict[str, int]:
        """The window (first instruction to last) and the TensorEngine's ActiveTime that
        starts in an execution, over the whole export."""
        ins = pl.read_parquet(folder / "Instruction.parquet")
        act = pl.read_parquet(folder / "ActiveTime.parquet")
        ex = pl.read_parquet(folder / "ExecutionInfo.parquet")
        inside = pl.any_horizontal(pl.col("start_ts").is_between(s, e, closed="left")
                                   for s, e in ex.select("execution_start_ts",
                                                         "execution_end_ts").iter_rows())
        tensor = act.filter(pl.col("engine").str.to_lowercase() == "tensor", inside)
        return {"window": int(ins["end_ts"].max() - ins["start_ts"].min()),
                "tensor": int((tensor["end_ts"] - tensor["start_ts"]).sum())}  # fmt: skip

    base = side(FIXTURES / "rmsnorm_fused" / "device_profiles")
    head = side(FIXTURES / "rmsnorm_compiled" / "device_profiles")
    r = engines_diff(base, head)
    assert r.added == names("rmsnorm_compiled") and r.removed == names("rmsnorm_fused")
    assert set(r.added).isdisjoint(r.removed)
    assert r.engines.is_empty()
    assert set(r.neffs["status"]) == {"added", "removed"}
    fused, compiled = (export(f) for f in ("rmsnorm_fused", "rmsnorm_compiled"))
    b, h = whole(fused), whole(compiled)
    assert r.metrics["window_pct_delta"] == pytest.approx(pct(b["window"], h["window"]))
    assert r.metrics["tensor_active_pct_delta"] == pytest.approx(pct(b["tensor"], h["tensor"]))
    assert r.worst["window_pct_delta"] == "(whole profiles)"
    got = gate(r, conditions("window_pct_delta>-1000"))
    (line,) = got.failed
    assert line.endswith("(the whole profiles; NEFFs unmatched: 1 removed, 1 added)")
    # the profile-level figures compare the two sides as before
    assert r.overall["mfu_pct_delta"] == pytest.approx(mfu(compiled) - mfu(fused))
    assert mfu(compiled) > mfu(fused)
    assert gate(r, conditions("mfu_pct_delta>0")).failed


def test_relative_change():
    assert pct(0, 0) == 0.0 and pct(0, 5) is None and pct(None, 1) is None
    assert pct(200, 300) == 50.0
