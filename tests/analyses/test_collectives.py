"""Collectives matched across ranks (questions/ranks/collectives.py, matching.py; docs/
distributed.md, "Collectives matched across ranks"): on real traces against figures this test
computes from the raw JSON, and on synthetic runs with a planted late rank, a slow link and two
process groups running one kernel name interleaved. Nothing here is taken from traceana's own
output."""

from __future__ import annotations

import gzip
import re
import statistics
from pathlib import Path

import orjson
import pytest
from conftest import X, kineto, run_cli, write_trace

import trace_analyzer as ta

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
DLRM = SHARED / "real/param/dlrm_kineto"
RCCL = SHARED / "real/tracelens/mi300_resnet"
NCCL = SHARED / "hta/tests/data/nccl_parser_config"
COMM = re.compile(r"nccl|rccl", re.I)  # docs/distributed.md: the communication kernels
BYTES = {"Float": 4, "BFloat16": 2, "Long": 8, "Half": 2, "Int": 4, "Byte": 1}
FACTOR = {"allreduce": lambda n: 2 * (n - 1) / n, "broadcast": lambda n: 1.0}  # PERFORMANCE.md


def need(path: Path) -> Path:
    if not path.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    return path


def raw(path: Path) -> dict:
    data = path.read_bytes()
    return orjson.loads(gzip.decompress(data) if path.suffix == ".gz" else data)


def ns(us: float) -> int:
    return round(us * 1000)


def kernels(doc: dict) -> list[dict]:
    """The raw collective kernels of a trace, in order of start."""
    ks = [e for e in doc["traceEvents"] if e.get("cat") == "kernel" and COMM.search(e["name"])]
    return sorted(ks, key=lambda e: e["ts"])


def ranks_of(folder: Path, **kw):
    return ta.ranks(ta.load(folder, args="later"), **kw)


@pytest.mark.parametrize("folder", [NCCL, RCCL], ids=["nccl-hta", "rccl-mi300"])
def test_each_collective_of_one_rank_has_its_group_seq_kind_and_size(folder):
    (path,) = need(folder).glob("*.json*")
    doc = raw(path)
    ops = {e["args"]["External id"]: e["args"] for e in doc["traceEvents"]
           if e.get("name") == "record_param_comms"}  # fmt: skip
    (pg,) = doc["distributedInfo"]["pg_config"]  # one group: what a kernel without args gets
    got = ranks_of(folder).collectives.sort("start_ns").to_dicts()
    want = kernels(doc)
    assert len(got) == len(want) > 0
    for seq, (row, k) in enumerate(zip(got, want, strict=True)):
        own = "Collective name" in k["args"]
        args = k["args"] if own else ops.get(k["args"].get("External id"))
        assert row["group"] == (args["Process Group Name"] if args else pg["pg_name"])
        assert row["seq"] == seq and row["match_by"] == "group" and row["ranks"] == 1
        assert row["latency_ns"] == ns(k["dur"]) and row["skew_ns"] == 0 and row["wait_ns"] == 0
        if args is None:  # recorded before its launch: no args, and a name that says nothing
            assert (row["kind"], row["size_bytes"]) == (None, None)
            continue
        size = args["In msg nelems"] * BYTES[args["dtype"]]  # allreduce, broadcast: the input
        n = args["Group size"]
        assert row["kind"] == args["Collective name"] and row["size_bytes"] == size
        assert row["group_ranks"] == args["Process Group Ranks"] and row["group_size"] == n
        assert row["algbw_gbps"] == round(size / ns(k["dur"]), 3)
        busbw = size / ns(k["dur"]) * FACTOR[args["Collective name"]](n)
        assert row["busbw_gbps"] == pytest.approx(busbw, abs=0.0005)


def test_the_records_say_where_their_fields_came_from():
    from trace_analyzer.questions.ranks.collectives import records

    doc = raw(next(need(RCCL).glob("*.json*")))
    with_args = [k for k in kernels(doc) if "Collective name" in k["args"]]
    recs = records(ta.load(RCCL, args="later"))
    assert recs["fields_from"].value_counts().sort("fields_from").rows() == [
        ("kernel", len(with_args)), ("pg_config", len(kernels(doc)) - len(with_args)),
    ]  # fmt: skip
    dtypes = sorted(k["args"]["dtype"] for k in with_args)
    assert sorted(recs["dtype"].drop_nulls().to_list()) == dtypes


