"""`traceana ranks --jobs N` and `--scheduler`: a run read a rank's file at a time, each file
made a summary where it is read, and the summaries reduced (batch/ranks.py,
questions/ranks/per_rank.py). The result is the run read whole, to the byte of its JSON: on
the DLRM 8-rank run, the fixtures, runs whose files share process numbers, and runs of
bench/gen_ranks.py, whose planted straggler, late start and clock offsets it recovers.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from argparse import Namespace
from pathlib import Path

import pytest
from conftest import X, kineto, run_cli, write_trace

from trace_analyzer.batch.ranks import RankMap, by_rank
from trace_analyzer.errors import TraceanaError
from trace_analyzer.inputs.discover import discover

ROOT = Path(__file__).resolve().parents[2]
DLRM = ROOT.parent / "shared" / "corpus" / "real/param/dlrm_kineto"
FIXTURE = ROOT / "fixtures" / "allreduce_2nc"


def gen_ranks():
    """bench/gen_ranks.py as a module (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_ranks", ROOT / "bench" / "gen_ranks.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_ranks", mod)
    spec.loader.exec_module(mod)
    return mod


def generated(folder: Path, **given) -> dict:
    """A run of bench/gen_ranks.py in ``folder`` (small: seconds to read); its truth."""
    gen = gen_ranks()
    args = gen.parser().parse_args([str(folder), "--ranks", "8", "--kernels", "14"])
    return gen.generate(Namespace(**{**vars(args), **given}))


def ranks_json(path: Path, *options: object) -> tuple[str, dict]:
    code, out, err = run_cli("ranks", path, "--format", "json", "--no-cache", *options)
    assert code == 0, err
    return out, json.loads(out)["runs"][0]


@pytest.fixture(scope="module")
def run8(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("gen") / "run"
    return folder, generated(folder, skew_us=3.5)


def test_dlrm_a_rank_at_a_time_is_the_run_read_whole():
    if not DLRM.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {DLRM}")
    whole, result = ranks_json(DLRM)
    assert ranks_json(DLRM, "--jobs", "1")[0] == whole  # in-process, one file after another
    assert ranks_json(DLRM, "--jobs", "2")[0] == whole  # two worker processes
    assert [r["rank"] for r in result["ranks"]] == list(range(8))
    assert ranks_json(DLRM, "--jobs", "2", "--step", "10")[0] == ranks_json(DLRM, "--step", "10")[0]


def test_a_run_that_cannot_be_read_by_file_is_read_whole():
    """An Explorer export beside the traces: its events are deduplicated against them."""
    assert by_rank(discover(FIXTURE)[0], RankMap()) is None
    assert ranks_json(FIXTURE, "--jobs", "2")[0] == ranks_json(FIXTURE)[0]


def test_the_generated_straggler_late_start_and_clocks_are_recovered(run8):
    folder, truth = run8
    whole, result = ranks_json(folder)
    assert ranks_json(folder, "--jobs", "2")[0] == whole
    for row in result["stragglers"]:
        assert row["rank"] == truth["straggler"] and row["why"] == "started late"
        assert row["late_start_ns"] == truth["late_start_ns"]  # to the ns
    offsets = {str(r["rank"]): r["offset_ns"] for r in result["ranks"]}
    assert offsets == truth["clock_offsets_ns"]


def test_extra_compute_is_recovered(tmp_path):
    truth = generated(tmp_path / "run", late_us=0, extra_us=300)
    _, result = ranks_json(tmp_path / "run", "--jobs", "1")
    for row in result["stragglers"]:
        assert row["rank"] == truth["straggler"] and row["why"] == "computes more"
        assert row["extra_compute_ns"] == truth["extra_compute_ns"]


def test_rank_and_step_select_through_the_map(run8):
    folder, _ = run8
    for options in (("--rank", "[2-5]"), ("--step", "2"), ("--rank", "3", "--step", "1")):
        assert ranks_json(folder, "--jobs", "1", *options)[0] == ranks_json(folder, *options)[0]
    code, _, err = run_cli("ranks", folder, "--no-cache", "--jobs", "1", "--rank", "9")
    assert code == 2 and f"--rank 9: no rank of {folder} matches; it has 0, 1" in err


@pytest.mark.parametrize("ranked", [True, False])
def test_files_sharing_process_numbers_are_told_apart_as_when_read_whole(tmp_path, ranked):
    """Two ranks in containers, both pid 1 on GPU 0: their lanes and processes are told
    apart by rank (or by file, without ranks) in the reduce as loading tells them apart."""
    for rank, kernels in ((0, [(100, 200), (300, 400)]), (1, [(150, 250), (500, 600)])):
        events = [X("user_annotation", "ProfilerStep#1", 0, 900, pid=1, tid=1),
                  X("cuda_runtime", "cudaLaunchKernel", 10, 5, pid=1, tid=1, correlation=5)]
        events += [X("kernel", f"ncclKernel_AllReduce_{i}", s, e - s, pid=0, tid=7,
                     correlation=5, device=0, stream=7) for i, (s, e) in enumerate(kernels)]
        top = {"distributedInfo": {"rank": rank}} if ranked else {}
        write_trace(tmp_path / f"trace{rank}.json", kineto(events, **top))
    whole, result = ranks_json(tmp_path)
    assert len({r["pid"] for r in result["steps"]}) == 2
    assert ranks_json(tmp_path, "--jobs", "1")[0] == whole


def test_each_file_is_cached_as_when_named_alone(run8, tmp_path):
    folder, _ = run8
    cache = tmp_path / "cache"
    for _ in range(2):  # written, then read back
        code, out, err = run_cli("ranks", folder, "--format", "json", "--cache-dir", cache,
                                 "--jobs", "1")
        assert code == 0, err
        assert out == ranks_json(folder)[0]
    assert len(list(cache.glob("*.events.parquet"))) == 8  # an entry per rank's file


def test_a_worker_that_dies_is_one_error_naming_its_file(run8):
    from ranks_faults import dies_on_rank_2

    folder, _ = run8
    with pytest.raises(TraceanaError) as e:
        by_rank(discover(folder)[0], RankMap(), jobs=2, analyse=dies_on_rank_2)
    said = str(e.value)
    assert said == f"{folder / 'rank-2.json'}: the worker process died while analysing it " \
        "(killed by SIGKILL)"


def test_a_file_that_cannot_be_read_is_one_line_and_exit_2(run8, tmp_path):
    folder, _ = run8
    broken = tmp_path / "run"
    broken.mkdir()
    for f in folder.glob("rank-*.json"):
        (broken / f.name).write_bytes(f.read_bytes())
    (broken / "rank-9.json.gz").write_bytes(b"\x1f\x8b not gzip at all")
    code, out, err = run_cli("ranks", broken, "--no-cache", "--jobs", "2")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "rank-9.json.gz" in err, err


def test_dask_gives_the_same_result_as_local_workers(run8):
    distributed = pytest.importorskip(
        "distributed", reason="Dask distributed is not installed: pip install 'traceana[dask]'")
    folder, _ = run8
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        on_dask = ranks_json(folder, "--scheduler", cluster.scheduler_address)[0]
    assert on_dask == ranks_json(folder, "--jobs", "2")[0] == ranks_json(folder)[0]


def test_the_generated_slow_link_is_named_with_its_bandwidth(run8):
    """The planted slow pair leads the links, slowest first, and its bandwidth is the bytes
    of its send/recv kernels over their latency (per transfer the shorter of the pair's two
    durations), both read here from the raw traces."""
    folder, truth = run8
    result = ranks_json(folder, "--jobs", "2")[1]
    a, b = truth["slow_pair"]
    kernels = {
        r: [e for e in json.loads((folder / f"rank-{r}.json").read_bytes())["traceEvents"]
            if "SendRecv" in e.get("name", "")]
        for r in (a, b)
    }  # fmt: skip
    assert len(kernels[a]) == len(kernels[b]) == len(truth["steps"])
    size = sum(e["args"]["In msg nelems"] * 2 for e in kernels[a])  # BFloat16: 2 bytes
    latency = sum(
        round(min(x["dur"], y["dur"]) * 1000) for x, y in zip(kernels[a], kernels[b], strict=True)
    )
    slowest = result["collective_links"][0]
    assert {slowest["src"], slowest["dst"]} == {a, b}
    assert slowest["transfers"] == len(truth["steps"])
    assert slowest["size_bytes"] == size and slowest["latency_ns"] == latency
    assert slowest["bandwidth_gbps"] == round(size / latency, 3)
    others = result["collective_links"][1:]
    assert others and all(o["bandwidth_gbps"] > slowest["bandwidth_gbps"] for o in others)


def test_gzip_ranks_read_only_their_collectives_args(run8, tmp_path):
    """A gzip trace's args cannot be read from the file later: `ranks` keeps the text of its
    collectives' kernels and record_param_comms ops alone (args="collectives"), and says the
    same as of the plain files, read whole and a rank at a time."""
    import gzip

    import trace_analyzer as ta
    from trace_analyzer.model.schema import COLLECTIVES

    folder, _ = run8
    gz = tmp_path / "run"
    gz.mkdir()
    for f in folder.glob("rank-*.json"):
        (gz / (f.name + ".gz")).write_bytes(gzip.compress(f.read_bytes()))
    plain = json.loads(ranks_json(folder)[0])["runs"][0]
    for options in ((), ("--jobs", "2")):
        got = json.loads(ranks_json(gz, *options)[0])["runs"][0]
        assert {k: v for k, v in got.items() if k != "root"} == {
            k: v for k, v in plain.items() if k != "root"
        }
    events = ta.load(gz / "rank-0.json.gz", args=COLLECTIVES, cache=False).events
    held = events.filter(events["args_json"].is_not_null())["name"].cast(str).unique().to_list()
    raw = json.loads(gzip.decompress((gz / "rank-0.json.gz").read_bytes()))["traceEvents"]
    named = {e["name"] for e in raw if e.get("ph") == "X" and e.get("args")
             and ("nccl" in e["name"].lower() or e["name"] == "record_param_comms")}  # fmt: skip
    assert set(held) == named and len(named) >= 2
    assert events["args_at"].null_count() == events.height
