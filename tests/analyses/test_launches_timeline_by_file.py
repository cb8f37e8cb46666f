"""The report's launches and its timeline a rank at a time (questions/launches/per_rank.py,
questions/report/timeline_parts.py; docs/distributed.md): each trace file of a multi-rank
run read alone, its parts reduced, equal to the run read whole to the byte of their JSON,
event ids included: on DLRM's 8 ranks (the timeline's ops bucketed), a bench/gen_ranks.py run
(its ops listed one by one, most of its events at times another file's share) and HTA's
two-rank trace_filter run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from by_files import held
from conftest import X, kineto, write_trace
from test_ranks_by_file import DLRM, generated

from trace_analyzer.analyses.passes import in_process, together
from trace_analyzer.questions.gaps.analysis import gaps
from trace_analyzer.questions.gaps.per_rank import GapsOptions, gaps_passes
from trace_analyzer.questions.launches.busiest import busiest_launches
from trace_analyzer.questions.launches.per_rank import launches_passes
from trace_analyzer.questions.report.analysis import gap_histogram, histogram_edges
from trace_analyzer.questions.report.timeline import EXACT_OPS, timeline
from trace_analyzer.questions.report.timeline_parts import timeline_passes

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
RUNS = {  # the runs of ../shared/corpus that by_file reads a file at a time
    "dlrm": DLRM,
    "trace_filter": CORPUS / "hta/tests/data/trace_filter",
}


@pytest.fixture(scope="module")
def run8(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gen") / "run"
    generated(folder)
    return folder


def folder_of(name: str, run8: Path) -> Path:
    if name == "gen_ranks":
        return run8
    if not RUNS[name].is_dir():
        pytest.skip(f"../shared/corpus is absent: no {RUNS[name]}")
    return RUNS[name]


def said(result) -> str:
    return json.dumps(result.to_json(), sort_keys=False, default=str)


@pytest.mark.parametrize("name", ["dlrm", "trace_filter", "gen_ranks"])
def test_launches_a_rank_at_a_time_are_the_run_read_whole(name, run8):
    whole, files = held(folder_of(name, run8))
    result = in_process(launches_passes(whole.name), files)
    assert said(result) == said(busiest_launches(whole))
    assert result.lanes.height >= len(files)


@pytest.mark.parametrize("name", ["dlrm", "trace_filter", "gen_ranks"])
def test_the_timeline_a_rank_at_a_time_is_the_run_read_whole(name, run8):
    whole, files = held(folder_of(name, run8))
    g = gaps(whole)  # what the gaps' passes reduce to (test_gaps_by_file.py)
    histogram = gap_histogram(g, histogram_edges([g]))
    drawn = in_process(timeline_passes(whole.name), files)
    expected = timeline(whole, g, histogram=histogram)
    result = drawn(g, histogram)
    assert said(result) == said(expected)
    assert result.framework_ops.schema == expected.framework_ops.schema
    listed = expected.op_count <= EXACT_OPS  # gen_ranks: listed, with the run's event ids
    assert listed == (name == "gen_ranks") and expected.op_count > 0
    assert expected.framework_ops.height == (expected.op_count if listed else 0)


LONG = "aten::" + "very_long_op_name_" * 12  # over NAME_CHARS: cut in its middle


def two_ranks(folder: Path) -> Path:
    """Two ranks' files, rank 1's first: an op of a long name, ops of equal times in both,
    and rank 0's first kernel zero-length at its own first time (inside the run's window,
    which rank 1's kernel opens), launched by the earliest op: the timeline starts there."""
    for name, rank, first_ns in (("a", 1, 10), ("b", 0, 5)):
        host, stream = 100 + rank, {"pid": rank, "tid": 7, "device": rank, "stream": 7}
        kernels = [(200, 50)] if rank else [(300, 0), (310, 20)]
        events = [
            X("cpu_op", LONG, first_ns, 100, pid=host, tid=1),
            X("cpu_op", "aten::add", 150, 10, pid=host, tid=1),
            X("cpu_op", "aten::mul", 150, 10, pid=host, tid=2),
        ]
        for i, (ts, dur) in enumerate(kernels):
            corr, at = 10 * rank + i + 1, (first_ns + 2, 152)[i]  # in the long op, in add
            events += [
                X("cuda_runtime", "cudaLaunchKernel", at, 1, pid=host, tid=1, correlation=corr),
                X("kernel", f"k{i}", ts, dur, correlation=corr, **stream),
            ]
        write_trace(folder / f"{name}.json", kineto(events, distributedInfo={"rank": rank}))
    return folder


def test_ranks_out_of_the_files_order_ties_and_the_edges_of_the_window(tmp_path):
    whole, files = held(two_ranks(tmp_path / "run"))
    assert [f.events["rank"].unique().to_list() for f in files] == [[1], [0]]
    result = in_process(launches_passes(whole.name), files)
    assert said(result) == said(busiest_launches(whole))
    assert result.lanes["rank"].to_list() == [0, 1]
    g = gaps(whole)
    expected = timeline(whole, g)
    assert said(in_process(timeline_passes(whole.name), files)(g, None)) == said(expected)
    assert expected.start_ns == whole.events["start_ns"].min()  # rank 0's zero-length kernel's op
    assert any(n.endswith(LONG[-79:]) and "…" in n for n in expected.framework_ops["name"])


def test_a_run_without_hardware_draws_nothing_as_read_whole(tmp_path):
    for rank in (0, 1):
        op = X("cpu_op", "aten::add", 10 + rank, 5, pid=100 + rank, tid=1)
        write_trace(tmp_path / f"r{rank}.json", kineto([op], distributedInfo={"rank": rank}))
    whole, files = held(tmp_path)
    g = gaps(whole)
    result = in_process(timeline_passes(whole.name), files)(g, None)
    assert said(result) == said(timeline(whole, g)) and result.start_ns is None
    assert said(in_process(launches_passes(whole.name), files)) == said(busiest_launches(whole))


def test_the_timeline_of_the_gaps_reduced_in_step_with_them(run8):
    """The timeline's passes run in step with the gaps' (three rounds, one read of each file
    per round), then drawn from the gaps they reduce to: the run read whole's."""
    whole, files = held(run8)
    rounds = []

    def each(round_):
        rounds.append(len(round_.passes))
        return enumerate(round_(p) for p in files)

    passes = {
        "gaps": gaps_passes(GapsOptions(), whole.name),
        "timeline": timeline_passes(whole.name),
    }
    found = together(passes, each)
    g = found["gaps"]
    assert g.chain is None and rounds == [2, 2, 2]
    expected = timeline(whole, gaps(whole), histogram=None)
    assert said(found["timeline"](g, None)) == said(expected)