@pytest.fixture(scope="module")
def dlrm_raw() -> dict[int, list[dict]]:
    docs = [raw(p) for p in sorted(need(DLRM).glob("*.json.gz"))]
    return {d["distributedInfo"]["rank"]: kernels(d) for d in docs}


def _by_name(ks: list[dict]) -> dict[tuple[str, int], dict]:
    """A rank's kernels keyed by (name, the n-th of that name): the fallback's key."""
    seen: dict[str, int] = {}
    out = {}
    for k in ks:
        out[(k["name"], seen.get(k["name"], 0))] = k
        seen[k["name"]] = seen.get(k["name"], 0) + 1
    return out


def _median(values: list[int]) -> int:
    return round(statistics.median(values))


def test_dlrm_matched_by_name_with_skew_latency_and_last_rank_from_the_raw(dlrm_raw):
    result = ranks_of(DLRM)
    assert any("matched by name" in n and "rank 0, 1, 2, 3, 4, 5, 6, 7" in n for n in result.notes)
    keyed = {r: _by_name(ks) for r, ks in dlrm_raw.items()}
    end = {r: {key: ns(k["ts"]) + ns(k["dur"]) for key, k in ks.items()} for r, ks in keyed.items()}
    offset = {r: _median([e - end[0][key] for key, e in ends.items()]) for r, ends in end.items()}
    got = {r["key"]: r for r in result.collectives.to_dicts()}
    assert len(got) == len(keyed[0]) == 8
    for (name, n), _ in keyed[0].items():
        row = got[f"{name} #{n}"]
        start = {r: ns(keyed[r][(name, n)]["ts"]) - offset[r] for r in keyed}
        durs = {r: ns(keyed[r][(name, n)]["dur"]) for r in keyed}
        assert row["match_by"] == "name" and row["ranks"] == 8
        assert row["skew_ns"] == max(start.values()) - min(start.values())
        assert row["last_rank"] == max(start, key=lambda r: (start[r], r))
        assert row["latency_ns"] == min(durs.values())
        waits = {w["rank"]: w["wait_ns"] for w in row["waits"]}
        assert waits == {r: d - min(durs.values()) for r, d in durs.items()}
    # the first SendRecv: rank 7 came 7.6 ms after rank 1, whose kernel ran that long
    first = got[f"{dlrm_raw[0][0]['name']} #0"]
    assert (first["last_rank"], first["most_waiting_rank"]) == (7, 1)


def test_dlrm_clock_offsets_are_todays(dlrm_raw):
    """Today's rule (the k-th collective of each rank against the first rank's, where both
    have one name) and the matched collectives give the same offsets on DLRM: every rank
    runs the same names in the same order."""
    result = ranks_of(DLRM)
    first = dlrm_raw[0]
    for r in result.ranks.to_dicts():
        ks = dlrm_raw[r["rank"]]
        today = [ns(k["ts"]) + ns(k["dur"]) - ns(f["ts"]) - ns(f["dur"])
                 for k, f in zip(ks, first, strict=True) if k["name"] == f["name"]]  # fmt: skip
        assert r["offset_from"] == "collectives"
        assert abs(r["offset_ns"] - statistics.median(today)) <= 0.5


NAME = "ncclDevKernel_AllReduce_Sum_f32"  # one kernel name for every group
WORLD = {"Process Group Name": "0", "Process Group Ranks": "[0, 1, 2, 3]", "Group size": 4}


def _group(name: str, ranks: list[int]) -> dict:
    return {"Process Group Name": name, "Process Group Ranks": str(ranks),
            "Group size": len(ranks)}  # fmt: skip


