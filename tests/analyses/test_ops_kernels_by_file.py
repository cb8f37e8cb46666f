"""`ops` and `kernels` of a multi-rank run measured a rank's file at a time and reduced
(questions/ops/per_rank.py, questions/kernels/per_rank.py; docs/distributed.md): the result
is the run read whole's, to the byte of its JSON, on DLRM's 8 ranks, a bench/gen_ranks.py
run, the corpus's other runs that can be read a file at a time, and runs whose files share
process numbers (told apart, or one process of one rank whose kernels' durations are split
between two files: their medians and p95s are made again from the counts).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from by_files import held
from conftest import X, kineto, write_trace
from test_ranks_by_file import DLRM, generated

from trace_analyzer.analyses.passes import in_process
from trace_analyzer.questions.kernels.analysis import kernels
from trace_analyzer.questions.kernels.per_rank import kernels_passes
from trace_analyzer.questions.ops.analysis import ops
from trace_analyzer.questions.ops.per_rank import ops_passes

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
RUNS = {"dlrm": DLRM, "trace_filter": CORPUS / "hta/tests/data/trace_filter"}


def as_json(result) -> str:
    return json.dumps(result.to_json(), sort_keys=False, default=str)


def same(path: Path) -> tuple[dict, dict]:
    """Both questions of the run at ``path`` read whole and a file at a time; equal."""
    whole, files = held(path)
    o, k = ops(whole), kernels(whole)
    assert as_json(in_process(ops_passes(whole.name), files)) == as_json(o)
    assert as_json(in_process(kernels_passes(whole.name), files)) == as_json(k)
    return o.to_json(), k.to_json()


@pytest.fixture(scope="module")
def run8(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gen") / "run"
    generated(folder)
    return folder


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_corpus_run_a_rank_at_a_time_is_the_run_read_whole(name):
    path = RUNS[name]
    if not path.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    o, k = same(path)
    assert o["rows"] and k["kernels"] and k["kinds"]


def test_a_generated_run_a_rank_at_a_time_is_the_run_read_whole(run8):
    o, k = same(run8)
    assert len({(r["rank"], r["pid"]) for r in k["kinds"]}) == 8
    assert o["executions"] == sum(r["count"] for r in k["kinds"])


def write_ranks(folder: Path, spans: dict[int, list[tuple[int, int]]], ranked: bool) -> None:
    """A file per rank, both pid 1 on GPU 0: an op launching a kernel ``k`` per span, and a
    kernel no op launched (``(unlinked)``: no dispatch latency)."""
    for rank, kernels_at in spans.items():
        lo, hi = kernels_at[0][0] - 100, kernels_at[-1][1] + 50
        events = [
            X("user_annotation", "ProfilerStep#1", lo, hi - lo, pid=1, tid=1),
            X("kernel", "unlaunched", hi - 40, 3, pid=0, tid=7, device=0, stream=7),
        ]
        for i, (s, e) in enumerate(kernels_at):
            c = 100 * rank + i
            events += [
                X("cpu_op", "aten::mm", s - 60, 50, pid=1, tid=1),
                X("cuda_runtime", "cudaLaunchKernel", s - 50, 5, pid=1, tid=1, correlation=c),
                X("kernel", "k", s, e - s, pid=0, tid=7, correlation=c, device=0, stream=7),
            ]
        top = {"distributedInfo": {"rank": rank}} if ranked else {}
        write_trace(folder / f"trace{rank}.json", kineto(events, **top))


@pytest.mark.parametrize("ranked", [True, False])
def test_files_sharing_process_numbers_are_told_apart_as_when_read_whole(tmp_path, ranked):
    """Two ranks in containers, both pid 1 on GPU 0 at the same time: their processes are
    numbered apart, as loading numbers them in a run read whole."""
    write_ranks(tmp_path, {0: [(100, 200), (300, 410)], 1: [(150, 250), (500, 630)]}, ranked)
    _, k = same(tmp_path)
    assert len({r["pid"] for r in k["kernels"]}) == 2


def test_one_process_split_between_files_has_the_quantiles_of_all_its_kernels(tmp_path):
    """Two files of no rank, pid 1, far apart in time: read whole, one process, whose kernels'
    p50 and p95 fall between values of both files."""
    spans = {0: [(100, 107), (300, 313)], 1: [(5000, 5011), (6000, 6013), (7000, 7019)]}
    write_ranks(tmp_path, spans, False)
    o, k = same(tmp_path)
    (row,) = [r for r in k["kernels"] if r["name"] == "k"]
    assert (row["count"], row["p50_ns"], row["p95_ns"]) == (5, 13000, 17800)
    assert [r["mean_dispatch_to_hw_us"] for r in o["rows"]] == [50.0, None]
