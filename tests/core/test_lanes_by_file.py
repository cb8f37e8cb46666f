"""Two files of one run that share a pid and a device keep their own lanes; a copy is read once.

Two ranks in containers are both pid 1 on GPU 0; named after process and device, their lanes
would be one, their busy time merged and their executions counted together. A trace and its
byte-identical copy (``trace.json``, ``trace (1).json``) would count every event twice.
"""

from __future__ import annotations

import json
import shutil

from conftest import X, kineto, run_cli, write_trace

import trace_analyzer as ta
from trace_analyzer.inputs import fingerprint

BASE_NS = 1_700_000_000_000_000_000  # baseTimeNanoseconds: ts are µs after it
US = 1_000


def rank_trace(rank: int | None, kernels: list[tuple[int, int]], pid: int = 1,
               launch_at: int = 10, **top) -> dict:
    """One process's trace: an op, a launch (correlation 5) and its kernels on GPU 0 stream 7.

    ``kernels`` are (start, end) in µs after the base; every kernel has correlation 5, so
    the only launch a kernel may belong to is its own file's.
    """
    events = [X("cpu_op", "aten::mm", 0, 900, pid=pid, tid=pid),
              X("cuda_runtime", "cudaLaunchKernel", launch_at, 5, pid=pid, tid=pid,
                correlation=5)]
    events += [X("kernel", f"k{i}", s, e - s, pid=0, tid=7, correlation=5, device=0, stream=7)
               for i, (s, e) in enumerate(kernels)]
    if rank is not None:
        top["distributedInfo"] = {"rank": rank}
    return kineto(events, baseTimeNanoseconds=BASE_NS, **top)


R0 = [(100, 200), (300, 400)]  # rank 0's kernels, µs
R1 = [(150, 250), (500, 600)]  # rank 1's: overlapping rank 0's first, so a merged lane differs


def busy_us(kernels: list[tuple[int, int]]) -> int:
    """The busy time of one lane's kernels (here they never overlap within a file)."""
    return sum(e - s for s, e in kernels)


def gaps_json(folder) -> dict:
    code, out, err = run_cli("gaps", folder, "--format", "json", "--no-cache")
    assert code == 0, err
    return json.loads(out)["runs"][0]


def test_two_ranks_sharing_pid_and_device_keep_their_own_devices(tmp_path):
    write_trace(tmp_path / "rank0.json", rank_trace(0, R0))
    write_trace(tmp_path / "rank1.json", rank_trace(1, R1))
    run = gaps_json(tmp_path)
    devices = {d["device"]: d for d in run["devices"]}
    assert set(devices) == {"rank:0/PID:1/GPU:0", "rank:1/PID:1/GPU:0"}, devices
    assert devices["rank:0/PID:1/GPU:0"]["busy_ns"] == busy_us(R0) * US
    assert devices["rank:1/PID:1/GPU:0"]["busy_ns"] == busy_us(R1) * US
    assert devices["rank:0/PID:1/GPU:0"]["executions"] == len(R0)
    assert run["summary"]["busy_ns"] == (busy_us(R0) + busy_us(R1)) * US
    # rank 1 idles from its first kernel's end to its second's start, whatever rank 0 does
    assert devices["rank:1/PID:1/GPU:0"]["idle_ns"] == (R1[1][0] - R1[0][1]) * US


def test_files_without_distinct_ranks_are_kept_apart_by_file(tmp_path):
    write_trace(tmp_path / "a.json", rank_trace(None, R0))
    write_trace(tmp_path / "b.json", rank_trace(None, R1))
    lanes = set(ta.load(tmp_path).events["lane"].unique())
    assert lanes == {f"file:{f}/PID:1/{lane}" for f in ("a.json", "b.json")
                     for lane in ("TID:1", "GPU:0/stream:7")}
    code, out, _ = run_cli("info", tmp_path, "--no-cache")
    assert code == 0 and "kept apart by file" in out


def test_each_kernel_links_to_its_own_files_launch(tmp_path):
    # rank 1 launches later than rank 0 with the same correlation id: on one process the
    # earlier launch (rank 0's) would take rank 1's kernels too
    write_trace(tmp_path / "rank0.json", rank_trace(0, R0, launch_at=10))
    write_trace(tmp_path / "rank1.json", rank_trace(1, R1, launch_at=20))
    p = ta.load(tmp_path)
    files = dict(zip(p.events["event_id"], p.events["file"], strict=True))
    kernels = set(p.events.filter(p.events["name"].cat.starts_with("k"))["event_id"])
    hops = p.edges.filter(p.edges["dst"].is_in(list(kernels)))
    assert hops.height == len(R0) + len(R1)
    assert all(files[s] == files[d] for s, d in hops.select("src", "dst").iter_rows())


