"""`traceana diff` of two sides that are not the same kind of run (issue 39), as real processes:
rank 3 of an 8-rank run against rank 1 of a 2-rank run, a GPU trace against a Neuron one. The
diff warns in one line naming what differs; with --fail-on it refuses (exit 2, one line)
unless --allow-mismatch. The traces are written here, each rank's number in its
distributedInfo, and the expected words come from what was written.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from conftest import X, kineto, run_process, write_trace

ROOT = Path(__file__).resolve().parents[2]
NAIVE = ROOT / "fixtures" / "rmsnorm_naive"


def rank_run(folder: Path, rank: int, world: int, kernels: int = 6) -> Path:
    """One rank's trace of ``kernels`` kernels on GPU 0, stream 7, under ProfilerStep#1."""
    events = [X("user_annotation", "ProfilerStep#1", 0, 2000, pid=1, tid=1)]
    events += [X("kernel", f"k{i}", 100 + 15 * i, 10, pid=0, tid=7, device=0, stream=7)
               for i in range(kernels)]  # fmt: skip
    info = {"rank": rank, "world_size": world, "backend": "nccl"}
    write_trace(folder / f"rank{rank}.json", kineto(events, distributedInfo=info))
    return folder


def diff(*args: object) -> tuple[int, str, str]:
    code, out, err, _, _ = run_process("diff", *args, "--no-cache")
    return code, out, err


def test_ranks_that_differ_warn_and_refuse_a_gate(tmp_path):
    base = rank_run(tmp_path / "two", rank=1, world=2)
    head = rank_run(tmp_path / "eight", rank=3, world=8)
    code, out, err = diff(base, head)
    assert code == 0, err
    (line,) = err.strip().splitlines()
    differ = "ranks (base 1, head 3), world size (base 2, head 8)"
    assert line == (f"traceana: warning: {base} → {head}: the sides differ in {differ}: not "
                    "the same work?")  # fmt: skip
    assert f"The sides differ in {differ}" in out
    code, out, err = diff(base, head, "--fail-on", "idle_pct_delta>2")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line == (f"traceana: error: {base} → {head}: the sides differ in {differ}: a gate "
                    "on them compares different work (--allow-mismatch to gate anyway)")  # fmt: skip
    code, out, err = diff(base, head, "--fail-on", "idle_pct_delta>2", "--allow-mismatch",
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["runs"][0]["mismatch"] == differ


def test_a_gpu_trace_against_a_neuron_one(tmp_path):
    gpu = rank_run(tmp_path / "gpu", rank=0, world=1)
    code, out, err = diff(NAIVE, gpu, "--fail-on", "device_time_pct_delta>5")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "the sides differ in platform (base Neuron, head CUDA)" in line


def test_the_same_kind_of_run_says_nothing(tmp_path):
    base = rank_run(tmp_path / "a", rank=1, world=2)
    head = rank_run(tmp_path / "b", rank=1, world=2, kernels=7)
    code, out, err = diff(base, head, "--fail-on", "idle_pct_delta>50", "--format", "json")
    assert code == 0 and err == "", err
    assert json.loads(out)["runs"][0]["mismatch"] is None


def test_the_same_rank_of_jobs_of_other_sizes_differs_in_world_size(tmp_path):
    base = rank_run(tmp_path / "two", rank=0, world=2)
    head = rank_run(tmp_path / "eight", rank=0, world=8)
    code, out, err = diff(base, head, "--fail-on", "idle_pct_delta>2")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "the sides differ in world size (base 2, head 8)" in line, line
    code, out, err = diff(base, head, "--format", "json")
    assert code == 0 and json.loads(out)["runs"][0]["mismatch"] == "world size (base 2, head 8)"


def test_the_world_size_of_a_real_run_is_its_distributed_info(tmp_path):
    corpus = ROOT.parent / "shared" / "corpus" / "hta" / "tests" / "data" / "trace_filter"
    trace = corpus / "sampled_rank-0.json.gz"
    if not trace.is_file():
        pytest.skip(f"{trace} is absent (the shared corpus)")
    raw = json.loads(gzip.decompress(trace.read_bytes()))
    want = raw.get("distributedInfo", {}).get("world_size")
    assert want, "the corpus trace carries no world size"
    saved = tmp_path / "base.json"
    code, _, err, _, _ = run_process("baseline", "save", trace, "-o", saved, "--no-cache")
    assert code == 0, err
    (run,) = json.loads(saved.read_text())["runs"]
    assert run["shape"]["world_size"] == str(want)
    assert run["shape"]["ranks"] == str(raw["distributedInfo"]["rank"])