def _rank_trace(folder: Path, rank: int, work: list[tuple[float, float, dict]], on_host: bool,
                name: str = NAME) -> None:  # fmt: skip
    """One rank's trace: each collective of ``work`` (start µs, end µs, its fields) a kernel on
    the rank's GPU, its fields on the kernel or (``on_host``) on the record_param_comms that
    launched it (External id and correlation linking them, as PyTorch writes them)."""
    pid, gpu = 10 + rank, {"pid": 0, "tid": 7, "device": rank, "stream": 7}
    events = []
    for i, (s, e, fields) in enumerate(work):
        ext, corr = 100 * rank + i + 1, 1000 * rank + i + 1
        kernel_args = {"External id": ext, "correlation": corr, **({} if on_host else fields)}
        events += [
            X("cpu_op", "record_param_comms", s - 50, 20, pid=pid, tid=pid,
              **{"External id": ext, **(fields if on_host else {})}),
            X("cuda_runtime", "cudaLaunchKernel", s - 45, 5, pid=pid, tid=pid,
              **{"External id": ext, "correlation": corr}),
            X("kernel", name, s, e - s, **gpu, **kernel_args),
        ]  # fmt: skip
    write_trace(folder / f"rank{rank}.json",
                kineto(events, distributedInfo={"rank": rank, "world_size": 4}))  # fmt: skip


def allreduce(group: dict, nelems: int) -> dict:
    return {"Collective name": "allreduce", "In msg nelems": nelems, "Out msg nelems": nelems,
            "dtype": "BFloat16", **group}  # fmt: skip


@pytest.fixture
def interleaved(tmp_path: Path) -> Path:
    """Ranks 0, 1 run group 1's all-reduce, the world's, group 1's again; ranks 2, 3 group 2's
    twice then the world's: one kernel name throughout, one clock. Every collective ends at
    one instant on its ranks; rank 3 reaches the world's all-reduce 300 µs after the others."""
    a, b = _group("1", [0, 1]), _group("2", [2, 3])
    for rank in (0, 1):
        _rank_trace(
            tmp_path,
            rank,
            [
                (100, 200, allreduce(a, 1024)),
                (300, 700, allreduce(WORLD, 1 << 20)),
                (800, 900, allreduce(a, 2048)),
            ],
            on_host=rank == 1,
        )
    for rank in (2, 3):
        world_start = 600 if rank == 3 else 300
        _rank_trace(tmp_path, rank, [(100, 250, allreduce(b, 4096)),
                                     (260, 290, allreduce(b, 512)),
                                     (world_start, 700, allreduce(WORLD, 1 << 20))],
                    on_host=rank == 3)  # fmt: skip
    return tmp_path


def test_two_groups_of_one_name_matched_by_group_where_the_old_rule_pairs_them_wrong(
    interleaved,
):
    docs = {r: raw(interleaved / f"rank{r}.json") for r in range(4)}
    ks = {r: kernels(d) for r, d in docs.items()}

    # the old rule: the k-th collective of each rank against rank 0's k-th, names equal
    def old_rule(r: int) -> float:
        pairs = zip(ks[r], ks[0], strict=True)
        return statistics.median(ns(k["ts"] + k["dur"]) - ns(f["ts"] + f["dur"])
                                 for k, f in pairs if k["name"] == f["name"])  # fmt: skip

    old = {r: old_rule(r) for r in ks}
    # ... pairs rank 2's group-2 all-reduces with rank 0's group-1 and world ones: a 200 µs
    # offset (the median of +50, -410 and -200 µs) out of one clock
    assert old == {0: 0, 1: 0, 2: -200_000, 3: -200_000}
    result = ranks_of(interleaved)
    assert result.ranks["offset_ns"].to_list() == [0, 0, 0, 0]  # one clock, now found
    assert not any("matched by name" in n for n in result.notes)
    got = {(r["group"], r["seq"]): r for r in result.collectives.to_dicts()}
    assert sorted(got) == [("0", 0), ("1", 0), ("1", 1), ("2", 0), ("2", 1)]
    assert {k: sorted(w["rank"] for w in r["waits"]) for k, r in got.items()} == {
        ("0", 0): [0, 1, 2, 3], ("1", 0): [0, 1], ("1", 1): [0, 1],
        ("2", 0): [2, 3], ("2", 1): [2, 3],
    }  # fmt: skip
    assert got[("2", 1)]["size_bytes"] == 512 * 2 and got[("1", 1)]["size_bytes"] == 2048 * 2


