"""The ops table (`traceana ops`): the offline key_averages().

Expected values come from the published table (typed in below from the issue, blog "System-
level profiling on AWS Trainium", Part 1), from each fixture's truth.json, or from the
inline traces written here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import X, kineto, run_cli, write_parquet, write_trace

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
VARIANTS = ["rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled", "rmsnorm_naive_lnc2"]
# Where the same run can be read from: the whole session folder, or one export alone.
SOURCES = {
    "full": "",
    "parquet": "explorer/parquet",
    "legacy_json": "explorer/json/system_profile.json",
}

# Published: op -> (calls, self CPU µs, device µs, device %). LNC=2 runs the naive workload.
PUBLISHED = {
    "rmsnorm_naive": {
        "aten::mul": (3, 60.9, 1164.5, 49.5),
        "aten::add": (1, 26.6, 434.6, 18.5),
        "aten::rsqrt": (1, 15.6, 415.0, 17.6),
        "aten::mean": (1, 21.1, 340.8, 14.5),
    },
    "rmsnorm_fused": {"aten::_fused_rms_norm": (1, 47.6, 403.3, 100.0)},
    "rmsnorm_compiled": {"Torch-Compiled Region: 0/0": (1, 98.4, 375.5, 100.0)},
}
PUBLISHED["rmsnorm_naive_lnc2"] = PUBLISHED["rmsnorm_naive"]
# Published totals: device µs and executions (the naive total is printed as 2,355 µs).
PUBLISHED_TOTAL = {
    "rmsnorm_naive": (2354.9, 6),
    "rmsnorm_naive_lnc2": (2354.9, 6),
    "rmsnorm_fused": (403.3, 1),
    "rmsnorm_compiled": (375.5, 1),
}
ROW_KEYS = {"name", "calls", "self_cpu_us", "device_us", "device_pct"}


def truth(variant: str) -> dict:
    return json.loads((FIXTURES / variant / "truth.json").read_text())


def ops_json(path) -> dict:
    code, out, err = run_cli("ops", path, "--format", "json")
    assert code == 0, f"exit {code}: {err}"
    return json.loads(out)


def one_run(path) -> dict:
    runs = ops_json(path)["runs"]
    assert len(runs) == 1
    return runs[0]


@pytest.fixture(scope="module")
def fixture_ops() -> dict:
    """ops JSON of every fixture from every source, computed once for the module."""
    return {(v, s): one_run(FIXTURES / v / part) for v in VARIANTS for s, part in SOURCES.items()}


CASES = [(v, s) for v in VARIANTS for s in SOURCES]


@pytest.mark.parametrize("variant,source", CASES)
def test_ops_table_reproduces_the_published_one(fixture_ops, variant, source):
    run = fixture_ops[variant, source]
    rows = {r["name"]: r for r in run["rows"]}
    for r in run["rows"]:
        assert ROW_KEYS <= r.keys(), r
    for op, (calls, self_cpu, device, pct) in PUBLISHED[variant].items():
        r = rows[op]
        assert r["calls"] == calls, op
        assert round(r["self_cpu_us"], 1) == self_cpu, op
        assert round(r["device_us"], 1) == device, op
        assert round(r["device_pct"], 1) == pct, op
    # The rows with device time are exactly the published ops; nothing is unlinked.
    with_device = {r["name"] for r in run["rows"] if r["device_us"] > 0}
    assert with_device == set(PUBLISHED[variant])
    assert "(unlinked)" not in rows


@pytest.mark.parametrize("variant,source", CASES)
def test_ops_total_device_time_and_executions(fixture_ops, variant, source):
    run = fixture_ops[variant, source]
    total, executions = PUBLISHED_TOTAL[variant]
    assert round(run["total_device_us"], 1) == total
    assert run["executions"] == executions
    assert sum(r["device_us"] for r in run["rows"]) == pytest.approx(total, abs=0.05)
    # device % is of the whole device time
    for r in run["rows"]:
        if r["device_us"]:
            assert r["device_pct"] == pytest.approx(100 * r["device_us"] / run["total_device_us"], abs=0.01)


@pytest.mark.parametrize("variant,source", CASES)
def test_ops_without_device_time_have_their_self_cpu_from_truth(fixture_ops, variant, source):
    # fused: the aten::rms_norm parent; compiled: TorchDynamo Cache Lookup (truth.json)
    run = fixture_ops[variant, source]
    rows = {r["name"]: r for r in run["rows"]}
    for t in truth(variant)["ops"]:
        r = rows[t["op"]]
        assert r["calls"] == t["calls"]
        assert r["self_cpu_us"] == pytest.approx(t["self_cpu_us"], abs=0.0005)
        if not t["published"]:
            assert r["device_us"] == 0
            assert not r["device_pct"]


def test_fixtures_hold_ops_without_device_time():
    # The check above is not vacuous: the fixtures do contain such ops.
    unpublished = {v: [t["op"] for t in truth(v)["ops"] if not t["published"]] for v in VARIANTS}
    assert unpublished["rmsnorm_fused"] == ["aten::rms_norm"]
    assert unpublished["rmsnorm_compiled"] == ["TorchDynamo Cache Lookup"]


@pytest.mark.parametrize("source", list(SOURCES))
def test_lnc2_counts_each_execution_once(fixture_ops, source):
    # 12 nc_exec_running events (two physical cores) are 6 executions of 6 calls.
    assert len(truth("rmsnorm_naive_lnc2")["executions"]) == 12
    run = fixture_ops["rmsnorm_naive_lnc2", source]
    assert run["coverage"]["hardware_executions"] == 12
    for r in run["rows"]:
        if r["name"] in PUBLISHED["rmsnorm_naive_lnc2"]:
            assert r["executions"] == r["calls"]
            assert r["executions_per_call"] == 1
    # the same as LNC=1, not doubled
    lnc1 = {r["name"]: r["device_us"] for r in fixture_ops["rmsnorm_naive", source]["rows"]}
    assert {r["name"]: r["device_us"] for r in run["rows"]} == lnc1


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_ops_other_formats_show_the_published_ops(fmt):
    code, out, err = run_cli("ops", FIXTURES / "rmsnorm_naive", "--format", fmt)
    assert code == 0, err
    for op in PUBLISHED["rmsnorm_naive"]:
        assert op in out
    # aten::mul's published 1164.5 µs: the machine format as is, text auto-scaled (1.16 ms)
    assert re.search(r"\b1164\.5\b" if fmt == "csv" else r"\|\s+1\.16 ms \|", out), out


def test_ops_limit():
    code, out, _ = run_cli("ops", FIXTURES / "rmsnorm_naive", "--format", "json", "--limit", "2")
    assert code == 0
    (run,) = json.loads(out)["runs"]
    # sorted by device time: mul (1164.5) then add (434.6)
    assert [r["name"] for r in run["rows"]] == ["aten::mul", "aten::add"]


# --- inline traces ---------------------------------------------------------------------------

BASE = 1_793_620_800_000_000_000
HOST = 4242


def ext(n: int) -> dict:
    return {"External id": n}


def flow(fid, ph, ts, pid, tid):
    ev = {"ph": ph, "id": fid, "pid": pid, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"}
    return {**ev, "bp": "e"} if ph == "f" else ev


def inline_run(tmp_path, events) -> dict:
    p = write_trace(tmp_path / "trace.json", kineto(events, baseTimeNanoseconds=BASE))
    return one_run(p)


def test_self_cpu_subtracts_direct_child_ops_only(tmp_path):
    events = [
        X("cpu_op", "parent", 1000, 100, pid=HOST, tid=HOST),
        X("cpu_op", "child_a", 1010, 20, pid=HOST, tid=HOST),
        X("cpu_op", "child_b", 1040, 30, pid=HOST, tid=HOST),
        X("cpu_op", "grandchild", 1045, 5, pid=HOST, tid=HOST),  # inside child_b
        # a runtime call is not an op: not subtracted from the op around it
        X("cuda_runtime", "cudaMemsetAsync", 1080, 10, pid=HOST, tid=HOST),
        # an op on another thread overlapping in time is not nested
        X("cpu_op", "other_thread", 1010, 50, pid=HOST, tid=HOST + 1),
    ]
    rows = {r["name"]: r for r in inline_run(tmp_path, events)["rows"]}
    assert rows["parent"]["self_cpu_us"] == pytest.approx(50.0)  # 100 - 20 - 30
    assert rows["parent"]["cpu_total_us"] == pytest.approx(100.0)
    assert rows["child_a"]["self_cpu_us"] == pytest.approx(20.0)
    assert rows["child_b"]["self_cpu_us"] == pytest.approx(25.0)  # 30 - 5
    assert rows["grandchild"]["self_cpu_us"] == pytest.approx(5.0)
    assert rows["other_thread"]["self_cpu_us"] == pytest.approx(50.0)
    assert "cudaMemsetAsync" not in rows
    assert all(r["calls"] == 1 for r in rows.values())


def test_self_cpu_sums_over_calls(tmp_path):
    events = [
        X("cpu_op", "aten::mul", 1000, 20, pid=HOST, tid=HOST),
        X("cpu_op", "aten::mul", 1100, 30, pid=HOST, tid=HOST),
        X("cpu_op", "aten::empty", 1105, 4, pid=HOST, tid=HOST),
    ]
    rows = {r["name"]: r for r in inline_run(tmp_path, events)["rows"]}
    assert rows["aten::mul"]["calls"] == 2
    assert rows["aten::mul"]["self_cpu_us"] == pytest.approx(46.0)  # 20 + (30 - 4)
    assert rows["aten::empty"]["self_cpu_us"] == pytest.approx(4.0)


def test_device_time_of_kernels_on_two_streams_is_their_sum(tmp_path):
    # aten::foo launches two kernels that run at the same time on streams 7 and 8.
    events = [
        X("cpu_op", "aten::foo", 100, 50, pid=HOST, tid=HOST, **ext(1)),
        X("cuda_runtime", "cudaLaunchKernel", 110, 5, pid=HOST, tid=HOST, correlation=11, **ext(1)),
        X("cuda_runtime", "cudaLaunchKernel", 120, 5, pid=HOST, tid=HOST, correlation=12, **ext(1)),
        X("kernel", "k_a", 200, 20, pid=0, tid=7, device=0, stream=7, correlation=11),
        X("kernel", "k_b", 205, 30, pid=0, tid=8, device=0, stream=8, correlation=12),
        flow(11, "s", 110, HOST, HOST), flow(11, "f", 200, 0, 7),
        flow(12, "s", 120, HOST, HOST), flow(12, "f", 205, 0, 8),
        # aten::bar: one kernel of 150 µs
        X("cpu_op", "aten::bar", 300, 50, pid=HOST, tid=HOST, **ext(2)),
        X("cuda_runtime", "cudaLaunchKernel", 310, 5, pid=HOST, tid=HOST, correlation=13, **ext(2)),
        X("kernel", "k_c", 400, 150, pid=0, tid=7, device=0, stream=7, correlation=13),
        flow(13, "s", 310, HOST, HOST), flow(13, "f", 400, 0, 7),
    ]
    run = inline_run(tmp_path, events)
    rows = {r["name"]: r for r in run["rows"]}
    assert rows["aten::foo"]["device_us"] == pytest.approx(50.0)  # 20 + 30, not the 35 µs span
    assert rows["aten::foo"]["executions"] == 2
    assert rows["aten::foo"]["executions_per_call"] == 2
    assert rows["aten::bar"]["device_us"] == pytest.approx(150.0)
    assert run["total_device_us"] == pytest.approx(200.0)
    assert rows["aten::foo"]["device_pct"] == pytest.approx(25.0)
    assert rows["aten::bar"]["device_pct"] == pytest.approx(75.0)
    assert [r["name"] for r in run["rows"]][:2] == ["aten::bar", "aten::foo"]  # by device time


def test_unlinked_executions_are_a_row_and_count_in_device_pct(tmp_path):
    events = [
        X("cpu_op", "aten::mm", 100, 50, pid=HOST, tid=HOST, **ext(1)),
        X("cuda_runtime", "cudaLaunchKernel", 110, 5, pid=HOST, tid=HOST, correlation=21, **ext(1)),
        X("kernel", "gemm", 200, 300, pid=0, tid=7, device=0, stream=7, correlation=21),
        # a launch outside every op, with no keys: its kernel reaches no op
        X("cuda_runtime", "cudaLaunchKernel", 700, 5, pid=HOST, tid=HOST),
        X("kernel", "orphan", 800, 100, pid=0, tid=7, device=0, stream=7),
        flow(22, "s", 700, HOST, HOST), flow(22, "f", 800, 0, 7),
    ]
    run = inline_run(tmp_path, events)
    rows = {r["name"]: r for r in run["rows"]}
    assert rows["(unlinked)"]["device_us"] == pytest.approx(100.0)
    assert rows["(unlinked)"]["executions"] == 1
    assert rows["(unlinked)"]["calls"] == 0
    assert rows["(unlinked)"]["device_pct"] == pytest.approx(25.0)  # of all 400 µs
    assert rows["aten::mm"]["device_pct"] == pytest.approx(75.0)
    assert run["total_device_us"] == pytest.approx(400.0)
    assert run["coverage"]["unlinked"] == 1


T_NS, SEQ = 1_793_620_800_001_000_000, (3 << 48) | 41


def lnc2_export(tmp_path, hw_keys: dict, offset_ns: int = 0) -> Path:
    """Explorer rows of one aten::mul whose execution runs on two physical cores of NC 0.

    ``hw_keys`` are the columns that tie each nc_exec_running to its runtime call; the
    second core starts and ends ``offset_ns`` after the first.
    """

    def row(rid, name, src, start, end, **kw):
        return dict(id=rid, name=name, start_ts=T_NS + start, end_ts=T_NS + end,
                    trace_event_source=src, instance_id="i-x", process_id=1, **kw)

    rows = [
        row(900, "aten::mul [trace.json]", "framework", 10_000, 45_000, thread_id=7,
            flow_id=[str(SEQ)], extra_attributes_json="{}"),
        row(901, "aten::mul [trace.json]", "framework", 30_000, 90_000, thread_id=0,
            framework_stream_id="0", flow_id=[str(SEQ)],
            extra_attributes_json=json.dumps({"nrt_sequence_id": SEQ})),
        row(300, "kbl_exec_wait", "neuron_rt", 53_000, 101_000, thread_id=4250, nc_idx=0,
            flow_id=[str(SEQ), "57"], extra_attributes_json=json.dumps({"exec_id": 57, "nrt_sequence_id": SEQ})),
        row(184, "nc_exec_running", "neuron_hw", 55_000, 99_000, thread_id=4250, nc_idx=0,
            pcore_idx=0, **hw_keys),
        row(185, "nc_exec_running", "neuron_hw", 55_000 + offset_ns, 99_000 + offset_ns,
            thread_id=4250, nc_idx=0, pcore_idx=1, **hw_keys),
    ]
    folder = tmp_path / "export"
    write_parquet(folder / "SystemProfileEvents.parquet", rows)
    return folder


def test_lnc2_execution_spans_both_cores_once(tmp_path):
    # One execution (exec_id 57) on two physical cores that start and end 1 µs apart.
    keys = dict(flow_id=["57"], extra_attributes_json='{"exec_id":57}')
    run = one_run(lnc2_export(tmp_path, keys, offset_ns=1_000))
    (mul,) = [r for r in run["rows"] if r["name"] == "aten::mul"]
    assert mul["calls"] == 1
    assert mul["executions"] == 1 and mul["executions_per_call"] == 1
    assert mul["device_us"] == pytest.approx(45.0)  # 55 µs .. 100 µs, once
    assert mul["self_cpu_us"] == pytest.approx(35.0)
    assert run["executions"] == 1
    assert run["coverage"]["hardware_executions"] == 2


@pytest.mark.parametrize("keys", [
    dict(flow_id=["57"], extra_attributes_json="{}"),  # the hardware-side flow id only
    dict(extra_attributes_json="{}"),  # no keys: linked by time
], ids=["flow_id", "time"])
def test_lnc2_execution_without_exec_id_is_counted_once(tmp_path, keys):
    run = one_run(lnc2_export(tmp_path, keys))
    (mul,) = [r for r in run["rows"] if r["name"] == "aten::mul"]
    assert run["coverage"]["linked"] == 2  # both cores reach aten::mul
    assert mul["device_us"] == pytest.approx(44.0)
    assert mul["executions_per_call"] == 1
