"""`traceana engines HEAD --base BASE` across NEFF renames (issue 39), as real processes.

A NEFF's name is a hash of its compiled graph: a recompile renames every NEFF. The gate must
still compare the NEFFs that ran the same ops (matched by op through the system profile beside
the export, by the NEFF header's network name, or by position in the step), and compare what
it cannot match as whole profiles, rather than pass having compared nothing. The README's own
gate, run as written, must fail on the naive version's 6.7x slowdown.

Renamed copies come from conftest.renamed_copy (every NEFF name in every file of the fixture,
its hash's digits reversed); expected figures are computed here from the Parquet files.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import polars as pl
import pytest
from conftest import renamed_copy, run_process, slow

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
NAIVE = FIXTURES / "rmsnorm_naive"


def export_of(folder: Path) -> Path:
    """The one device-profile export folder under ``folder``."""
    (found,) = folder.rglob("Instruction.parquet")
    return found.parent


def span_ns(folder: Path) -> int:
    """A profile's window as Summary.total_time measures it: first instruction to last."""
    ins = pl.read_parquet(export_of(folder) / "Instruction.parquet")
    return int(ins["end_ts"].max() - ins["start_ts"].min())


def windows(folder: Path) -> dict[str, int]:
    """Per NEFF, the summed length of its executions (ExecutionInfo)."""
    ex = pl.read_parquet(export_of(folder) / "ExecutionInfo.parquet")
    per = ex.group_by("neff_name").agg((pl.col("execution_end_ts") - pl.col("execution_start_ts")).sum())
    return dict(per.iter_rows())


def in_order(folder: Path) -> list[str]:
    """The NEFFs of an export in the order they first ran."""
    ex = pl.read_parquet(export_of(folder) / "ExecutionInfo.parquet").sort("execution_start_ts")
    return list(dict.fromkeys(ex["neff_name"]))


def engines(*args: object) -> tuple[int, str, str]:
    """`traceana engines ARGS`; ``HEAD --base BASE ...`` as the one spelling of that
    comparison, `traceana diff BASE HEAD --engines ...` (issue 39; the older spelling is the
    same command: tests/cli/test_one_comparison.py)."""
    argv = list(args)
    if "--base" in argv:
        at = argv.index("--base")
        base, head = argv[at + 1], argv[0]
        argv = ["diff", base, head, "--engines", *argv[1:at], *argv[at + 2 :]]
    else:
        argv = ["engines", *argv]
    code, out, err, _, _ = run_process(*argv)
    return code, out, err


def readme_gate() -> list[str]:
    """The README's device-profile gate, as its Quick start writes it."""
    lines = [line for line in (ROOT / "README.md").read_text().splitlines()
             if " diff " in line and "--engines" in line and "--fail-on" in line]  # fmt: skip
    assert len(lines) == 1, lines
    words = shlex.split(lines[0].split("  #")[0])
    assert words[0] == ".venv/bin/traceana"
    return words[1:]


def test_the_readmes_gate_fails_on_the_slowdown(monkeypatch):
    argv = readme_gate()
    monkeypatch.chdir(ROOT)  # run as written, from the repository's root
    assert argv[:1] == ["diff"] and "--engines" in argv
    base, head = Path(argv[1]), Path(argv[2])
    code, out, err, _, _ = run_process(*argv)
    assert code == 1, (out, err)
    want = 100 * (span_ns(head) - span_ns(base)) / span_ns(base)
    assert want > 500  # the naive version is ~6.7x the fused one
    (line,) = err.strip().splitlines()
    got = re.search(r"window_pct_delta = ([\d.]+) \(the whole profiles; NEFFs unmatched: "
                    r"(\d+) removed, (\d+) added\)$", line)  # fmt: skip
    assert got, line
    assert float(got[1]) == pytest.approx(want)
    assert (int(got[2]), int(got[3])) == (len(windows(base)), len(windows(head)))
    assert "compares nothing" not in out + err


def test_a_recompile_renaming_every_neff_is_matched_by_op(tmp_path):
    renames = renamed_copy(NAIVE, tmp_path / "naive")
    head = tmp_path / "naive"
    assert set(windows(head)) == set(renames.values())  # every NEFF of the export renamed
    code, out, err = engines(head, "--base", NAIVE, "--fail-on", "window_pct_delta>0",
                             "--format", "json")  # fmt: skip
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    pairs = {r["neff"]: (r["neff_base"], r["matched_by"]) for r in run["neffs"]}
    assert pairs == {new: (old, "op") for old, new in renames.items()}
    assert run["added"] == [] and run["removed"] == [] and run["whole"] is None
    assert run["metrics"]["window_pct_delta"] == 0


