"""The six Neuron dependency-chain shapes link every execution to its op (issue 15).

Each shape (tests/shapes/builder.py, docs/graph.md "Chain shapes") is written on LNC 1 and
2, as the Parquet and the legacy JSON export, with and without trace.json beside it: 48
profiles. Every expectation comes from the builder's record: which op each execution
belongs to (name and start), its hardware spans and device time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import builder  # noqa: E402

import trace_analyzer as ta  # noqa: E402
from trace_analyzer.questions.chain.analysis import chain_table  # noqa: E402

CASES = [
    (shape, lnc, export, with_trace)
    for shape in builder.SHAPES
    for lnc in (1, 2)
    for export in ("parquet", "json")
    for with_trace in (False, True)
]


def case_id(case) -> str:
    shape, lnc, export, with_trace = case
    return f"{shape}-lnc{lnc}-{export}-{'trace' if with_trace else 'alone'}"


@pytest.fixture(params=CASES, ids=case_id)
def built(request, tmp_path):
    shape, lnc, export, with_trace = request.param
    tl = builder.build(shape, lnc, export, with_trace, tmp_path)
    return tl, ta.load(tmp_path, cache=False)


def test_every_execution_reaches_its_op(built):
    tl, profile = built
    chain = chain_table(profile.events, profile.edges)
    want = {(a, b): (e["op"], e["op_start_ns"]) for e in tl.executions for a, b in e["hw"]}
    got = {(r["hw_start_ns"], r["hw_end_ns"]): (r["op"], r["op_start_ns"])
           for r in chain.iter_rows(named=True)}
    assert got == want  # every hardware event, each to the op the builder made it for


def test_the_documented_keys_link_it_not_time(built):
    """The runtime and hardware hops are found by the shape's own keys: no time fallback."""
    tl, profile = built
    ev = profile.events.select("event_id", "name")
    hops = profile.edges.join(ev, left_on="dst", right_on="event_id")
    hw = hops.filter(pl.col("name") == "nc_exec_running")
    assert hw["hop"].unique().to_list() == ["hardware"]
    assert hw["link_method"].unique().to_list() == [tl.shape.hw_method]
    wait = hops.filter(pl.col("name") == "kbl_exec_wait")
    assert wait.height == len(tl.executions)
    assert wait["link_method"].unique().to_list() == [tl.shape.rt_method]
    # the hardware event's runtime parent is the bridging kbl_exec_wait
    parents = hw.join(ev, left_on="src", right_on="event_id", suffix="_parent")
    assert parents["name_parent"].unique().to_list() == ["kbl_exec_wait"]


def test_ops_device_time_per_op(built):
    tl, profile = built
    table = ta.ops(profile).table
    got = dict(zip(table["name"].to_list(), table["device_us"].to_list(), strict=True))
    want = builder.device_us_by_op(tl)
    assert {op: got.get(op) for op in want} == pytest.approx(want)
    # the other ops of a fused batch have no device time of their own, and nothing is unlinked
    assert all(v == 0 for op, v in got.items() if op not in want)
    assert "(unlinked)" not in got


def test_schedule_found_for_every_execution(built):
    """dispatch -> schedule -> hardware hops need the execution's nrta_execute_schedule,
    found through flows where no sequence id is written."""
    tl, profile = built
    chain = chain_table(profile.events, profile.edges)
    assert chain["schedule_start_ns"].null_count() == 0
    assert (chain["schedule_start_ns"] < chain["hw_start_ns"]).all()
