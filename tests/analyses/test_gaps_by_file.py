"""`traceana gaps --jobs N` (a prototype): a multi-rank run's gaps measured a rank's file at a
time with the run's window, launch latency and median launch call, and reduced
(batch/gaps.py, questions/gaps/per_rank.py; docs/distributed.md, "gaps a rank at a time").

Every figure equals the run read whole's, on DLRM's 8 ranks and a bench/gen_ranks.py run; the
event ids of the gap rows do not yet (the run read whole numbers the events of all its files
in one sort, whose order among events of equal times no file alone can know), so the JSON is
compared without them, and the byte-for-byte equality is an expected failure until they do.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import polars as pl
import pytest
from conftest import X, kineto, run_cli, write_trace
from test_ranks_by_file import DLRM, generated


def gaps_json(path: Path, *options: object) -> str:
    if "--jobs" not in options and "--scheduler" not in options:
        return _whole(path, tuple(str(o) for o in options))
    code, out, err = run_cli("gaps", path, "--format", "json", "--no-cache", *options)
    assert code == 0, err
    return out


@functools.cache
def _whole(path: Path, options: tuple[str, ...]) -> str:
    """The run read whole's JSON, once per worker (the generated run is made once per module
    and never changed)."""
    code, out, err = run_cli("gaps", path, "--format", "json", "--no-cache", *options)
    assert code == 0, err
    return out


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
def test_a_rank_at_a_time_is_the_run_read_whole_to_the_byte(name, run8):
    """Every figure, row and event id, in-process and in two worker processes."""
    path = folder_of(name, run8)
    whole = gaps_json(path)
    assert json.loads(whole)["runs"][0]["summary"]["devices"] == 8
    assert gaps_json(path, "--jobs", "1") == gaps_json(path, "--jobs", "2") == whole


@pytest.mark.parametrize(
    "options",
    [
        ("--lane", "*stream:7"),
        ("--rank", "[0-3]", "--min-gap", "2us"),
        ("--latency", "1us"),
        ("--step", "2"),
        ("--step", "3", "--rank", "[4-7]", "--min-gap", "1us"),
        ("--window", "1ms:3ms"),
        ("--window", "0:500us", "--lane", "*stream:7"),
    ],
)
def test_the_options_go_through_the_map(run8, options):
    """--lane (the latency and vendor of the lanes it keeps), --rank (a file with none of them
    gives nothing), --min-gap (the lists trimmed, the sums not), --latency (given, not
    measured), --step (the step's window over every rank, to the end of the work it
    launched) and --window (after the run's first event, whichever rank's) as the run read
    whole takes them."""
    assert gaps_json(run8, "--jobs", "1", *options) == gaps_json(run8, *options)


def test_dlrm_s_step_a_rank_at_a_time():
    if not DLRM.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {DLRM}")
    assert gaps_json(DLRM, "--jobs", "2", "--step", "10") == gaps_json(DLRM, "--step", "10")


def test_a_step_no_rank_has_and_next_with_a_step_are_one_line_and_exit_2(run8):
    """A step no file holds is the run read whole's error, word for word; --next with --step
    (a step's critical path, not measured a file at a time) is refused with --jobs."""
    said = [
        run_cli("gaps", run8, "--no-cache", *jobs, "--step", "9") for jobs in ((), ("--jobs", "2"))
    ]
    assert said[0][0] == said[1][0] == 2 and said[0][2] == said[1][2]
    assert "no ProfilerStep#9" in said[0][2] and "its steps: 1–3" in said[0][2]
    code, _, err = run_cli("gaps", run8, "--no-cache", "--jobs", "1", "--next", "--step", "2")
    assert code == 2 and "not take --next with --step" in err


def test_next_a_rank_at_a_time_is_the_run_read_whole_s(run8, monkeypatch):
    """--next: the verdict of the run's critical path, its passes in step with the gaps' (the
    critical path of the run read whole is never made; its equality on DLRM and more runs:
    test_critical_by_file.py)."""
    import trace_analyzer.questions.gaps.gate as gate

    path = run8
    whole = gaps_json(path, "--next")
    assert json.loads(whole)["runs"][0]["next_fix"]

    def read_whole(*args, **kwargs):
        raise AssertionError("the critical path was made of the run read whole")

    monkeypatch.setattr(gate, "with_next_fix", read_whole)
    assert gaps_json(path, "--jobs", "1", "--next") == whole


def test_files_sharing_process_numbers_are_read_whole(tmp_path):
    """Two ranks in containers, both pid 1 on GPU 0: the run read whole names their lanes
    apart (rank:N/), so --jobs reads such a run whole too, and says the same."""
    for rank, kernels in ((0, [(100, 200), (300, 400)]), (1, [(150, 250), (500, 600)])):
        events = [X("cuda_runtime", "cudaLaunchKernel", 10, 5, pid=1, tid=1, correlation=5)]
        events += [X("kernel", f"k{i}", s, e - s, pid=0, tid=7, correlation=5, device=0, stream=7)
                   for i, (s, e) in enumerate(kernels)]  # fmt: skip
        write_trace(tmp_path / f"trace{rank}.json", kineto(events, distributedInfo={"rank": rank}))
    whole = gaps_json(tmp_path)
    assert {r["lane"].split("/")[0] for r in json.loads(whole)["runs"][0]["gaps"]} == {
        "rank:0",
        "rank:1",
    }
    assert gaps_json(tmp_path, "--jobs", "1") == whole


def test_each_event_id_names_the_event_around_its_gap(run8):
    """The ids of --jobs are rows of the run's events table as the library loads it: the
    execution before a gap ends where the gap starts, the one after starts where it ends,
    on the gap's lane; the next op is a framework op, the launch a call before it."""
    from trace_analyzer import load

    events = load(run8, cache=False).events
    rows = json.loads(gaps_json(run8, "--jobs", "1"))["runs"][0]["gaps"]
    assert rows
    for gap in rows:
        before, after = (
            events.row(gap["prev_event"], named=True),
            events.row(gap["next_event"], named=True),
        )
        assert (before["end_ns"], after["start_ns"]) == (gap["start_ns"], gap["end_ns"])
        assert before["lane"] == after["lane"] == gap["lane"]
        if gap["launch_event"] is not None:
            assert events.row(gap["launch_event"], named=True)["start_ns"] <= gap["end_ns"]


def test_dask_gives_the_run_read_whole(run8):
    distributed = pytest.importorskip(
        "distributed", reason="Dask distributed is not installed: pip install 'traceana[dask]'"
    )
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        on_dask = gaps_json(run8, "--scheduler", cluster.scheduler_address)
    assert on_dask == gaps_json(run8)


def test_each_file_is_read_back_from_the_cache(run8, tmp_path, monkeypatch):
    """The passes read each file through the cache (an entry per file), and the run's result
    is kept beside the run's entry: a second command reads it back and reads no file (the
    map made to fail shows it); with --rank, which keeps none, the files' entries are read
    back. Every time the run read whole's output."""
    import trace_analyzer.batch.gaps as by_file_gaps

    cache = tmp_path / "cache"
    whole, some = gaps_json(run8), gaps_json(run8, "--rank", "[0-3]")

    def jobs(*options: str) -> str:
        code, out, err = run_cli("gaps", run8, "--format", "json", "--cache-dir", cache, "--jobs", "1", *options)  # fmt: skip
        assert code == 0, err
        return out

    assert jobs() == whole and jobs("--rank", "[0-3]") == some
    assert len(list(cache.rglob("*.parquet"))) >= 8

    def mapped_again(*args, **kwargs):
        raise AssertionError("the run was mapped again")

    monkeypatch.setattr(by_file_gaps, "gaps_by_rank", mapped_again)
    assert jobs() == whole
    code, _, _ = run_cli("gaps", run8, "--cache-dir", cache, "--jobs", "1", "--min-gap", "1us")
    assert code != 0  # other options: a result of their own, mapped
    monkeypatch.undo()
    assert jobs("--rank", "[0-3]") == some


CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
WIDE = [  # frames, copies, the DataLoader, collectives, compiled code, a trace on ROCm
    "real/kineto/tb_plugin_resnet50",
    "real/tracelens/h100_bert",
    "real/tracelens/mi300_resnet",
    "real/tracelens/b200_eager",
    "hta/tests/data/trace_filter/sampled_rank-0.json.gz",
]


@pytest.mark.parametrize("name", WIDE)
def test_tallies_of_a_run_s_pieces_add_up_to_the_run_s(name):
    """A part carries its device gaps tallied (questions/gaps/tally.py), and the reducer adds
    the tallies up: the ops, steps, summary sums and every hint made from the tallies of a
    real trace's gaps cut into three interleaved pieces are those made from the tally of
    them all, and those `gaps` itself reports; on traces whose gaps have every kind of
    evidence the hints cite (frames and their callers, copies, the DataLoader, collectives)."""
    from trace_analyzer import load
    from trace_analyzer.questions.gaps.analysis import gaps
    from trace_analyzer.questions.gaps.causes import STEP, by_op, by_step
    from trace_analyzer.questions.gaps.hints import run_hints
    from trace_analyzer.questions.gaps.tally import merged, steps_of, tally

    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    profile = load(path, cache=False)
    result = gaps(profile)
    rows, events = result.device_gaps, profile.events
    assert rows.height > 3
    steps = steps_of(events, STEP)
    whole = tally(rows, steps)
    place = pl.int_range(pl.len()) % 3
    pieces = merged([tally(rows.filter(place == i), steps) for i in range(3)])
    assert pieces.gaps == whole.gaps == rows.height
    for t in (whole, pieces):
        assert by_op(t).equals(result.ops)
        assert by_step(t).equals(result.steps)
    made = [(by_op(t), by_step(t), run_hints(t, events, False, "cuda")) for t in (whole, pieces)]
    assert made[0][0].equals(made[1][0]) and made[0][1].equals(made[1][1])
    assert made[0][2] == made[1][2]
    for cause, ns in result.summary["idle_by_cause_ns"].items():  # the rows' own sums
        assert ns == int(rows.filter(pl.col("cause") == cause)["idle_ns"].sum())


@pytest.mark.parametrize("command", ["gaps", "ranks"])
def test_a_run_of_another_kind_of_profile_is_refused_as_when_read_whole(tmp_path, command):
    """A folder of runs, one of them a rocprofiler-sdk file: read whole, that run is listed
    with no events and the command goes on; --jobs says the same. Alone, it is exit 2 and
    one line naming the file, with --jobs too."""
    rocprof = {"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}}]}
    for rank in (0, 1):
        events = [
            X("cuda_runtime", "cudaLaunchKernel", 10, 5, pid=1, tid=1, correlation=5),
            X("kernel", "k", 100 + rank, 50, pid=0, tid=7, correlation=5, device=0, stream=7),
        ]
        write_trace(tmp_path / "ranks" / f"trace{rank}.json", kineto(events, distributedInfo={"rank": rank}))  # fmt: skip
    refused = write_trace(tmp_path / "other" / "results.json", rocprof)
    said = []
    for options in ((), ("--jobs", "1")):
        code, out, err = run_cli(command, tmp_path, "--format", "json", "--no-cache", *options)
        assert code == 0, err
        said.append(out)
        code, _, err = run_cli(command, refused.parent, "--no-cache", *options)
        assert code == 2 and err.strip().startswith(f"traceana: error: {refused}: rocprofiler-sdk")
        assert len(err.strip().splitlines()) == 1
    assert said[0] == said[1]
