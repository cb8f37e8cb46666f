"""The Kineto (torch.profiler Chrome trace) reader, on tiny traces written inline."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import X, info_json, kineto, run_cli, write_trace

import trace_analyzer as ta

BASE = 1_793_620_800_000_000_000  # an epoch-ns baseTimeNanoseconds (2026-11-01)
HOST = 4242


def load_events(path) -> pl.DataFrame:
    return ta.load(path).events


def by_name(events: pl.DataFrame, name: str) -> dict:
    rows = events.filter(pl.col("name") == name)
    assert rows.height == 1, f"{rows.height} events named {name!r}"
    return rows.row(0, named=True)


# --- clock ---------------------------------------------------------------------------------


def test_ts_relative_to_base_becomes_exact_epoch_ns(tmp_path):
    events = [
        X("cpu_op", "whole", 1000, 900, pid=HOST, tid=HOST),
        X("cpu_op", "three_decimals", 1010.251, 35.125, pid=HOST, tid=HOST),
        # 4.035 * 1000 is 4034.9999999999995 in floating point: truncating would lose 1 ns.
        X("cpu_op", "rounding", 4.035, 1.001, pid=HOST, tid=HOST),
    ]
    p = write_trace(tmp_path / "t.json", kineto(events, baseTimeNanoseconds=BASE))
    ev = load_events(p)
    whole, frac, rnd = by_name(ev, "whole"), by_name(ev, "three_decimals"), by_name(ev, "rounding")
    assert (whole["start_ns"], whole["end_ns"], whole["duration_ns"]) == (
        BASE + 1_000_000, BASE + 1_900_000, 900_000)
    assert (frac["start_ns"], frac["end_ns"], frac["duration_ns"]) == (
        BASE + 1_010_251, BASE + 1_045_376, 35_125)
    assert (rnd["start_ns"], rnd["duration_ns"], rnd["end_ns"]) == (BASE + 4_035, 1_001, BASE + 5_036)
    assert ta.load(p).warnings == []


def test_old_trace_without_base_reads_epoch_microseconds(tmp_path):
    ts = 1_665_536_373_729_065  # epoch µs, as early Kineto wrote them
    events = [X("cpu_op", "aten::add", ts, 14, pid=HOST, tid=HOST),
              X("cpu_op", "aten::mul", ts + 20, 3, pid=HOST, tid=HOST)]
    p = write_trace(tmp_path / "old.json", kineto(events))
    prof = ta.load(p)
    add = by_name(prof.events, "aten::add")
    assert add["start_ns"] == ts * 1000
    assert add["end_ns"] == (ts + 14) * 1000
    assert by_name(prof.events, "aten::mul")["start_ns"] == (ts + 20) * 1000
    assert prof.warnings == []


def test_no_base_and_small_ts_warns(tmp_path):
    events = [X("cpu_op", "aten::add", 10.5, 2, pid=HOST, tid=HOST)]
    p = write_trace(tmp_path / "rel.json", kineto(events))
    run = info_json(p)["runs"][0]
    assert any("baseTimeNanoseconds" in w for w in run["warnings"]), run["warnings"]
    assert run["events"] == 1


def test_clock_warning_names_the_file(tmp_path):
    write_trace(tmp_path / "rank0.json", kineto([X("cpu_op", "a", 10.5, 2)], baseTimeNanoseconds=BASE))
    bad = write_trace(tmp_path / "rank1.json", kineto([X("cpu_op", "a", 10.5, 2, pid=7, tid=7)]))
    run = info_json(bad)["runs"][0]
    clock = [w for w in run["warnings"] if "baseTimeNanoseconds" in w]
    assert clock and all(str(bad) in w for w in clock), clock
    # beside an epoch-aligned rank, its unknown origin puts it decades away: not one run, but
    # two, the clock warning on the part that holds the file
    runs = info_json(tmp_path)["runs"]
    assert [r["root"] for r in runs] == [f"{tmp_path}#rank1.json", f"{tmp_path}#rank0.json"]
    assert "so they are 2 runs" in runs[0]["warnings"][0]
    assert any("baseTimeNanoseconds" in w and str(bad) in w for w in runs[0]["warnings"])
    assert not any("baseTimeNanoseconds" in w for w in runs[1]["warnings"])


# --- categories ----------------------------------------------------------------------------

KINDS = {
    "cpu_op": "framework_op",
    "user_annotation": "annotation",
    "cuda_runtime": "runtime",
    "kernel": "hardware",
    "gpu_memcpy": "transfer",
    "gpu_memset": "hardware",
    "cuda_sync": "sync",
    "privateuse1_runtime": "framework_dispatch",
    "privateuse1_driver": "framework_stream",
    "mtia_runtime": "runtime",
    "mtia_ccp_events": "hardware",
    # early Kineto names
    "Kernel": "hardware",
    "Runtime": "runtime",
    "Memcpy": "transfer",
    "Memset": "hardware",
}
DEVICE_SIDE = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "mtia_ccp_events", "Kernel",
               "Memcpy", "Memset"}


def test_category_to_lane_kind(tmp_path):
    events = []
    for i, cat in enumerate(KINDS):
        pid, tid = (0, 7) if cat in DEVICE_SIDE else (HOST, HOST)
        events.append(X(cat, f"ev_{cat}", 10 + 10 * i, 5, pid=pid, tid=tid))
    p = write_trace(tmp_path / "cats.json", kineto(events, baseTimeNanoseconds=BASE))
    ev = load_events(p)
    got = {r["category"]: r["lane_kind"] for r in ev.select("category", "lane_kind").to_dicts()}
    assert got == KINDS


def test_unknown_category_is_kept_as_other(tmp_path):
    events = [X("cpu_op", "aten::add", 10, 5, pid=HOST, tid=HOST),
              X("something_new", "mystery", 20, 5, pid=HOST, tid=HOST)]
    ev = load_events(write_trace(tmp_path / "t.json", kineto(events, baseTimeNanoseconds=BASE)))
    assert by_name(ev, "mystery")["lane_kind"] == "other"


def test_profiler_trace_spans_are_not_events(tmp_path):
    events = [X("cpu_op", "aten::add", 10, 5, pid=HOST, tid=HOST),
              {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
               "tid": "PyTorch Profiler", "ts": 0, "dur": 100},
              {"ph": "M", "name": "process_name", "pid": HOST, "tid": 0, "args": {"name": "python"}},
              {"ph": "i", "name": "Record Window End", "s": "g", "pid": "", "tid": "", "ts": 99}]
    ev = load_events(write_trace(tmp_path / "t.json", kineto(events, baseTimeNanoseconds=BASE)))
    assert ev["name"].to_list() == ["aten::add"]


def test_sources_of_cuda_and_mtia_traces(tmp_path):
    cuda = [X("cuda_runtime", "cudaLaunchKernel", 10, 5, pid=HOST, tid=HOST),
            X("kernel", "gemm", 20, 5, pid=0, tid=7, device=0, stream=7)]
    mtia = [X("mtia_runtime", "runFunction", 10, 5, pid=HOST, tid=HOST),
            X("mtia_ccp_events", "pe_exe", 20, 5, pid=17, tid=3910, stream=112)]
    ev_c = load_events(write_trace(tmp_path / "c" / "t.json", kineto(cuda, baseTimeNanoseconds=BASE)))
    ev_m = load_events(write_trace(tmp_path / "m" / "t.json", kineto(mtia, baseTimeNanoseconds=BASE)))
    assert by_name(ev_c, "gemm")["source"] == "cuda"
    assert by_name(ev_c, "cudaLaunchKernel")["source"] == "cuda"
    assert by_name(ev_m, "pe_exe")["source"] == "mtia"
    assert by_name(ev_m, "runFunction")["source"] == "mtia"
    assert by_name(ev_m, "pe_exe")["lane"] == f"PID:{HOST}/MTIA:17/stream:112"


# --- link keys and flows -------------------------------------------------------------------


def test_link_keys_land_in_their_columns(tmp_path):
    events = [
        X("cpu_op", "new_spelling", 10, 5, pid=HOST, tid=HOST, **{"External id": 11}),
        X("cuda_runtime", "old_spelling", 20, 5, pid=HOST, tid=HOST,
          **{"external id": 12, "correlation": 500}),
        X("privateuse1_driver", "neuron", 30, 5, pid=HOST, tid=0,
          correlation=13, nrt_sequence_id=844424930132009),
        X("cpu_op", "none", 40, 5, pid=HOST, tid=HOST),
    ]
    ev = load_events(write_trace(tmp_path / "t.json", kineto(events, baseTimeNanoseconds=BASE)))
    cols = ("external_id", "correlation", "seq_id")
    got = {r["name"]: tuple(r[c] for c in cols) for r in ev.to_dicts()}
    assert got == {
        "new_spelling": (11, None, None),
        "old_spelling": (12, 500, None),
        "neuron": (None, 13, 844424930132009),
        "none": (None, None, None),
    }


def test_ac2g_flow_binds_launch_and_kernel(tmp_path):
    events = [
        # the cpu_op starts at the same instant as the launch: the flow start belongs to the launch
        X("cpu_op", "aten::mm", 100, 30, pid=HOST, tid=HOST, **{"External id": 3}),
        X("cuda_runtime", "cudaLaunchKernel", 100, 10, pid=HOST, tid=HOST, correlation=77),
        {"ph": "s", "id": 77, "pid": HOST, "tid": HOST, "ts": 100, "cat": "ac2g", "name": "ac2g"},
        X("kernel", "gemm", 150, 40, pid=0, tid=7, device=0, stream=7, correlation=77),
        {"ph": "f", "id": 77, "pid": 0, "tid": 7, "ts": 150, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        X("kernel", "other_kernel", 200, 5, pid=0, tid=7, device=0, stream=7),
        # a forward/backward flow is not a device link
        {"ph": "s", "id": 9, "pid": HOST, "tid": HOST, "ts": 100, "cat": "fwdbwd", "name": "fwdbwd"},
    ]
    ev = load_events(write_trace(tmp_path / "t.json", kineto(events, baseTimeNanoseconds=BASE)))
    flows = {r["name"]: r["flow_ids"] for r in ev.select("name", "flow_ids").to_dicts()}
    assert flows == {"aten::mm": None, "cudaLaunchKernel": [77], "gemm": [77], "other_kernel": None}


def test_old_async_gpu_flow_binds_like_ac2g(tmp_path):
    ts = 1_665_536_373_729_065
    events = [
        X("Runtime", "cudaLaunchKernel", ts, 14, pid=HOST, tid=HOST, correlation=538860),
        {"ph": "s", "id": 538860, "pid": HOST, "tid": HOST, "ts": ts, "cat": "async_gpu",
         "name": "cudaLaunchKernel"},
        X("Kernel", "k", ts + 12, 4, pid=0, tid=7, device=0, stream=7, correlation=538860),
        {"ph": "f", "id": 538860, "pid": 0, "tid": 7, "ts": ts + 12, "cat": "async_gpu",
         "name": "cudaLaunchKernel", "bp": "e"},
    ]
    ev = load_events(write_trace(tmp_path / "t.json", kineto(events)))
    assert by_name(ev, "cudaLaunchKernel")["flow_ids"] == [538860]
    assert by_name(ev, "k")["flow_ids"] == [538860]


# --- lanes ---------------------------------------------------------------------------------


def test_gpu_and_host_lane_labels(tmp_path):
    events = [
        X("cpu_op", "aten::mm", 10, 30, pid=HOST, tid=HOST),
        X("cpu_op", "backward", 10, 30, pid=HOST, tid=HOST + 1),
        X("cuda_runtime", "cudaLaunchKernel", 12, 5, pid=HOST, tid=HOST),
        X("kernel", "gemm", 20, 5, pid=1, tid=7, device=1, stream=7),
        X("gpu_memcpy", "Memcpy HtoD", 30, 5, pid=1, tid=13, device=1, stream=13),
        # no args: the device is the event's pid and the stream its tid
        X("kernel", "bare", 40, 5, pid=2, tid=20),
    ]
    ev = load_events(write_trace(tmp_path / "t.json", kineto(events, baseTimeNanoseconds=BASE)))
    lanes = {r["name"]: r["lane"] for r in ev.select("name", "lane").to_dicts()}
    assert lanes == {
        "aten::mm": f"PID:{HOST}/TID:{HOST}",
        "backward": f"PID:{HOST}/TID:{HOST + 1}",
        "cudaLaunchKernel": f"PID:{HOST}/TID:{HOST}",
        "gemm": f"PID:{HOST}/GPU:1/stream:7",
        "Memcpy HtoD": f"PID:{HOST}/GPU:1/stream:13",
        "bare": f"PID:{HOST}/GPU:2/stream:20",
    }
    gemm = by_name(ev, "gemm")
    assert (gemm["pid"], gemm["device"], gemm["stream"]) == (HOST, 1, 7)


NEURON_EVENTS = [  # docs/neuron-formats.md §4.4, the reconstructed RMSNorm trace.json
    X("user_annotation", "ProfilerStep#3", 1000.0, 900.0, pid=HOST, tid=HOST, **{"External id": 1}),
    X("cpu_op", "aten::pow", 1010.25, 35.125, pid=HOST, tid=HOST, **{"External id": 2}),
    X("privateuse1_runtime", "aten::pow", 1015.0, 20.0, pid=HOST, tid=HOST, correlation=2),
    X("privateuse1_driver", "aten::pow", 1030.0, 60.0, pid=HOST, tid=0, correlation=2,
      nrt_sequence_id=844424930132009, neff_cache_key="pow--_[4096,4096]:BFloat16:S(C)_i1:ab12"),
    {"ph": "s", "id": 2, "pid": HOST, "tid": HOST, "ts": 1015.0, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 2, "pid": HOST, "tid": 0, "ts": 1030.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
]


def test_neuron_trace_gets_framework_lanes(tmp_path):
    p = write_trace(tmp_path / "trace.json", kineto(NEURON_EVENTS, baseTimeNanoseconds=BASE))
    ev = load_events(p)
    got = {(r["category"], r["lane"]) for r in ev.select("category", "lane").to_dicts()}
    assert got == {
        ("user_annotation", f"PID:{HOST}/framework/TID:{HOST}"),
        ("cpu_op", f"PID:{HOST}/framework/TID:{HOST}"),
        ("privateuse1_runtime", f"PID:{HOST}/framework/TID:{HOST}"),
        ("privateuse1_driver", f"PID:{HOST}/framework/Stream:0"),
    }
    flows = {r["category"]: r["flow_ids"] for r in ev.to_dicts()}
    assert flows["privateuse1_runtime"] == [2] and flows["privateuse1_driver"] == [2]
    assert flows["cpu_op"] is None


def test_neuron_trace_in_capture_folder_carries_the_instance(tmp_path):
    folder = tmp_path / "i-0123456789abcdef0_pid_4242" / "20261101_120000_000"
    write_trace(folder / "trace.json", kineto(NEURON_EVENTS, baseTimeNanoseconds=BASE))
    ev = load_events(tmp_path)
    assert set(ev["lane"]) == {f"i-0123456789abcdef0/PID:{HOST}/framework/TID:{HOST}",
                               f"i-0123456789abcdef0/PID:{HOST}/framework/Stream:0"}
    assert set(ev["host"]) == {"i-0123456789abcdef0"}


# --- robustness ----------------------------------------------------------------------------


def test_integers_beyond_int64_become_null(tmp_path):
    events = [
        X("cpu_op", "aten::mul", 10, 5, pid=HOST, tid=HOST, **{"External id": 2**64}),
        X("cuda_runtime", "cudaLaunchKernel", 20, 5, pid=HOST, tid=HOST,
          correlation=18446744073709551617),
        X("privateuse1_runtime", "dispatch", 30, 5, pid=HOST, tid=HOST, nrt_sequence_id=2**70),
    ]
    ev = load_events(write_trace(tmp_path / "t.json", kineto(events, baseTimeNanoseconds=BASE)))
    assert ev.height == 3
    assert ev["external_id"].null_count() == 3
    assert ev["correlation"].null_count() == 3
    assert ev["seq_id"].null_count() == 3


def test_timestamp_beyond_int64_does_not_crash(tmp_path):
    events = [X("cpu_op", "fine", 10, 5, pid=HOST, tid=HOST),
              X("cpu_op", "huge_ts", 2**64, 5, pid=HOST, tid=HOST)]
    p = write_trace(tmp_path / "t.json", kineto(events, baseTimeNanoseconds=BASE))
    prof = ta.load(p)
    assert prof.events["name"].to_list() == ["fine"]
    assert prof.dropped  # the bad row is counted, not silently lost


def test_step_from_profiler_step_spans(tmp_path):
    events = [
        X("user_annotation", "ProfilerStep#4", 100, 100, pid=HOST, tid=HOST),
        X("user_annotation", "ProfilerStep#5", 200, 100, pid=HOST, tid=HOST),
        X("cpu_op", "before", 50, 10, pid=HOST, tid=HOST),
        X("cpu_op", "in4", 150, 10, pid=HOST, tid=HOST),
        X("cpu_op", "in5", 250, 10, pid=HOST, tid=HOST),
        X("kernel", "k5", 290, 30, pid=0, tid=7),  # starts in step 5 on the host clock
        X("cpu_op", "after", 400, 10, pid=HOST, tid=HOST),
    ]
    ev = load_events(write_trace(tmp_path / "t.json", kineto(events, baseTimeNanoseconds=BASE)))
    steps = {r["name"]: r["step"] for r in ev.select("name", "step").to_dicts()}
    assert steps == {"ProfilerStep#4": 4, "ProfilerStep#5": 5, "before": None, "in4": 4,
                     "in5": 5, "k5": 5, "after": None}


# --- rank ----------------------------------------------------------------------------------


def _procs(path) -> list[tuple]:
    run = info_json(path)["runs"][0]
    return [(p["pid"], p["rank"], p["rank_origin"]) for p in run["processes"]]


def test_rank_from_distributed_info(tmp_path):
    doc = kineto([X("cpu_op", "a", 10, 5, pid=HOST, tid=HOST)], baseTimeNanoseconds=BASE,
                 distributedInfo={"backend": "nccl", "rank": 5, "world_size": 8})
    # the name says rank 3, but the trace's own distributedInfo wins
    p = write_trace(tmp_path / "rank-3.json", doc)
    assert ta.load(p).events["rank"].to_list() == [5]
    assert _procs(p) == [(HOST, 5, "distributedInfo")]


def test_rank_from_file_name(tmp_path):
    p = write_trace(tmp_path / "rank-3.json",
                    kineto([X("cpu_op", "a", 10, 5, pid=HOST, tid=HOST)], baseTimeNanoseconds=BASE))
    assert ta.load(p).events["rank"].to_list() == [3]
    assert _procs(p) == [(HOST, 3, "file name")]


def test_no_rank_anywhere(tmp_path):
    p = write_trace(tmp_path / "trace.json",
                    kineto([X("cpu_op", "a", 10, 5, pid=HOST, tid=HOST)], baseTimeNanoseconds=BASE))
    assert _procs(p) == [(HOST, None, None)]


def test_gzip_reads_the_same_as_json(tmp_path):
    events = [
        X("user_annotation", "ProfilerStep#1", 0, 100, pid=HOST, tid=HOST),
        X("cpu_op", "aten::mm", 10, 30, pid=HOST, tid=HOST, **{"External id": 3}),
        X("cuda_runtime", "cudaLaunchKernel", 12, 5, pid=HOST, tid=HOST, correlation=8),
        {"ph": "s", "id": 8, "pid": HOST, "tid": HOST, "ts": 12, "cat": "ac2g", "name": "ac2g"},
        X("kernel", "gemm", 20, 5.125, pid=0, tid=7, device=0, stream=7, correlation=8),
        {"ph": "f", "id": 8, "pid": 0, "tid": 7, "ts": 20, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    ]
    doc = kineto(events, baseTimeNanoseconds=BASE)
    plain = load_events(write_trace(tmp_path / "a" / "t.json", doc)).drop("file")
    packed = load_events(write_trace(tmp_path / "b" / "t.json.gz", doc)).drop("file")
    assert plain.height == 4
    assert plain.equals(packed)


def test_steps_come_from_the_hosts_annotations_not_a_gpus_copy(tmp_path):
    """Kineto copies ProfilerStep#N onto a stream (gpu_user_annotation, a few µs, late in the
    host's step): host events after that copy's end are still in the host's step."""
    path = write_trace(tmp_path / "t.json", kineto([
        X("user_annotation", "ProfilerStep#1", 0, 100),
        X("gpu_user_annotation", "ProfilerStep#1", 50, 2, pid=0, tid=7, device=0, stream=7),
        X("cpu_op", "aten::mm", 10, 5),
        X("cpu_op", "aten::add", 60, 5),  # after the copy's end, inside the host's step
        X("cpu_op", "aten::mul", 120, 5),  # after the step
    ]))
    ev = ta.load(path).events
    steps = dict(zip(ev["name"].cast(pl.String), ev["step"], strict=True))
    assert (steps["aten::mm"], steps["aten::add"], steps["aten::mul"]) == (1, 1, None)
