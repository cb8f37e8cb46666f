"""Links (the edges table) and chains, on tiny traces written inline.

Each test builds the smallest trace that shows one linking rule (trace_analyzer/link.py
docstring; docs/neuron-formats.md §3.5 for Neuron) and checks which parent each event gets and by
which method. Expected values come only from the inline inputs.
"""

from __future__ import annotations

import json

import polars as pl
from conftest import X, kineto, run_cli, write_parquet, write_trace

import trace_analyzer as ta
from trace_analyzer.loading.link import link
from trace_analyzer.questions.chain.analysis import chain_table, coverage

BASE = 1_793_620_800_000_000_000  # baseTimeNanoseconds
HOST = 4242
GPU_PID, STREAM = 0, 7


def ext(n: int) -> dict:
    return {"External id": n}


def flow(fid: int, ph: str, ts: float, pid: int, tid: int) -> dict:
    """One ac2g flow endpoint: 's' at the launch, 'f' at the device op."""
    ev = {"ph": ph, "id": fid, "pid": pid, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"}
    if ph == "f":
        ev["bp"] = "e"
    return ev


def cpu_op(name, ts, dur, **args):
    return X("cpu_op", name, ts, dur, pid=HOST, tid=HOST, **args)


def launch(ts, dur=5, name="cudaLaunchKernel", **args):
    return X("cuda_runtime", name, ts, dur, pid=HOST, tid=HOST, **args)


def kernel(name, ts, dur, stream=STREAM, **args):
    return X("kernel", name, ts, dur, pid=GPU_PID, tid=stream, device=GPU_PID, stream=stream, **args)


def load_kineto(tmp_path, events, name="trace.json") -> pl.DataFrame:
    p = write_trace(tmp_path / name, kineto(events, baseTimeNanoseconds=BASE))
    return ta.load(p).events


def parent_of(events: pl.DataFrame, edges: pl.DataFrame) -> dict:
    """Return {child name: (parent name, hop, link_method)} for uniquely named events."""
    names = dict(zip(events["event_id"].to_list(), events["name"].to_list()))
    return {names[r["dst"]]: (names[r["src"]], r["hop"], r["link_method"])
            for r in edges.iter_rows(named=True)}


def event_id(events: pl.DataFrame, name: str) -> int:
    ids = events.filter(pl.col("name") == name)["event_id"].to_list()
    assert len(ids) == 1, f"{len(ids)} events named {name!r}"
    return ids[0]


# --- (a) Kineto GPU: cpu_op -> launch -> kernel --------------------------------------------

# Times in µs relative to BASE.
GPU_EVENTS = [
    # 1. the launch's External id names the op that encloses it
    cpu_op("aten::mm", 100, 50, **ext(10)),
    launch(110, name="launch_mm", correlation=1001, **ext(10)),
    kernel("k_mm", 200, 20, correlation=1001, **ext(10)),
    flow(1001, "s", 110, HOST, HOST),
    flow(1001, "f", 200, GPU_PID, STREAM),
    # 2. the launch's External id names an op that does NOT enclose it (aten::other runs
    # later): the External id is not trusted; the innermost enclosing op, by time, is the
    # parent (aten::clamp_min inside aten::relu)
    cpu_op("aten::relu", 300, 50, **ext(20)),
    cpu_op("aten::clamp_min", 305, 20, **ext(21)),
    launch(310, name="launch_relu", correlation=1002, **ext(30)),
    cpu_op("aten::other", 400, 10, **ext(30)),
    kernel("k_relu", 420, 10, correlation=1002),
    flow(1002, "s", 310, HOST, HOST),
    flow(1002, "f", 420, GPU_PID, STREAM),
    # 3. a kernel without a flow: linked to its launch by correlation
    cpu_op("aten::add", 500, 30, **ext(40)),
    launch(505, name="launch_add", correlation=1003, **ext(40)),
    kernel("k_add", 600, 10, correlation=1003),
]


def test_kineto_launch_and_kernel_link_methods(tmp_path):
    ev = load_kineto(tmp_path, GPU_EVENTS)
    got = parent_of(ev, link(ev))
    assert got["launch_mm"] == ("aten::mm", "launch", "external_id")
    assert got["k_mm"] == ("launch_mm", "device", "flow_id")
    # External id 30 names aten::other, which does not enclose the launch: time containment
    assert got["launch_relu"] == ("aten::clamp_min", "launch", "time")
    assert got["k_relu"] == ("launch_relu", "device", "flow_id")
    assert got["launch_add"] == ("aten::add", "launch", "external_id")
    assert got["k_add"] == ("launch_add", "device", "correlation")
    # ops are roots: nothing above them
    assert not {"aten::mm", "aten::relu", "aten::clamp_min", "aten::other", "aten::add"} & got.keys()


def test_kineto_kernel_links_by_correlation_when_trace_has_no_flows(tmp_path):
    events = [
        cpu_op("aten::mm", 100, 50, **ext(10)),
        launch(110, name="launch_mm", correlation=2001, **ext(10)),
        kernel("k_mm", 200, 20, correlation=2001),
        cpu_op("aten::relu", 300, 50, **ext(11)),
        launch(310, name="launch_relu", correlation=2002, **ext(11)),
        kernel("k_relu", 400, 20, correlation=2002),
    ]
    ev = load_kineto(tmp_path, events)
    got = parent_of(ev, link(ev))
    assert got["k_mm"] == ("launch_mm", "device", "correlation")
    assert got["k_relu"] == ("launch_relu", "device", "correlation")
    ch = chain_table(ev)
    assert dict(zip(ch["hw_name"], ch["op"])) == {"k_mm": "aten::mm", "k_relu": "aten::relu"}


def test_launch_correlation_equal_to_enclosing_op_external_id_links_by_correlation(tmp_path):
    # No External id on the launch, but its correlation equals the enclosing op's External id.
    events = [
        cpu_op("aten::mm", 100, 50, **ext(55)),
        launch(110, name="launch_mm", correlation=55),
        kernel("k_mm", 200, 20, correlation=55),
    ]
    ev = load_kineto(tmp_path, events)
    got = parent_of(ev, link(ev))
    assert got["launch_mm"] == ("aten::mm", "launch", "correlation")


def test_edge_latency_is_child_start_minus_parent_start(tmp_path):
    ev = load_kineto(tmp_path, GPU_EVENTS)
    edges = link(ev)
    e = edges.filter(pl.col("dst") == event_id(ev, "k_mm")).row(0, named=True)
    assert e["src"] == event_id(ev, "launch_mm")
    assert e["latency_ns"] == (200 - 110) * 1000
    # every child has at most one parent
    assert edges["dst"].is_unique().all()


# --- (b) an unlinked launch: its kernel is kept and counted --------------------------------


def orphan_events():
    return [
        cpu_op("aten::mm", 100, 50, **ext(10)),
        launch(110, name="launch_mm", correlation=3001, **ext(10)),
        kernel("k_mm", 200, 20, correlation=3001),
        # outside every op and carrying no keys; its kernel still reaches it by flow
        launch(700, name="launch_orphan"),
        kernel("k_orphan", 800, 30),
        flow(3002, "s", 700, HOST, HOST),
        flow(3002, "f", 800, GPU_PID, STREAM),
    ]


def test_launch_outside_every_op_stays_unlinked_and_its_kernel_is_listed(tmp_path):
    ev = load_kineto(tmp_path, orphan_events())
    edges = link(ev)
    got = parent_of(ev, edges)
    assert "launch_orphan" not in got  # no op encloses it, no key names one
    assert got["k_orphan"] == ("launch_orphan", "device", "flow_id")

    ch = chain_table(ev, edges)
    assert sorted(ch["hw_name"]) == ["k_mm", "k_orphan"]  # never dropped
    orphan = ch.filter(pl.col("hw_name") == "k_orphan").row(0, named=True)
    assert orphan["op"] is None and orphan["op_event_id"] is None and orphan["link_method"] is None
    assert orphan["hw_duration_us"] == 30.0
    cov = coverage(ch)
    assert (cov["hardware_executions"], cov["linked"], cov["unlinked"]) == (2, 1, 1)
    assert cov["linked_pct"] == 50.0


def test_unlinked_kernel_without_any_launch_is_listed(tmp_path):
    events = [cpu_op("aten::mm", 100, 50), kernel("k_lonely", 200, 20)]
    ev = load_kineto(tmp_path, events)
    ch = chain_table(ev)
    assert ch["hw_name"].to_list() == ["k_lonely"]
    assert ch["op"].to_list() == [None]
    assert coverage(ch)["unlinked"] == 1


# --- (c) Neuron through Explorer Parquet rows ----------------------------------------------

T = 1_793_620_800_001_000_000  # epoch ns
INST, PID = "i-x", 1
SEQ = (3 << 48) | 41  # an nrt_sequence_id
SEQ2 = (3 << 48) | 42


def fw(rid, name, start, end, tid=7, flows=None, stream=None, extra=None):
    return dict(id=rid, name=f"{name} [trace.json]", start_ts=T + start, end_ts=T + end,
                trace_event_source="framework", instance_id=INST, process_id=PID, thread_id=tid,
                flow_id=flows, framework_stream_id=stream, extra_attributes_json=json.dumps(extra or {}))


def rt(rid, name, start, end, nc=0, tid=PID, flows=None, extra=None):
    return dict(id=rid, name=name, start_ts=T + start, end_ts=T + end,
                trace_event_source="neuron_rt", instance_id=INST, process_id=PID, thread_id=tid,
                nc_idx=nc, flow_id=flows, extra_attributes_json=json.dumps(extra or {}))


def hw(rid, start, end, nc=0, pcore=0, flows=None, extra=None, name="nc_exec_running"):
    return dict(id=rid, name=name, start_ts=T + start, end_ts=T + end,
                trace_event_source="neuron_hw", instance_id=INST, process_id=PID, thread_id=4250,
                nc_idx=nc, pcore_idx=pcore, flow_id=flows, extra_attributes_json=json.dumps(extra or {}))


def load_parquet(tmp_path, rows) -> pl.DataFrame:
    folder = tmp_path / "export"
    write_parquet(folder / "SystemProfileEvents.parquet", rows)
    return ta.load(folder).events


def by_orig(events: pl.DataFrame, edges: pl.DataFrame) -> dict:
    """Return {child orig_id: (parent orig_id, hop, link_method)}."""
    orig = dict(zip(events["event_id"].to_list(), events["orig_id"].to_list()))
    return {orig[r["dst"]]: (orig[r["src"]], r["hop"], r["link_method"])
            for r in edges.iter_rows(named=True)}


# One eager op with LNC=2 (two physical cores run execution 57), as Explorer writes it.
NEURON_LNC2 = [
    fw(900, "aten::mul", 10_000, 45_000, flows=[str(SEQ)]),  # the leaf cpu_op row
    fw(901, "aten::mul", 30_000, 90_000, tid=0, stream="0", flows=[str(SEQ)],
       extra={"nrt_sequence_id": SEQ}),  # the Stream (privateuse1_driver) row
    rt(300, "kbl_exec_wait", 53_000, 101_000, tid=4250, flows=[str(SEQ), "57"],
       extra={"exec_id": 57, "nrt_sequence_id": SEQ}),
    hw(184, 55_000, 99_000, pcore=0, flows=["57"], extra={"exec_id": 57}),
    hw(185, 55_000, 99_000, pcore=1, flows=["57"], extra={"exec_id": 57}),
]


def test_neuron_explorer_chain_by_flow_ids_with_lnc2(tmp_path):
    ev = load_parquet(tmp_path, NEURON_LNC2)
    got = by_orig(ev, link(ev))
    assert got[184] == (300, "hardware", "flow_id")
    assert got[185] == (300, "hardware", "flow_id")  # both physical cores
    assert got[300] == (901, "runtime", "flow_id")
    assert got[901] == (900, "stream_op", "flow_id")
    ch = chain_table(ev)
    assert ch.height == 2
    assert ch["op"].to_list() == ["aten::mul", "aten::mul"]
    assert ch["link_method"].to_list() == ["flow_id", "flow_id"]
    assert sorted(ch["lane"]) == [f"{INST}/PID:{PID}/neuron_hw/NC0:0", f"{INST}/PID:{PID}/neuron_hw/NC0:1"]
    assert coverage(ch)["linked"] == 2


def test_neuron_runtime_links_stream_by_sequence_id_and_hardware_by_exec_id(tmp_path):
    rows = [
        fw(900, "aten::mul", 10_000, 45_000, flows=[str(SEQ)]),
        fw(901, "aten::mul", 30_000, 90_000, tid=0, stream="0", flows=[str(SEQ)],
           extra={"nrt_sequence_id": SEQ}),
        # no flow ids on the runtime or hardware rows: only their attributes
        rt(300, "kbl_exec_wait", 53_000, 101_000, tid=4250,
           extra={"exec_id": 57, "nrt_sequence_id": SEQ}),
        hw(184, 55_000, 99_000, pcore=0, extra={"exec_id": 57}),
        hw(185, 55_000, 99_000, pcore=1, extra={"exec_id": 57}),
    ]
    ev = load_parquet(tmp_path, rows)
    got = by_orig(ev, link(ev))
    assert got[184] == (300, "hardware", "exec_id")
    assert got[185] == (300, "hardware", "exec_id")
    assert got[300] == (901, "runtime", "seq_id")
    ch = chain_table(ev)
    assert ch["op"].to_list() == ["aten::mul", "aten::mul"]
    # the chain is as trusted as its weakest hop: exec_id (flow_id and seq_id are stronger)
    assert ch["link_method"].to_list() == ["exec_id", "exec_id"]


def test_neuron_hardware_without_keys_links_by_time_on_its_logical_core(tmp_path):
    rows = [
        fw(900, "aten::mul", 10_000, 45_000, flows=[str(SEQ)]),
        fw(901, "aten::mul", 30_000, 90_000, tid=0, stream="0", flows=[str(SEQ)],
           extra={"nrt_sequence_id": SEQ}),
        fw(902, "aten::add", 12_000, 46_000, tid=8, flows=[str(SEQ2)]),
        fw(903, "aten::add", 31_000, 95_000, tid=0, stream="1", flows=[str(SEQ2)],
           extra={"nrt_sequence_id": SEQ2}),
        # an outer runtime call with a sequence id, the call that waits inside it, and a
        # runtime call without a sequence id nested deeper still (not a candidate)
        rt(299, "nrt_execute", 50_000, 105_000, flows=[str(SEQ)], extra={"nrt_sequence_id": SEQ}),
        rt(300, "kbl_exec_wait", 53_000, 101_000, tid=PID, flows=[str(SEQ)],
           extra={"nrt_sequence_id": SEQ}),
        rt(301, "kmgr_exec_core", 54_000, 100_000, tid=PID),
        # logical core 1 has its own runtime call over the same time span
        rt(310, "kbl_exec_wait", 50_000, 110_000, nc=1, tid=PID + 1, flows=[str(SEQ2)],
           extra={"nrt_sequence_id": SEQ2}),
        # no flow_id and no exec_id
        hw(184, 55_000, 99_000, nc=0, pcore=0),
        hw(186, 56_000, 98_000, nc=1, pcore=2),
    ]
    ev = load_parquet(tmp_path, rows)
    got = by_orig(ev, link(ev))
    assert got[184] == (300, "hardware", "time")  # the innermost call with a sequence id, core 0
    assert got[186] == (310, "hardware", "time")  # core 1's call, not core 0's
    ch = chain_table(ev)
    ops = dict(zip(ch["lane"], zip(ch["op"], ch["link_method"])))
    assert ops == {f"{INST}/PID:{PID}/neuron_hw/NC0:0": ("aten::mul", "time"),
                   f"{INST}/PID:{PID}/neuron_hw/NC1:2": ("aten::add", "time")}


def test_neuron_hardware_outside_every_runtime_call_is_unlinked_but_listed(tmp_path):
    rows = NEURON_LNC2[:3] + [hw(190, 200_000, 250_000, pcore=0)]  # after kbl_exec_wait ends
    ev = load_parquet(tmp_path, rows)
    assert 190 not in by_orig(ev, link(ev))
    ch = chain_table(ev)
    assert ch["op"].to_list() == [None]
    assert coverage(ch)["unlinked"] == 1


# --- (d) a chain's link_method is the least trusted method on its path ----------------------


def test_chain_link_method_is_the_weakest_hop(tmp_path):
    # Explorer rows of an op and its dispatch (a same-named event nested in it on its thread):
    # hardware -flow_id-> runtime -seq_id-> Stream -flow_id-> dispatch -time-> op
    rows = [
        fw(900, "aten::mul", 10_000, 45_000),  # the op: no keys
        fw(910, "aten::mul", 12_000, 40_000, flows=[str(SEQ)]),  # its dispatch
        fw(901, "aten::mul", 30_000, 90_000, tid=0, stream="0", flows=[str(SEQ)],
           extra={"nrt_sequence_id": SEQ}),
        rt(300, "kbl_exec_wait", 53_000, 101_000, tid=4250, flows=["57"],
           extra={"exec_id": 57, "nrt_sequence_id": SEQ}),
        hw(184, 55_000, 99_000, pcore=0, flows=["57"], extra={"exec_id": 57}),
    ]
    ev = load_parquet(tmp_path, rows)
    got = by_orig(ev, link(ev))
    assert got[184] == (300, "hardware", "flow_id")
    assert got[300] == (901, "runtime", "seq_id")
    assert got[901] == (910, "stream", "flow_id")
    assert got[910] == (900, "launch", "time")
    ch = chain_table(ev).row(0, named=True)
    assert (ch["op"], ch["link_method"]) == ("aten::mul", "time")
    assert ch["op_event_id"] == ev.filter(pl.col("orig_id") == 900)["event_id"][0]
    assert coverage(chain_table(ev))["by_method"] == {"time": 1}


def test_chain_link_method_on_kineto_path(tmp_path):
    # kernel -flow_id-> launch -time-> op: the chain says "time"; -external_id-> says that
    ev = load_kineto(tmp_path, GPU_EVENTS)
    ch = chain_table(ev)
    assert dict(zip(ch["hw_name"], ch["link_method"])) == {
        "k_mm": "external_id", "k_relu": "time", "k_add": "correlation"}
    assert dict(zip(ch["hw_name"], ch["op"])) == {
        "k_mm": "aten::mm", "k_relu": "aten::clamp_min", "k_add": "aten::add"}


# --- (e) nested ops: the innermost op wins ----------------------------------------------------


def test_launch_in_nested_ops_links_to_the_innermost(tmp_path):
    events = [
        cpu_op("aten::linear", 100, 100),
        cpu_op("aten::t", 105, 3),
        cpu_op("aten::addmm", 110, 50),
        launch(120, name="launch_addmm"),  # no keys: time containment
        kernel("gemm", 200, 40),
        flow(4001, "s", 120, HOST, HOST),
        flow(4001, "f", 200, GPU_PID, STREAM),
    ]
    ev = load_kineto(tmp_path, events)
    got = parent_of(ev, link(ev))
    assert got["launch_addmm"] == ("aten::addmm", "launch", "time")
    ch = chain_table(ev).row(0, named=True)
    assert (ch["hw_name"], ch["op"], ch["link_method"]) == ("gemm", "aten::addmm", "time")


def test_launch_in_nested_ops_with_external_id_of_the_inner_op(tmp_path):
    events = [
        cpu_op("aten::linear", 100, 100, **ext(1)),
        cpu_op("aten::addmm", 110, 50, **ext(2)),
        launch(120, name="launch_addmm", correlation=9, **ext(2)),
        kernel("gemm", 200, 40, correlation=9),
    ]
    ev = load_kineto(tmp_path, events)
    got = parent_of(ev, link(ev))
    assert got["launch_addmm"] == ("aten::addmm", "launch", "external_id")
    assert chain_table(ev)["op"].to_list() == ["aten::addmm"]


def test_ops_on_another_thread_do_not_enclose_a_launch(tmp_path):
    events = [
        X("cpu_op", "aten::other_thread", 100, 100, pid=HOST, tid=HOST + 1),
        launch(120, name="launch_x"),
        kernel("k_x", 200, 10),
        flow(5001, "s", 120, HOST, HOST),
        flow(5001, "f", 200, GPU_PID, STREAM),
    ]
    ev = load_kineto(tmp_path, events)
    assert "launch_x" not in parent_of(ev, link(ev))
    assert chain_table(ev)["op"].to_list() == [None]


def test_chain_cli_reports_unlinked_kernel(tmp_path):
    p = write_trace(tmp_path / "t.json", kineto(orphan_events(), baseTimeNanoseconds=BASE))
    code, out, err = run_cli("chain", p, "--unlinked", "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["coverage"]["unlinked"] == 1
    assert [(r["hw_name"], r["op"]) for r in run["rows"]] == [("k_orphan", None)]


def test_a_table_numbered_its_own_way_links_as_the_profile_does():
    """``link`` works on row positions (loading/link.py); a table whose ids are not its rows (a
    user's own frame: ids offset, rows in another order) gets the same edges, in its ids."""
    p = ta.load("fixtures/rmsnorm_naive", cache=False)
    expected = link(p.events)
    shifted = p.events.with_columns(event_id=pl.col("event_id") * 3 + 1000).reverse()
    got = link(shifted)
    mapped = expected.with_columns(pl.col("src") * 3 + 1000, pl.col("dst") * 3 + 1000)
    assert expected.height > 50  # the fixture's links
    assert got.sort("dst").equals(mapped.sort("dst"))


def test_least_hit_per_child_without_a_sort_matches_sorting_every_hit() -> None:
    """``least`` keeps, per child, the hit whose number is least: found in passes over hits in
    the children's order, and by a sort when they are not. Both agree with sorting every hit
    by (child, number) and taking each child's first, on random hits, in order and shuffled."""
    import random

    from trace_analyzer.loading.link_time import least

    def by_sort(hits: pl.DataFrame, best: pl.Expr) -> set[tuple[int, int]]:
        ranked = hits.with_columns(_b=best).sort("dst", "_b")
        return set(ranked.group_by("dst", maintain_order=True).first().select("src", "dst").rows())

    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 40)
        rows = [
            (rng.randrange(n), d)
            for d in sorted(rng.sample(range(n), rng.randint(1, n)))
            for _ in range(rng.randint(1, 4))
        ]
        if rng.random() < 0.25:
            rng.shuffle(rows)
        hits = pl.DataFrame(rows, schema={"src": pl.Int64, "dst": pl.Int64}, orient="row")
        for best in (pl.col("src"), n - 1 - pl.col("src")):
            got = least(hits, best, n)
            assert got["dst"].is_sorted() and got["dst"].n_unique() == got.height
            assert set(got.rows()) == by_sort(hits, best)
