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
from test_ranks_by_file import DLRM, generated

from trace_analyzer.analyses.passes import in_process
from trace_analyzer.questions.gaps.analysis import gaps
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
    assert said(drawn(g, histogram)) == said(expected)
    listed = expected.op_count <= EXACT_OPS  # gen_ranks: listed, with the run's event ids
    assert listed == (name == "gen_ranks") and expected.op_count > 0
    assert expected.framework_ops.height == (expected.op_count if listed else 0)
