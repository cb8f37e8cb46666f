"""The host's side of each idle interval (issue 35): the launch call that blocked, the runtime
call and the Python frame that held the launching thread, the DataLoader the device waited on.

Every expectation on the corpus is computed here from the raw JSON in a few plain lines (the
device's busy union, the next kernel's launch call by correlation, the calls and frames on the
launching thread over the late interval, the DataLoader's annotations), never from traceana's
output; the figures are then written in words with the same ``duration`` every output uses.
"""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from conftest import X, kineto, union_of, write_trace

import trace_analyzer as ta
from trace_analyzer.numbers import duration

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
COMPUTE = {"kernel", "Kernel"}  # but collectives (by name): docs/gaps.md, the device's states
OTHER = {"gpu_memset", "Memset", "gpu_memcpy", "Memcpy"}
CALLS = {"cuda_runtime", "cuda_driver", "Runtime"}
BASE = 1_793_620_800_000_000_000


def raw(trace: str) -> tuple[list[dict], int, Path]:
    """The complete events of a corpus trace folder's one file, its time base, its folder."""
    folder = CORPUS / trace
    files = sorted(folder.glob("*.json*")) if folder.is_dir() else []
    if not files:
        pytest.skip(f"{folder} is absent: the shared corpus is not checked out beside the repo")
    data = files[0].read_bytes()
    doc = json.loads(gzip.decompress(data) if files[0].suffix == ".gz" else data)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    base = int(doc.get("baseTimeNanoseconds", 0)) if isinstance(doc, dict) else 0
    return [e for e in events if e.get("ph") == "X" and "dur" in e], base, folder


def ns(ts: float, base: int) -> int:
    return int(Decimal(repr(ts)) * 1000) + base


def span(e: dict, base: int) -> tuple[int, int]:
    return ns(e["ts"], base), ns(e["ts"], base) + round(Decimal(repr(e["dur"])) * 1000)


def computes(e: dict) -> bool:
    return e.get("cat") in COMPUTE and not re.search("nccl|rccl", e["name"], re.I)


def device_gaps(xs: list[dict], base: int) -> list[tuple[int, int, dict]]:
    """Every gap of the (one) GPU's compute union, over 1 ns, with the execution that ends it."""
    hw = sorted((span(e, base) + (e,) for e in xs if computes(e)), key=lambda s: s[:2])
    out, end = [], hw[0][1]
    for s0, s1, e in hw[1:]:
        if s0 - end > 1:
            out.append((end, s0, e))
        end = max(end, s1)
    return out


def holes(busy: list[tuple[int, int]], a: int, b: int) -> list[tuple[int, int]]:
    """The parts of [a, b] no interval of ``busy`` (a union, sorted) covers."""
    out, at = [], a
    for s, e in busy:
        if e <= at or s >= b:
            continue
        if s > at:
            out.append((at, s))
        at = max(at, e)
    return out + ([(at, b)] if at < b else [])


def launch_of(xs: list[dict], kernel: dict) -> dict:
    corr = kernel["args"]["correlation"]
    (call,) = [e for e in xs if e.get("cat") in CALLS and e.get("args", {}).get("correlation") == corr]
    return call


def held_most(ranges: list[tuple[int, int, str]], a: int, b: int) -> list[tuple[int, int, str]]:
    """The ranges that hold more than half of [a, b), outermost first (a nest: by start)."""
    held = [(s, e, n) for s, e, n in ranges if 2 * (min(e, b) - max(s, a)) > b - a]
    return sorted(held, key=lambda r: (r[0], -r[1]))


def test_bert_s_longest_gap_names_the_inspect_signature_frame():
    xs, base, folder = raw("real/tracelens/h100_bert")
    g0, g1, nxt = max(device_gaps(xs, base), key=lambda g: g[1] - g[0])
    call = launch_of(xs, nxt)
    a, b = g0, min(span(call, base)[0], g1)
    frames = [span(e, base) + (e["name"],) for e in xs
              if e.get("cat") == "python_function" and e["tid"] == call["tid"]]
    chain = held_most(frames, a, b)  # the stack of frames holding most of the late time
    file_of = [re.match(r"^(.+)\(\d+\): ", n) for _, _, n in chain]
    k = len(chain) - 1  # from the deepest up while the caller is in the same file
    while k > 0 and file_of[k] and file_of[k - 1] and file_of[k][1] == file_of[k - 1][1]:
        k -= 1
    frame, caller = chain[k], chain[k - 1]
    assert frame[2] == "inspect.py(3346): signature"  # the reading of the file
    assert caller[2] == "transformers/pytorch_utils.py(186): apply_chunking_to_forward"
    got = ta.gaps(ta.load(folder))
    row = got.device_gaps.sort("duration_ns", descending=True).row(0, named=True)
    assert (row["start_ns"], row["end_ns"]) == (g0, g1)
    held = min(frame[1], b) - max(frame[0], a)
    assert (row["host_frame"], row["host_frame_ns"], row["host_caller"]) == (
        frame[2], held, caller[2])
    assert f"{duration(held)} in the Python frame {frame[2]} (called from {caller[2]})" in (
        row["evidence"])
    hints = " ".join(h["hint"] for h in got.hints)
    assert "with_stack=True" not in hints  # the trace has its frames already