def test_a_slower_recompile_fails_naming_the_pair(tmp_path):
    renames = renamed_copy(NAIVE, tmp_path / "naive")
    head = tmp_path / "naive"
    slow(export_of(head))  # TensorEngine 2x, the first execution 10 % longer
    first = in_order(NAIVE)[0]
    before, after = windows(NAIVE)[first], windows(head)[renames[first]]
    code, out, err = engines(head, "--base", NAIVE, "--fail-on", "window_pct_delta>5")
    assert code == 1, err
    (line,) = err.strip().splitlines()
    value = re.search(r"window_pct_delta = ([\d.]+) ", line)
    assert value and float(value[1]) == pytest.approx(100 * (after - before) / before)
    assert line.endswith(f"(NEFF {renames[first]}, base {first}, matched by op)")
    assert f"op: {first}" in out  # the report's table says how the pair was matched


def drop_neff(export: Path, neff: str) -> None:
    """Remove ``neff``'s executions and the instructions and DMA in them from ``export``."""
    ex = pl.read_parquet(export / "ExecutionInfo.parquet")
    gone = ex.filter(pl.col("neff_name") == neff)
    ex.filter(pl.col("neff_name") != neff).write_parquet(export / "ExecutionInfo.parquet")
    for table in ("Instruction", "DmaPacketAggregated", "ActiveTime"):
        df = pl.read_parquet(export / f"{table}.parquet")
        inside = pl.lit(False)
        for s, e in gone.select("execution_start_ts", "execution_end_ts").iter_rows():
            inside = inside | pl.col("start_ts").is_between(s, e, closed="left")
        df.filter(~inside).write_parquet(export / f"{table}.parquet")


def test_op_matches_where_position_cannot_and_the_rest_is_the_whole_profile(tmp_path):
    # head ran one NEFF fewer (aten::add's): the positions no longer line up, the ops do
    renames = renamed_copy(NAIVE, tmp_path / "naive")
    head = tmp_path / "naive"
    truth = json.loads((NAIVE / "device_profiles" / "truth.json").read_text())
    (add,) = {x["neff"] for x in truth["executions"] if x["op"] == "aten::add"}
    drop_neff(export_of(head), renames[add])
    code, out, err = engines(head, "--base", NAIVE, "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    matched = {r["neff"]: (r["neff_base"], r["matched_by"]) for r in run["neffs"]
               if r["status"] == "common"}  # fmt: skip
    assert matched == {new: (old, "op") for old, new in renames.items() if old != add}
    assert run["removed"] == [add] and run["added"] == []
    whole = run["whole"]
    assert (whole["window_ns_base"], whole["window_ns_head"]) == (span_ns(NAIVE), span_ns(head))


def test_without_a_system_profile_neffs_match_by_position(tmp_path):
    renames = renamed_copy(NAIVE, tmp_path / "naive")
    head = tmp_path / "export"
    shutil.copytree(export_of(tmp_path / "naive"), head / "device")  # the export alone
    code, out, err = engines(head, "--base", NAIVE / "device_profiles", "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    pairs = {r["neff"]: (r["neff_base"], r["matched_by"]) for r in run["neffs"]}
    order = in_order(NAIVE)
    assert [renames[n] for n in order] == in_order(head)  # the same step, renamed
    assert pairs == {renames[n]: (n, "position") for n in order}


def with_network(export: Path, network: str) -> Path:
    """Write ``export``'s NeffHeader table, naming ``network`` (schema 7.4.0's column)."""
    pl.DataFrame({"network_name": [network]}).write_parquet(export / "NeffHeader.parquet")
    return export


def test_the_neff_headers_network_name_matches_a_rename(tmp_path):
    fused = export_of(FIXTURES / "rmsnorm_fused")
    compiled = export_of(FIXTURES / "rmsnorm_compiled")
    base = tmp_path / "base"
    with_network(Path(shutil.copytree(fused, base / "fused")), "rmsnorm")
    with_network(Path(shutil.copytree(compiled, base / "compiled")), "mlp")
    renames = renamed_copy(fused, tmp_path / "head" / "fused")
    with_network(tmp_path / "head" / "fused", "rmsnorm")
    (old,) = windows(fused)
    code, out, err = engines(tmp_path / "head", "--base", base, "--fail-on", "window_pct_delta>5")
    assert code == 0, err  # the pair is unchanged; without compiled, the whole is shorter
    assert f"network name: {old}" in out
    code, out, err = engines(tmp_path / "head", "--base", base, "--format", "json")
    (run,) = json.loads(out)["runs"]
    (pair,) = [r for r in run["neffs"] if r["status"] == "common"]
    assert (pair["neff"], pair["neff_base"], pair["matched_by"]) == (renames[old], old,
                                                                     "network name")
    assert run["removed"] == list(windows(compiled))
