"""`--rank N|GLOB` on every analysing command (loading/select.py, docs/distributed.md): on the
8-rank DLRM run, what a rank's selection holds is checked against that rank's own raw file
(its pid, its ops' calls, its kernels), counted here in a few plain lines.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_cli

import trace_analyzer as ta
from trace_analyzer.errors import UsageError
from trace_analyzer.loading.select import rank_matches, ranks_of, select_ranks

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
DLRM = SHARED / "real/param/dlrm_kineto"
NAIVE = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"  # rank 0: worker_gid
TWO_CORES = Path(__file__).resolve().parents[2] / "fixtures" / "allreduce_2nc"
ANALYSING = ("gaps", "chain", "info", "ranks", "kernels", "launches")  # ops: by its calls, below


def need(path: Path) -> Path:
    if not path.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    return path


def raw_rank(rank: int) -> dict:
    """The raw trace of ``rank`` (its distributedInfo says so, not its name)."""
    for f in sorted(need(DLRM).glob("*.json.gz")):
        with gzip.open(f, "rt") as fh:
            doc = json.load(fh)
        if doc.get("distributedInfo", {}).get("rank") == rank:
            return doc
    raise AssertionError(f"no raw file of rank {rank}")


@pytest.fixture(scope="module")
def dlrm() -> ta.Profile:
    return ta.load(need(DLRM), cache=False)


def test_a_number_and_a_glob_name_ranks() -> None:
    assert rank_matches("3", 3) and rank_matches("03", 3) and not rank_matches("3", 13)
    assert rank_matches("[0-3]", 2) and not rank_matches("[0-3]", 4)
    assert rank_matches("1*", 12) and rank_matches("?", 7) and not rank_matches("?", 10)


def test_one_rank_holds_its_own_file_only(dlrm: ta.Profile) -> None:
    doc = raw_rank(3)
    own_pids = {e["pid"] for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"}
    one = select_ranks(dlrm, "3")
    assert set(one.events["rank"].unique().to_list()) == {3}
    assert set(one.events.filter(one.events["source"] == "framework")["pid"].unique()) == own_pids
    # numbered from 0 again, links between kept events only
    assert one.events["event_id"].to_list() == list(range(one.events.height))
    assert one.edges["src"].max() < one.events.height and one.edges["dst"].max() < one.events.height
    kernels = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    assert (one.events["category"].cast(str) == "kernel").sum() == len(kernels)


def test_a_glob_keeps_the_ranks_it_names(dlrm: ta.Profile) -> None:
    assert ranks_of(dlrm) == list(range(8))
    assert ranks_of(select_ranks(dlrm, "[2-4]")) == [2, 3, 4]
    with pytest.raises(UsageError, match="has 0, 1, 2, 3, 4, 5, 6, 7"):
        select_ranks(dlrm, "9")


def test_ops_of_one_rank_count_its_own_calls() -> None:
    doc = raw_rank(5)
    calls = Counter(e["name"] for e in doc["traceEvents"]
                    if e.get("ph") == "X" and e.get("cat") == "cpu_op")  # fmt: skip
    code, out, err = run_cli("ops", need(DLRM), "--no-cache", "--rank", "5", "--format", "json",
                             "--top", "100000")  # fmt: skip
    assert code == 0, err
    rows = json.loads(out)["runs"][0]["rows"]
    got = {r["name"]: r["calls"] for r in rows}
    for name, n in calls.most_common(10):
        assert got[name] == n, name


def test_selecting_a_rank_is_analysing_its_file_alone(dlrm: ta.Profile, tmp_path: Path) -> None:
    """Rank 6 picked out of the run links and gaps as rank 6's trace read on its own."""
    (alone := tmp_path / "rank6").mkdir()
    src = next(f for f in need(DLRM).glob("*.json.gz") if json.loads(
        gzip.open(f, "rt").read()).get("distributedInfo", {}).get("rank") == 6)
    shutil.copy(src, alone / src.name)
    one, own = select_ranks(dlrm, "6"), ta.load(alone, cache=False)
    assert one.events.height == own.events.height
    assert one.edges.height == own.edges.height
    a, b = ta.gaps(one).summary, ta.gaps(own).summary
    assert (a["busy_ns"], a["idle_ns"], a["gap_count"]) == (b["busy_ns"], b["idle_ns"], b["gap_count"])


@pytest.mark.parametrize("command", ANALYSING)
def test_every_analysing_command_takes_rank(command: str) -> None:
    code, out, err = run_cli(command, need(DLRM), "--no-cache", "--rank", "[0-1]", "--format", "json")
    assert code == 0, err
    assert "59811" in out and "59814" not in out  # rank 0's pid, not rank 3's


@pytest.mark.parametrize("command", ["export", "graph", "report"])
def test_the_commands_that_write_a_file_take_rank(command: str, tmp_path: Path) -> None:
    out = tmp_path / {"export": "t.json", "graph": "g.graphml", "report": "r.html"}[command]
    code, _, err = run_cli(command, need(DLRM), "--no-cache", "--rank", "1", "-o", out)
    assert code == 0, err
    text = out.read_text()
    assert "59812" in text and "59811" not in text  # rank 1's pid only


def test_a_run_without_ranks_is_one_line_and_exit_2(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"  # a Kineto trace without distributedInfo or a rank in its name
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 5,
         "args": {"stream": 7, "device": 0}},
    ]}))  # fmt: skip
    code, out, err = run_cli("gaps", trace, "--no-cache", "--rank", "0")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--rank 0" in err and "has no rank numbers" in err


def test_a_rank_the_run_lacks_names_the_ranks_it_has() -> None:
    code, _, err = run_cli("ops", need(DLRM), "--no-cache", "--rank", "12")
    assert code == 2 and "--rank 12: no rank of" in err and "0, 1, 2, 3, 4, 5, 6, 7" in err


def test_the_cache_keeps_a_rank_s_gaps_apart(tmp_path: Path) -> None:
    (run := tmp_path / "dlrm").mkdir()
    for f in need(DLRM).glob("*.json.gz"):
        shutil.copy(f, run / f.name)
    _, whole, _ = run_cli("gaps", run, "--format", "json")
    _, some, _ = run_cli("gaps", run, "--format", "json", "--rank", "1")
    _, again, _ = run_cli("gaps", run, "--format", "json")
    assert json.loads(whole)["runs"][0]["summary"]["devices"] == 8
    assert json.loads(some)["runs"][0]["summary"]["devices"] == 1
    assert again == whole


def test_a_neuron_rank_is_its_worker() -> None:
    """On the two-core Neuron fixture, --rank 1 keeps worker 1's process (pid 4243) alone."""
    truth = json.loads((TWO_CORES / "truth.json").read_text())
    code, out, err = run_cli("info", TWO_CORES, "--no-cache", "--rank", "1", "--format", "json")
    assert code == 0, err
    want = [(r["pid"], r["rank"]) for r in truth["ranks"] if r["worker_gid"] == 1]
    got = [(p["pid"], p["rank"]) for p in json.loads(out)["runs"][0]["processes"]]
    assert got == want == [(4243, 1)]