@pytest.mark.parametrize("trace", ["critical_path/alexnet", "critical_path/simple_add"])
def test_the_first_cudnn_launch_s_gap_names_the_allocator_and_the_blocking_launch(trace):
    xs, base, folder = raw(f"hta/tests/data/{trace}")
    gaps = device_gaps(xs, base)
    g0, g1, nxt = max(gaps, key=lambda g: g[1] - g[0])
    call = launch_of(xs, nxt)
    l0, l1 = span(call, base)
    calls = [span(e, base) + (e["name"],) for e in xs
             if e.get("cat") in CALLS and e["tid"] == call["tid"]]
    # the innermost call holding most of the late time: cudaFree on alexnet; on simple_add
    # none (the gap begins at the end of its compute, before a 4 µs memset that once split it,
    # and cudaFree's 5.18 s is less than half of the 11.38 s the launch came late)
    held = held_most(calls, g0, l0)[-1:]
    assert [h[2] for h in held] == (["cudaFree"] if "alexnet" in trace else [])
    in_call = min(l1, g1) - max(l0, g0)
    assert in_call > 1_000_000_000  # the launch itself blocked for seconds (a first cuDNN call)
    row = ta.gaps(ta.load(folder)).device_gaps.filter(pl.col("start_ns") == g0).row(0, named=True)
    assert row["end_ns"] == g1 and row["launch_call_ns"] == in_call
    words = row["evidence"]
    for h in held:
        assert f"; {duration(min(h[1], l0) - max(h[0], g0))} in cudaFree" in words
    assert f"then cudaLaunchKernel itself took {duration(in_call)}" in words


def test_a_launch_call_that_held_most_of_the_gap_is_launch_blocked():
    xs, base, folder = raw("hta/tests/data/amd_trace")
    g0, g1, nxt = max(device_gaps(xs, base), key=lambda g: g[1] - g[0])
    call = launch_of(xs, nxt)
    l0, l1 = span(call, base)
    in_call = min(l1, g1) - max(l0, g0)
    assert 2 * in_call > g1 - g0 and call["name"] == "hipLaunchKernel"
    row = ta.gaps(ta.load(folder)).device_gaps.filter(pl.col("start_ns") == g0).row(0, named=True)
    assert row["cause"] == "launch_blocked" and row["launch_call_ns"] == in_call
    assert row["evidence"].startswith(f"hipLaunchKernel held the next execution {duration(in_call)}")


@pytest.mark.parametrize("trace", ["real/kineto/tb_plugin_resnet50",
                                   "real3/kineto_array/resnet50_num_workers_4"])
def test_the_data_loader_s_share_of_idle_is_stated(trace):
    """tb_plugin_resnet50 (one worker) waits on its DataLoader for most of its idle; the
    early-Kineto array trace (four workers) hardly at all: both shares stated, from the raw."""
    xs, base, folder = raw(trace)
    loads = sorted(span(e, base) for e in xs if re.match(r"enumerate\(DataLoader\)#.*__next__", e["name"]))
    # the idle: the gaps in the compute, less the copies and sets (and collectives) in them
    busy = union_of([span(e, base) for e in xs if e.get("cat") in OTHER or
                     (e.get("cat") in COMPUTE and not computes(e))])
    idle_parts = [(a, b) for g0, g1, _ in device_gaps(xs, base)
                  for a, b in holes(busy, g0, g1)]
    inside = sum(max(0, min(b, e) - max(a, s)) for a, b in idle_parts for s, e in loads)
    idle = sum(b - a for a, b in idle_parts)
    assert (inside > idle / 2) == ("tb_plugin" in trace)  # most of the idle, or little
    got = ta.gaps(ta.load(folder))
    assert got.summary["idle_in_data_loader_ns"] == inside
    assert got.summary["idle_ns"] == idle
    (hint,) = [h for h in got.hints if h["cause"] == "data_loader"]
    assert hint["idle_ns"] == inside and f"{100 * inside / idle:.1f} %" in hint["hint"]
    for h in got.hints:  # a host mostly fetching batches is not told to fuse its ops
        assert "fusing the ops" not in h["hint"] or 2 * inside <= idle, h