def test_the_late_rank_is_named_with_its_skew_and_the_others_waits(interleaved):
    result = ranks_of(interleaved)
    (world,) = result.collectives.filter(result.collectives["group"] == "0").to_dicts()
    assert (world["last_rank"], world["skew_ns"], world["latency_ns"]) == (3, 300_000, 100_000)
    assert {w["rank"]: w["wait_ns"] for w in world["waits"]} == {
        0: 300_000,
        1: 300_000,
        2: 300_000,
        3: 0,
    }
    size = (1 << 20) * 2
    assert world["size_bytes"] == size and world["algbw_gbps"] == round(size / 100_000, 3)
    assert world["busbw_gbps"] == round(size / 100_000 * 2 * 3 / 4, 3)  # allreduce: 2(n-1)/n
    groups = {g["group"]: g for g in result.collective_groups.to_dicts()}
    assert (groups["0"]["late_rank"], groups["0"]["late_count"]) == (3, 1)
    assert groups["0"]["wait_ns"] == 900_000 and groups["0"]["worst_wait"] == world["key"]
    assert groups["1"]["late_rank"] is None  # its ranks arrive together


def test_a_slow_link_is_named_with_its_bandwidth(tmp_path):
    size = 1 << 20  # Float: 4 MiB
    for rank, peer in ((0, 1), (1, 0), (2, 3), (3, 2)):
        group = _group("3", [0, 1]) if rank < 2 else _group("4", [2, 3])
        kind = "send" if rank in (0, 2) else "recv"
        end = 200 if rank < 2 else 1100  # ranks 2 and 3's link takes ten times as long
        fields = {"Collective name": kind, "In msg nelems": size, "Out msg nelems": size,
                  "dtype": "Float", "Rank": peer, **group}  # fmt: skip
        _rank_trace(tmp_path, rank, [(100, end, fields), (end + 100, 2 * end, fields)],
                    on_host=rank == 1, name="ncclDevKernel_SendRecv")  # fmt: skip
    result = ranks_of(tmp_path)
    links = result.collective_links.to_dicts()
    slow, fast = 2 * size * 4 / (2 * 1_000_000), 2 * size * 4 / (2 * 100_000)
    assert [(x["src"], x["dst"], x["transfers"]) for x in links] == [(2, 3, 2), (0, 1, 2)]
    assert [x["bandwidth_gbps"] for x in links] == [round(slow, 3), round(fast, 3)]
    code, out, err = run_cli("ranks", tmp_path, "--no-cache")
    assert code == 0, err
    assert f"slowest link: rank 2 -> rank 3, {round(slow, 3)} GB/s over 2 transfers" in out


def test_a_profile_without_args_gives_names_alone_with_a_note(interleaved):
    result = ta.ranks(ta.load(interleaved))
    assert any("without its args" in n for n in result.notes)
    assert result.collectives["kind"].to_list() == ["allreduce"] * result.collectives.height
    assert result.collectives["match_by"].unique().to_list() == ["name"]


def test_the_json_has_the_collectives_and_the_csv_stays_per_step(interleaved):
    code, out, err = run_cli("ranks", interleaved, "--no-cache", "--format", "json")
    assert code == 0, err
    (run,) = orjson.loads(out)["runs"]
    assert len(run["collectives"]) == 5 and len(run["collective_groups"]) == 3
    code, out, err = run_cli("ranks", interleaved, "--no-cache", "--format", "csv")
    assert code == 0 and out.splitlines()[0].startswith("rank,pid,device,step")


def test_the_report_draws_the_links_and_keeps_names_inert(tmp_path):
    hostile = "<b>pg</b>"
    size = 1 << 10
    for rank, peer in ((0, 1), (1, 0)):
        fields = {"Collective name": "send" if rank == 0 else "recv", "In msg nelems": size,
                  "dtype": "Byte", "Rank": peer, **_group(hostile, [0, 1])}  # fmt: skip
        _rank_trace(tmp_path / "run", rank, [(100, 300, fields)], on_host=False)
    page = tmp_path / "r.html"
    code, _, err = run_cli("report", tmp_path / "run", "--no-cache", "-o", page)
    assert code == 0, err
    text = page.read_text()
    section = text[text.index('<section id="ranks">') :]
    section = section[: section.index("</section>")]
    assert 'id="plot-ranks-collectives"' in section and 'id="ranks-links"' in section
    assert hostile not in section and "&lt;b&gt;pg&lt;/b&gt;" in section
