"""`traceana gaps --jobs N` (a prototype): a multi-rank run's gaps measured a rank's file at a
time with the run's window, launch latency and median launch call, and reduced
(batch/gaps.py, questions/gaps/per_rank.py; docs/distributed.md, "gaps a rank at a time").

Every figure equals the run read whole's, on DLRM's 8 ranks and a bench/gen_ranks.py run; the
event ids of the gap rows do not yet (the run read whole numbers the events of all its files
in one sort, whose order among events of equal times no file alone can know), so the JSON is
compared without them, and the byte-for-byte equality is an expected failure until they do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from test_ranks_by_file import DLRM, generated

# the gap rows' columns that are event ids (per_rank.ID_COLUMNS)
IDS = ("prev_event", "next_event", "next_op_event", "launch_event")


def gaps_json(path: Path, *options: object) -> str:
    code, out, err = run_cli("gaps", path, "--format", "json", "--no-cache", *options)
    assert code == 0, err
    return out


def without_ids(out: str) -> dict:
    doc = json.loads(out)
    for run in doc["runs"]:
        for table in ("gaps", "device_gaps"):
            run[table] = [{k: v for k, v in row.items() if k not in IDS} for row in run[table]]
    return doc


@pytest.fixture(scope="module")
def run8(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gen") / "run"
    generated(folder)
    return folder


def runs() -> list[str]:
    return ["dlrm", "gen_ranks"]


def folder_of(name: str, run8: Path) -> Path:
    if name == "gen_ranks":
        return run8
    if not DLRM.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {DLRM}")
    return DLRM


@pytest.mark.parametrize("name", runs())
def test_a_rank_at_a_time_gives_every_figure_of_the_run_read_whole(name, run8):
    path = folder_of(name, run8)
    whole = gaps_json(path)
    doc = without_ids(whole)
    assert doc["runs"][0]["summary"]["devices"] == 8
    for jobs in ("1", "2"):
        assert without_ids(gaps_json(path, "--jobs", jobs)) == doc


@pytest.mark.xfail(reason="event ids: each file's numbering offset, not the whole run's sort")
@pytest.mark.parametrize("name", runs())
def test_a_rank_at_a_time_is_the_run_read_whole_to_the_byte(name, run8):
    path = folder_of(name, run8)
    assert gaps_json(path, "--jobs", "1") == gaps_json(path)


@pytest.mark.parametrize(
    "options", [("--lane", "*stream:7"), ("--rank", "[0-3]", "--min-gap", "2us"), ("--latency", "1us")]
)
def test_the_options_go_through_the_map(run8, options):
    """--lane (the latency and vendor of the lanes it keeps), --rank (a file with none of them
    gives nothing), --min-gap (the lists trimmed, the sums not) and --latency (given, not
    measured) as the run read whole takes them."""
    assert without_ids(gaps_json(run8, "--jobs", "2", *options)) == without_ids(
        gaps_json(run8, *options)
    )


def test_the_options_the_prototype_does_not_take_yet_are_refused(run8):
    code, _, err = run_cli("gaps", run8, "--no-cache", "--jobs", "1", "--step", "1")
    assert code == 2 and "not take --step" in err