# The rule on a trace written here: kernel A, then B whose launch call blocks.


def blocked_trace(tmp_path: Path, call_us: float, called_at: float) -> Path:
    """Six quick kernels launched in 5 µs calls, then one whose launch call (``call_us``,
    called at ``called_at`` µs) returns just before it starts at 1,000 µs."""
    events = []
    for i in range(6):
        t = 10.0 * i
        events += [X("cuda_runtime", "cudaLaunchKernel", t, 5, tid=1, correlation=i),
                   X("kernel", f"k{i}", t + 6, 3, pid=0, tid=7, device=0, stream=7, correlation=i)]
    events += [X("cuda_runtime", "cudaLaunchKernel", called_at, call_us, tid=1, correlation=9),
               X("kernel", "last", called_at + call_us + 1, 3, pid=0, tid=7, device=0, stream=7,
                 correlation=9)]
    return write_trace(tmp_path / "trace.json", kineto(events, baseTimeNanoseconds=BASE))


def test_a_long_launch_call_is_launch_blocked_and_a_normal_one_is_not(tmp_path):
    late = ta.gaps(ta.load(blocked_trace(tmp_path / "a", call_us=900, called_at=90)))
    last = late.gaps.sort("start_ns").row(-1, named=True)
    assert last["cause"] == "launch_blocked" and last["launch_call_ns"] == 900_000
    assert last["launch_typical_ns"] == 5_000
    assert "called 31 µs after the lane went idle" in last["evidence"]
    quick = ta.gaps(ta.load(blocked_trace(tmp_path / "b", call_us=5, called_at=985)))
    last = quick.gaps.sort("start_ns").row(-1, named=True)
    assert last["cause"] == "host_dispatch"  # launched late, the call itself as quick as any


HINTED = ["hta/tests/data/critical_path/alexnet", "hta/tests/data/amd_trace",
          "real/tracelens/h100_bert", "real/kineto/tb_plugin_resnet50",
          "real/tracelens/b200_eager", "real/param/dlrm_kineto"]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("where", [*HINTED, "fixtures/rmsnorm_naive", "fixtures/rmsnorm_compiled"])
def test_every_figure_a_hint_cites_is_the_run_s_own(where):
    folder = FIXTURES / where.split("/", 1)[1] if where.startswith("fixtures/") else CORPUS / where
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: the shared corpus is not checked out beside the repo")
    g = ta.gaps(ta.load(folder))
    d = g.device_gaps
    own = {duration(h["idle_ns"]) for h in g.hints}  # each hint's own idle
    for column in ("host_call_ns", "host_frame_ns", "host_data_loader_ns"):  # per op and in all
        by = ["next_op", column.removesuffix("_ns")] if column != "host_data_loader_ns" else ["next_op"]
        own |= {duration(v) for v in d.group_by(by).agg(pl.col(column).sum())[column]}
        own.add(duration(d[column].sum()))
    cited = [(m, h["hint"]) for h in g.hints
             for m in re.findall(r"\d[\d,.]* (?:ns|µs|ms|s)\b", h["hint"])]
    assert all(m in own for m, _ in cited), [c for c in cited if c[0] not in own]
    assert not any("RMSNorm" in h["hint"] for h in g.hints)