def test_identical_copy_is_read_once_with_a_warning_naming_both(tmp_path):
    original = write_trace(tmp_path / "trace.json", rank_trace(0, R0))
    copy = tmp_path / "trace (1).json"
    shutil.copyfile(original, copy)
    run = gaps_json(tmp_path)
    assert run["summary"]["executions"] == len(R0)
    assert [d["device"] for d in run["devices"]] == ["PID:1/GPU:0"]  # its lanes keep their names
    said = [w for w in run["warnings"] if str(copy) in w and str(original) in w]
    assert len(said) == 1, run["warnings"]
    code, out, _ = run_cli("gaps", tmp_path, "--no-cache")  # the report opens with it
    assert code == 0 and f"{copy}: the same bytes as {original}" in out


def test_only_files_of_equal_size_are_hashed(tmp_path, monkeypatch):
    small = write_trace(tmp_path / "a.json", rank_trace(0, R0))
    big = write_trace(tmp_path / "b.json", rank_trace(0, R0 + R1))
    same = tmp_path / "c.json"
    shutil.copyfile(small, same)
    hashed = []
    real = fingerprint._digest
    monkeypatch.setattr(fingerprint, "_digest", lambda f: hashed.append(f.name) or real(f))
    assert fingerprint.same_bytes([small, big, same]) == [(small, same)]
    assert sorted(hashed) == ["a.json", "c.json"]  # b.json has a size of its own


# Guards of what must not change (the golden outputs rely on them).


def test_ranks_with_their_own_pids_keep_their_lane_names(tmp_path):
    write_trace(tmp_path / "rank0.json", rank_trace(0, R0, pid=11))
    write_trace(tmp_path / "rank1.json", rank_trace(1, R1, pid=12))
    lanes = set(ta.load(tmp_path).events["lane"].unique())
    assert lanes == {f"PID:{pid}/{lane}" for pid in (11, 12)
                     for lane in (f"TID:{pid}", "GPU:0/stream:7")}


def test_one_process_traced_twice_in_turn_stays_one_lane(tmp_path):
    # two profiling windows of one process, one after the other: one process, one device
    write_trace(tmp_path / "first.json", rank_trace(0, R0))
    later = rank_trace(0, [(s + 10_000, e + 10_000) for s, e in R1])
    for e in later["traceEvents"]:
        e["ts"] += 10_000
    write_trace(tmp_path / "second.json", later)
    run = gaps_json(tmp_path)
    assert [d["device"] for d in run["devices"]] == ["PID:1/GPU:0"]
    assert run["summary"]["executions"] == len(R0) + len(R1)


def test_op_nesting_stays_within_its_own_file(tmp_path):
    """Both files' ops run on pid 1, tid 1 at once: a.json's op (0-900 µs) does not enclose
    b.json's (100-300 µs), so each op's self CPU time is its own duration."""
    a = [X("cpu_op", "aten::outer", 0, 900, pid=1, tid=1)]
    b = [X("cpu_op", "aten::inner", 100, 200, pid=1, tid=1)]
    write_trace(tmp_path / "a.json", kineto(a, baseTimeNanoseconds=BASE_NS))
    write_trace(tmp_path / "b.json", kineto(b, baseTimeNanoseconds=BASE_NS))
    code, out, err = run_cli("ops", tmp_path, "--format", "json", "--no-cache")
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)["runs"][0]["rows"]}
    assert rows["aten::outer"]["self_cpu_us"] == 900  # was 700: b's op counted as its child
    assert rows["aten::inner"]["self_cpu_us"] == 200


def test_a_gaps_launching_thread_is_its_own_files(tmp_path):
    """a.json's GPU idles from 200 µs until a launch at 500 µs (host dispatch), its thread in
    an op all along; b.json, on the same pid and tid, synchronizes from 250 to 450 µs. The
    gap's host time is a's framework time, none of it b's sync."""
    a = [X("cpu_op", "aten::a", 0, 900, pid=1, tid=1),
         X("cuda_runtime", "cudaLaunchKernel", 50, 5, pid=1, tid=1, correlation=1),
         X("kernel", "k0", 100, 100, pid=0, tid=7, correlation=1, device=0, stream=7),
         X("cuda_runtime", "cudaLaunchKernel", 500, 5, pid=1, tid=1, correlation=2),
         X("kernel", "k1", 510, 90, pid=0, tid=7, correlation=2, device=0, stream=7)]
    b = [X("cuda_runtime", "cudaDeviceSynchronize", 250, 200, pid=1, tid=1)]
    write_trace(tmp_path / "a.json", kineto(a, baseTimeNanoseconds=BASE_NS))
    write_trace(tmp_path / "b.json", kineto(b, baseTimeNanoseconds=BASE_NS))
    (gap,) = ta.gaps(ta.load(tmp_path, cache=False)).gaps.iter_rows(named=True)
    assert (gap["start_ns"], gap["cause"]) == (200 * US + BASE_NS, "host_dispatch"), gap
    assert gap["host_sync_ns"] == 0  # was 200 µs: b's sync on "the same" thread
    assert gap["host_framework_ns"] == (500 - 200) * US
