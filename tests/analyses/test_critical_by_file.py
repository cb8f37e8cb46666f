"""The critical path a rank at a time (questions/critical/per_rank.py, per_file.py): a
multi-rank run measured a file at a time in three passes is `critical` of the run read
whole, to the byte of its JSON (event ids and node numbers too), on DLRM's 8 ranks, HTA's
two-rank trace_filter, a bench/gen_ranks.py run and small runs whose ranks are copies of one
another (every time a tie between files: the windows' ends, the events' and the nodes'
numbers), by the compiled replay and by the Python one; a run whose files share a process
is left to be read whole (None).
"""

from __future__ import annotations

import importlib
import json
import pickle
from pathlib import Path

import polars as pl
import pytest
from by_files import held
from conftest import X, kineto, write_trace
from test_ranks_by_file import DLRM, ROOT, generated

from trace_analyzer.analyses.passes import Round, in_process, together
from trace_analyzer.questions.critical.analysis import CriticalResult, critical
from trace_analyzer.questions.critical.graph import build
from trace_analyzer.questions.critical.per_file import since_counts
from trace_analyzer.questions.critical.per_rank import _latency, critical_passes

TRACE_FILTER = ROOT.parent / "shared" / "corpus" / "hta/tests/data/trace_filter"


def as_json(result: CriticalResult) -> str:
    return json.dumps(result.to_json(), sort_keys=False, default=str)


def both(path: Path) -> tuple[str, str | None, CriticalResult]:
    """The run at ``path``: `critical` read whole (its JSON), a file at a time (None where
    the passes leave it whole), and the whole run's result."""
    whole, files = held(path)
    expected = critical(whole)
    got = in_process(critical_passes(whole.name), files)
    return as_json(expected), None if got is None else as_json(got), expected


def rank_events(
    pid: int, device: int, rank: int, *, steps: bool = True, late: int = 0, mixed: bool = False
) -> list[dict]:
    """One rank (``rank``: 0-2): an op launching a kernel before its steps, then three steps
    (the first the longest: a warm-up), each an op launching three kernels, an asynchronous
    copy and a stream synchronize, which starts 10 us earlier a rank (its return ties with
    the other ranks' at its end, its call does not); ``late``: the copy ends past its step
    (the window ends on the device). ``mixed``: the rank's copy is late in step 3 - rank,
    rank 1 replays a CUDA graph (the run's graph API is then none), and step 3 ends with a
    collective no call launched (the first step's start, kept by every what-if, counts)."""
    events = [
        X("cpu_op", "aten::mm", 50, 240, pid=pid, tid=pid),
        X("cuda_runtime", "cudaLaunchKernel", 100, 10, pid=pid, tid=pid, correlation=99),
        X("kernel", "fill", 150, 40, pid=device, tid=7, correlation=99, device=device, stream=7),
    ]  # fmt: skip
    if mixed and rank == 1:
        events.append(X("cuda_runtime", "cudaGraphLaunch", 200, 5, pid=pid, tid=pid))
    c, t = 0, 300
    for step, length in ((1, 1400), (2, 800), (3, 800)):
        if steps:
            events.append(X("user_annotation", f"ProfilerStep#{step}", t, length, pid=pid, tid=pid))
        events.append(X("cpu_op", "aten::mm", t + 10, 100, pid=pid, tid=pid))
        for k in range(3):
            c += 1
            events += [
                X("cuda_runtime", "cudaLaunchKernel", t + 20 + 20 * k, 10, pid=pid, tid=pid,
                  correlation=c),
                X("kernel", f"gemm{k}", t + 100 + 150 * k, 140, pid=device, tid=7, correlation=c,
                  device=device, stream=7),
            ]  # fmt: skip
        c += 1
        copy = 560 + (900 if mixed and step == 3 - rank else late)
        sync = 10 * rank
        events += [
            X("cpu_op", "aten::copy_", t + 200, 400, pid=pid, tid=pid),
            X("cuda_runtime", "cudaMemcpyAsync", t + 210, 10, pid=pid, tid=pid, correlation=c),
            X("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", t + copy, 60, pid=device,
              tid=8, correlation=c, device=device, stream=8),
            X("cuda_runtime", "cudaStreamSynchronize", t + 230 - sync, 420 + sync, pid=pid,
              tid=pid),
        ]  # fmt: skip
        if mixed and step == 3:  # no launch: it keeps its time, whatever a what-if moves
            events.append(X("kernel", "ncclKernel_AllReduce", t + 700, 1000, pid=device, tid=9,
                            device=device, stream=9))  # fmt: skip
        t += length
    return events


