"""`traceana report --jobs N` and `--scheduler`: a multi-rank run's report made a rank's file at
a time, every section's passes run in step over the workers and reduced (batch/report.py,
batch/passes.py; docs/distributed.md, "report a rank at a time"). The page is the run read
whole's, to the byte: its gaps, ops, timeline and histogram, critical path and what-ifs,
ranks, kernels and launches, event ids included. Each section's own reduce is tested on more
runs in its own file (test_*_by_file.py); here, the whole page and the command.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from conftest import run_cli
from test_gaps_by_file import folder_of
from test_ranks_by_file import generated


@pytest.fixture(scope="module")
def run8(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gen") / "run"
    generated(folder)
    return folder


def page(path: Path, out: Path, *options: object) -> bytes:
    """The report's file of ``path`` (read whole without --jobs/--scheduler: once per worker)."""
    if "--jobs" not in options and "--scheduler" not in options:
        return _whole(path, out.suffix, tuple(str(o) for o in options))
    code, _, err = run_cli("report", path, "--no-cache", "-o", out, *options)
    assert code == 0, err
    return out.read_bytes()


@functools.cache
def _whole(path: Path, suffix: str, options: tuple[str, ...]) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / f"whole{suffix}"
        code, _, err = run_cli("report", path, "--no-cache", "-o", out, *options)
        assert code == 0, err
        return out.read_bytes()


@pytest.mark.parametrize("name", ["dlrm", "gen_ranks"])
def test_the_page_a_rank_at_a_time_is_the_run_read_whole_s(name, run8, tmp_path, monkeypatch):
    """Every section of the page (its embedded JSON and what it draws), in-process; on the
    generated run in two worker processes too, and the Markdown report. The run is never
    read whole there."""
    from trace_analyzer.cli.loading import Loading

    path = folder_of(name, run8)
    whole = page(path, tmp_path / "a.html", "--no-images")
    md = page(path, tmp_path / "a.md", "--no-images") if name == "gen_ranks" else None
    assert b"traceana-critical" in whole and b"traceana-ranks" in whole

    def read_whole(*args, **kwargs):
        raise AssertionError("the run was read whole")

    monkeypatch.setattr(Loading, "one", read_whole)
    assert page(path, tmp_path / "b.html", "--no-images", "--jobs", "1") == whole
    if md is not None:
        assert page(path, tmp_path / "c.html", "--no-images", "--jobs", "2") == whole
        assert page(path, tmp_path / "b.md", "--no-images", "--jobs", "1") == md


def test_the_plots_too(run8, tmp_path):
    """With the plots drawn (matplotlib), the page and its PNGs are the same."""
    pytest.importorskip("matplotlib", reason="the plots need matplotlib: traceana[report]")
    assert page(run8, tmp_path / "b.html", "--jobs", "1") == page(run8, tmp_path / "a.html")


def test_a_base_is_refused_in_one_line_and_a_single_file_is_read_whole(run8, tmp_path):
    """--base (the diff reads both runs whole) is refused with --jobs, exit 2; a run of one
    file, which cannot be read a file at a time, gives the page read whole."""
    code, _, err = run_cli(
        "report", run8, "--no-cache", "--jobs", "1", "--base", run8, "-o", tmp_path / "x.html"
    )
    assert code == 2 and "do not take --base" in err and len(err.strip().splitlines()) == 1
    one = sorted(run8.glob("*.json*"))[0]
    whole = page(one, tmp_path / "a.html", "--no-images")
    assert page(one, tmp_path / "b.html", "--no-images", "--jobs", "1") == whole


def test_on_dask(run8, tmp_path):
    distributed = pytest.importorskip(
        "distributed", reason="Dask distributed is not installed: pip install 'traceana[dask]'"
    )
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        address = cluster.scheduler_address
        on_dask = page(run8, tmp_path / "b.html", "--no-images", "--scheduler", address)
    assert on_dask == page(run8, tmp_path / "a.html", "--no-images")


def many_lanes(folder: Path) -> Path:
    """Two ranks of 40 streams each (80 lanes: more than the timeline draws), 1600 kernels one after
    another across the streams, so that each device has hundreds of gaps."""
    from conftest import X, kineto, write_trace

    for rank in (0, 1):
        pid, events = 10 + rank, []
        for i in range(1600):
            start = 1_000 + i * 700 + (i % 7) * 13 * (rank + 1)
            events += [
                X("cuda_runtime", "cudaLaunchKernel", start - 300, 20, pid=pid, tid=1,
                  correlation=i),
                X("kernel", f"k{i % 5}", start, 400 + (i % 3) * 50, pid=0, tid=100 + i % 40,
                  correlation=i, device=rank, stream=100 + i % 40),
            ]  # fmt: skip
        write_trace(folder / f"rank{rank}.json", kineto(events, distributedInfo={"rank": rank}))
    return folder


def test_a_run_of_more_lanes_than_drawn_keeps_what_the_page_draws(tmp_path):
    """80 lanes, hundreds of gaps: the gaps' reducer keeps each file's 200 longest gaps only
    (the timeline reads its 64 lanes where the files are), the summary is the run's, and the
    page is the run read whole's."""
    from by_files import held

    from trace_analyzer.analyses.passes import in_process
    from trace_analyzer.analyses.results import Listed
    from trace_analyzer.questions.gaps.analysis import GapsResult, gaps
    from trace_analyzer.questions.gaps.per_rank import GapsOptions, gaps_passes

    path = many_lanes(tmp_path / "run")
    whole, files = held(path)
    g = in_process(gaps_passes(GapsOptions(top=200), whole.name), files)
    every = gaps(whole)
    kept = GapsResult.__dict__["gaps"].stored(g)
    assert every.lanes.height == 80 and isinstance(kept, Listed)
    assert kept.total == every.gaps.height > 200 * len(files) == kept.rows.height
    held_rows = g.device_gaps.height  # each file's 200 longest
    assert g.rows_in("device_gaps") == every.device_gaps.height > 200 * len(files) == held_rows
    assert g.summary == every.summary
    assert page(path, tmp_path / "b.html", "--no-images", "--jobs", "1") == page(
        path, tmp_path / "a.html", "--no-images"
    )