def nested(rng, start: int, end: int, depth: int) -> list[tuple[int, int]]:
    """Random properly nested ranges inside [start, end)."""
    out, t = [], start
    while depth and t < end - 2 and rng.random() < 0.8:
        s = rng.randint(t, end - 2)
        e = rng.randint(s + 1, min(end, s + (end - start) // 2 + 1))
        out += [(s, e), *nested(rng, s, e, depth - 1)]
        t = e
    return out


@pytest.mark.parametrize("seed", range(40))
def test_held_finds_the_deepest_range_holding_more_than_half(seed):
    import random

    from trace_analyzer.questions.gaps.host import held

    rng = random.Random(seed)
    ranges = {tid: nested(rng, 0, 1000, 4) for tid in (1, 2)}
    marks = pl.DataFrame(
        [(1, tid, s, e, f"c{tid}_{s}_{e}") for tid, rs in ranges.items() for s, e in rs],
        schema={"_pid": pl.Int64, "_tid": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64,
                "name": pl.String}, orient="row")
    probes = []
    for r in range(60):
        a = rng.randint(0, 990)
        probes.append((r, 1, rng.choice((1, 2)), a, rng.randint(a, 1000)))
    late = pl.DataFrame(probes, schema=["_r", "_pid", "_tid", "start_ns", "_late_end"], orient="row")
    late = late.with_columns(pl.col("_r").cast(pl.UInt32))
    got = {r: (n, ns) for r, n, ns in held(late, marks, "host_call", entry=False).rows()}
    for r, _, tid, a, b in probes:
        holding = [(s, e) for s, e in ranges[tid] if 2 * (min(e, b) - max(s, a)) > b - a]
        if not holding:
            assert r not in got
            continue
        s, e = max(holding, key=lambda x: (x[0], -x[1]))  # the deepest of a nest
        assert got[r] == (f"c{tid}_{s}_{e}", min(e, b) - max(s, a)), (r, a, b)


def test_a_gap_in_torch_compile_s_own_code_is_not_told_to_fuse():
    """b200_eager's compiled region (vLLM, torch.compile): the first kernel it launches ends
    a gap that Dynamo's compile_wrapper frame held for most of its late time. The region's
    share of the gap and the frame are found from the raw file; the op is told that the code
    is compiled already (CUDA graphs, recompilations), not to fuse or compile."""
    xs, base, folder = raw("real/tracelens/b200_eager")
    (region,) = [span(e, base) for e in xs if e["name"].startswith("Torch-Compiled Region")]
    launched = [e for e in xs if e.get("cat") in CALLS and region[0] <= span(e, base)[0] < region[1]
                and "correlation" in e.get("args", {})]
    first = min(launched, key=lambda e: e["ts"])
    g0, g1, nxt = next(g for g in device_gaps(xs, base)
                       if g[2].get("args", {}).get("correlation") == first["args"]["correlation"])
    frames = [span(e, base) + (e["name"],) for e in xs
              if e.get("cat") == "python_function" and e["tid"] == first["tid"]]
    l0 = span(first, base)[0]
    held = [f for f in held_most(frames, g0, l0) if "torch/_dynamo/" in f[2]]
    assert held  # a Dynamo frame held most of the late time
    got = ta.gaps(ta.load(folder))
    row = got.device_gaps.filter(pl.col("start_ns") == g0).row(0, named=True)
    assert row["host_compiled_ns"] == min(g1, region[1]) - max(g0, region[0])
    assert "inside a Torch-Compiled Region" in row["evidence"]
    from trace_analyzer.questions.gaps.hints import hints
    from trace_analyzer.questions.gaps.tally import tally
    gap = tally(got.device_gaps.filter(pl.col("start_ns") == g0), pl.DataFrame())
    (hint,) = [h for h in hints(gap, False, frames=True, vendor="cuda") if h["op"]]
    assert "torch.compile's own code" in hint["hint"] and "CUDA graph" in hint["hint"]
    assert "fuse or compile" not in hint["hint"]


@pytest.mark.parametrize("trace", ["real/tracelens/b200_eager", "real/tracelens/sglang_decode",
                                   "real/tracelens/mi300_resnet",
                                   "real3/particle_transformer/a100_fwd_bs128",
                                   "hta/tests/data/mtia_inference_trace"])
def test_an_inference_run_launched_kernel_by_kernel_hears_of_graphs(trace):
    """Told to capture a graph exactly where the raw file records no backward pass, no graph
    replay, and CUDA or HIP launches (MTIA has no such graphs)."""
    xs, _, folder = raw(trace)
    names = [e["name"] for e in xs]
    backward = any("Backward" in n or n.startswith("autograd::engine::evaluate_function")
                   for n in names)
    replays = any(re.match(r"(cuda|hip)GraphLaunch", n) for n in names)
    gpu = any(re.match(r"(cuda|hip)LaunchKernel", n) for n in names)
    want = gpu and not backward and not replays
    told = [h for h in ta.gaps(ta.load(folder)).hints if "no backward pass" in h["hint"]]
    assert bool(told) == want, (trace, backward, replays, gpu)
    for h in told:
        graph = "HIP graph" if any(n.startswith("hip") for n in names) else "CUDA graph"
        assert graph in h["hint"]