def copies(folder: Path, *, shared: bool = False, mixed: bool = False, **given: object) -> Path:
    """Three ranks, each the same trace (``rank_events``) on its own process and GPU (with
    ``shared``: all on pid 1, GPU 0)."""
    for r in range(3):
        pid, device = (1, 0) if shared else (100 + r, r)
        events = rank_events(pid, device, r, mixed=mixed, **given)  # type: ignore[arg-type]
        doc = kineto(events, distributedInfo={"rank": r})
        write_trace(folder / f"rank{r}.json", doc)
    return folder


@pytest.fixture(scope="module")
def run8(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gen") / "run"
    generated(folder, skew_us=3.5)
    return folder


@pytest.fixture(scope="module")
def alike(tmp_path_factory) -> dict[str, Path]:
    """The runs of ranks alike: with steps, a window ended by the device, no steps."""
    base = tmp_path_factory.mktemp("alike")
    return {
        "steps": copies(base / "steps"),
        "late": copies(base / "late", late=900),
        "nosteps": copies(base / "nosteps", steps=False),
        "mixed": copies(base / "mixed", mixed=True),
    }


@pytest.mark.parametrize("path", [DLRM, TRACE_FILTER], ids=["dlrm", "trace_filter"])
def test_a_corpus_run_a_rank_at_a_time_is_the_run_read_whole(path):
    if not path.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    expected, got, result = both(path)
    assert got == expected
    assert result.path.height and result.fixes.height


def test_dlrm_s_ranks_are_given_the_run_s_launch_latency():
    """A rank's own latency is not the run's (rank 5's is 8 us, the run's 7 us): each file's
    graph is linked with the run's; the launch times a file gives make its own median."""
    if not DLRM.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {DLRM}")
    whole, files = held(DLRM)
    graphs = [build(f) for f in files]
    assert [_latency([since_counts(g)]) for g in graphs] == [g.latency_ns for g in graphs]
    assert _latency([since_counts(g) for g in graphs]) == build(whole).latency_ns
    assert len({g.latency_ns for g in graphs}) > 1


def test_a_generated_run_a_rank_at_a_time_is_the_run_read_whole(run8):
    expected, got, _ = both(run8)
    assert got == expected


def test_the_passes_and_what_they_give_travel_pickled(run8):
    """Each pass, and what it gives for every file, pickled there and back (as to a worker
    process and from it): the same result."""
    whole, files = held(run8)

    def each(passes: Round) -> list:
        sent = pickle.loads(pickle.dumps(passes))
        return enumerate(pickle.loads(pickle.dumps([sent(f) for f in files])))

    got = together({"critical": critical_passes(whole.name)}, each)["critical"]
    assert as_json(got) == as_json(critical(whole))


@pytest.mark.parametrize("name", ["steps", "late", "nosteps", "mixed"])
def test_ranks_alike_tie_everywhere_and_are_the_run_read_whole(alike, name):
    """Every event of one rank has the times of the others': the windows' ends, the events'
    and the nodes' numbers are decided among equals by the files' order, as read whole."""
    expected, got, result = both(alike[name])
    assert got == expected
    last = result.path.filter(result.path["order"] == result.path["order"].max())
    pids = set(result.path["pid"].to_list())
    if name == "steps":  # the end marks tie: the later node, the last rank's
        assert pids == {102}
        scenarios = set(result.fixes["scenario"].to_list())
        assert {"warmup", "graphs", "sync:cudaStreamSynchronize"} <= scenarios
        assert any(s.startswith("copy:") for s in scenarios)
    elif name == "late":  # the device ends tie: the first, the first rank's
        assert pids == {100} and last.height
    elif name == "mixed":  # step s ends on rank 3 - s's device; no graph what-if
        assert result.path.group_by("step").agg(pl.col("pid").first()).sort("step")[
            "pid"
        ].to_list() == [102, 101, 100]
        assert "graphs" not in result.fixes["scenario"].to_list()


def test_files_sharing_a_process_are_left_to_be_read_whole(tmp_path):
    """All three ranks on pid 1 and GPU 0: the run read whole chains their threads and
    lanes together, which no file alone can replay."""
    whole, files = held(copies(tmp_path, shared=True))
    assert in_process(critical_passes(whole.name), files) is None


@pytest.mark.parametrize("name", ["steps", "mixed", "dlrm"])
def test_the_python_replay_combines_as_the_compiled_one(alike, name, monkeypatch):
    """Without the compiled parts (_replay.c) every graph, replay and walk is Python's: the
    files' parts still make the run read whole's result (DLRM: with the run's latency)."""
    path = DLRM if name == "dlrm" else alike[name]
    if not path.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    for module in ("link", "graph", "replay", "scenarios", "own", "waits"):
        mod = importlib.import_module(f"trace_analyzer.questions.critical.{module}")
        monkeypatch.setattr(mod, "_replay", None)
    expected, got, _ = both(path)
    assert got == expected
