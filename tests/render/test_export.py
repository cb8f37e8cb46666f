"""`traceana export`: the Chrome/Perfetto trace of one run, with links as flows and gaps as slices.

Expected values come from the input: the events table, the edges table (``link``) and the
gaps (``gaps``), computed here through the library from the profile itself, never from the
exported file. The file is read back with traceana's own Kineto reader and checked for the
structure Perfetto's legacy JSON importer expects.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import orjson
import polars as pl
import pytest
from conftest import X, kineto, one_line_error, run_cli, write_trace

import trace_analyzer as ta
from trace_analyzer.loading.link import link

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
NAIVE = FIXTURES / "rmsnorm_naive"
OVERLAP = re.compile(r" \(overlap \d+\)$")
GAPS_SUFFIX = " gaps"
# What the export adds beside the run's events: its gaps, and its summary on a track of its own.
ADDED = ("traceana_gap", "traceana_summary", "traceana_critical")
SUMMARY_THREAD = "traceana summary"
CRITICAL_THREAD = "traceana critical path"

_EXPORTS: dict[str, dict] = {}


def export(src: Path, out: Path) -> dict:
    """Run ``traceana export SRC -o OUT``; return what the tests need about input and output."""
    code, stdout, err = run_cli("export", src, "-o", out)
    assert code == 0, err
    assert stdout == ""
    raw = out.read_bytes()
    profile = ta.load(src)
    return {"src": src, "out": out, "raw": raw, "doc": orjson.loads(raw), "err": err,
            "profile": profile, "events": profile.events, "edges": link(profile.events),
            "gaps": ta.gaps(profile).gaps}


@pytest.fixture(params=["naive", "simple_add"])
def exported(request, tmp_path_factory) -> dict:
    """The naive RMSNorm fixture and a corpus CUDA trace, each exported once."""
    if request.param == "naive":
        src = NAIVE
    else:
        src = request.getfixturevalue("corpus") / "critical_path" / "simple_add"
    if request.param not in _EXPORTS:
        out = tmp_path_factory.mktemp("export") / "annotated.json"
        _EXPORTS[request.param] = export(src, out)
    return _EXPORTS[request.param]


# --- helpers reading the file -----------------------------------------------------------------


def ns(doc: dict, ts: float) -> int:
    return doc["baseTimeNanoseconds"] + round(ts * 1000)


def names(doc: dict) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    """Return the process names by pid and the thread names by (pid, tid)."""
    procs, threads = {}, {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    return procs, threads


def sort_index(doc: dict, what: str) -> dict:
    return {(e["pid"], e["tid"]) if what == "thread" else e["pid"]: e["args"]["sort_index"]
            for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == f"{what}_sort_index"}


def slices(doc: dict) -> list[dict]:
    """Return the event slices (not gaps) as dicts with pid, tid, lane (from the thread's
    name), name, start_ns, end_ns."""
    _, threads = names(doc)
    out = []
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e.get("cat") not in ADDED:
            start = ns(doc, e["ts"])
            out.append({"pid": e["pid"], "tid": e["tid"], "name": e["name"], "start_ns": start,
                        "end_ns": start + round(e["dur"] * 1000),
                        "lane": OVERLAP.sub("", threads[(e["pid"], e["tid"])]),
                        "args": e.get("args", {})})
    return out


def key(r: dict) -> tuple:
    return (r["lane"], r["name"], r["start_ns"], r["end_ns"])


# --- the file --------------------------------------------------------------------------------


def test_parses_with_json_and_orjson_and_has_the_header(exported):
    doc = json.loads(exported["raw"])
    assert doc == orjson.loads(exported["raw"])
    events = exported["events"]
    first = events["start_ns"].min()
    base = doc["baseTimeNanoseconds"]
    assert isinstance(base, int) and base % 1_000_000_000 == 0 and 0 <= first - base < 1_000_000_000
    assert doc["displayTimeUnit"] in ("ms", "ns")
    assert doc["traceName"] == str(exported["src"])
    meta = doc["traceana"]
    assert meta["schema_version"] == 1 and meta["source"] == str(exported["src"])
    assert (meta["events"], meta["links"], meta["gaps"]) == (
        events.height, exported["edges"].height, exported["gaps"].height)
    assert isinstance(doc["traceEvents"], list)


def test_stderr_reports_the_counts(exported):
    n, m, k = exported["events"].height, exported["edges"].height, exported["gaps"].height
    assert f"{n} events, {m} links, {k} gaps" in exported["err"]


def test_every_event_is_a_complete_event_with_its_category_and_args(exported):
    doc, events = exported["doc"], exported["events"]
    x = [e for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") not in ADDED]
    assert len(x) == events.height
    by_id = {r["event_id"]: r for r in events.with_columns(pl.col("lane_kind").cast(pl.String))
             .iter_rows(named=True)}
    assert sorted(e["args"]["event_id"] for e in x) == sorted(by_id)
    for e in x:
        r = by_id[e["args"]["event_id"]]
        assert (e["name"], e.get("cat"), e["args"]["lane"], e["args"]["lane_kind"]) == (
            r["name"], r["category"], r["lane"], r["lane_kind"])
        assert ns(doc, e["ts"]) == r["start_ns"]
        assert round(e["dur"] * 1000) == r["duration_ns"]
        for k, v in (json.loads(r["args_json"]) if r["args_json"] else {}).items():
            assert e["args"][k] == v
        for col in ("correlation", "exec_id"):
            if r[col] is not None:
                assert e["args"][col] == r[col]
        # µs with at most three decimals: ns exactly
        assert e["ts"] * 1000 == pytest.approx(round(e["ts"] * 1000), abs=1e-3)


def test_timestamps_are_non_negative_numbers(exported):
    for e in exported["doc"]["traceEvents"]:
        if e["ph"] == "M":
            continue
        assert isinstance(e["ts"], (int, float)) and not isinstance(e["ts"], bool)
        assert e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0


def test_metadata_names_every_pid_and_tid_used(exported):
    doc = exported["doc"]
    procs, threads = names(doc)
    used = {(e["pid"], e["tid"]) for e in doc["traceEvents"] if e["ph"] in ("X", "s", "f")}
    assert used
    assert {pid for pid, _ in used} <= set(procs)
    assert used <= set(threads)
    assert all(isinstance(p, int) and isinstance(t, int) for p, t in used)


def test_one_thread_per_lane_named_by_its_label(exported):
    doc, events = exported["doc"], exported["events"]
    procs, threads = names(doc)
    lanes = set(events["lane"].unique().to_list())
    event_threads = {v for v in threads.values()
                     if not v.endswith(GAPS_SUFFIX) and v not in (SUMMARY_THREAD, CRITICAL_THREAD)}
    assert {OVERLAP.sub("", v) for v in event_threads} == lanes
    assert lanes <= event_threads  # each lane has a thread bearing exactly its label
    # every slice sits on its own lane's thread (or one of its overlap threads)
    for s in slices(doc):
        assert s["lane"] == s["args"]["lane"]
    # each lane's threads are in one process, named by the host process or the device
    pid_of = defaultdict(set)
    for (pid, _), name in threads.items():
        if name == SUMMARY_THREAD:
            assert procs[pid] == "traceana"
            continue
        pid_of[OVERLAP.sub("", name.removesuffix(GAPS_SUFFIX))].add(pid)
    for lane, pids in pid_of.items():
        assert len(pids) == 1
        assert lane.startswith(procs[next(iter(pids))])


def test_slices_on_a_thread_nest(exported):
    by_track = defaultdict(list)
    for s in slices(exported["doc"]):
        by_track[(s["pid"], s["tid"])].append((s["start_ns"], -s["end_ns"]))
    for items in by_track.values():
        stack: list[int] = []
        for start, neg_end in sorted(items):
            end = -neg_end
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], "slices on one thread overlap without nesting"
            stack.append(end)


def test_sort_indexes_put_framework_then_runtime_then_hardware(exported):
    doc, events = exported["doc"], exported["events"]
    _, threads = names(doc)
    kinds = events.group_by("lane").agg(pl.col("lane_kind").cast(pl.String).unique())

    def rank(lane_kinds: list[str]) -> int:  # a lane with executions is a hardware lane
        if "hardware" in lane_kinds:
            return 2
        return 0 if any(k.startswith("framework") or k == "annotation" for k in lane_kinds) else 1

    lane_rank = {r["lane"]: rank(r["lane_kind"]) for r in kinds.iter_rows(named=True)}
    t_index, p_index = sort_index(doc, "thread"), sort_index(doc, "process")
    lanes = {pt: name for pt, name in threads.items()
             if name != SUMMARY_THREAD and not name.startswith(CRITICAL_THREAD)}
    assert set(t_index) == set(lanes)
    assert set(p_index) == {pid for pid, name in names(doc)[0].items() if name != "traceana"}
    placed = sorted(lanes, key=lambda pt: (p_index[pt[0]], t_index[pt]))
    ranks = [lane_rank[OVERLAP.sub("", threads[pt].removesuffix(GAPS_SUFFIX))] for pt in placed]
    assert ranks == sorted(ranks)
    assert ranks[0] == 0 and ranks[-1] == 2


# --- (1) read back by traceana's Kineto reader -------------------------------------------------


def test_reads_back_to_the_same_events(exported):
    back = ta.load(exported["out"], args=True)
    assert back.warnings == [] and back.dropped == {}
    assert [r.format for r in back.reads] == ["kineto-json"]
    ev = back.events
    gap_rows = ev.filter(pl.col("category") == "traceana_gap")
    original = exported["events"]
    again = ev.filter(~pl.col("category").is_in(ADDED))
    # the summary: one slice over the measured window
    assert ev.filter(pl.col("category") == "traceana_summary").height == 1

    def multiset(df: pl.DataFrame) -> Counter:
        return Counter(df.select("name", "start_ns", "end_ns").rows())

    assert multiset(again) == multiset(original)
    # per lane: the reader relabels lanes, so group by the lane the export recorded
    lane_back = again.select(pl.col("args_json").map_elements(
        lambda a: json.loads(a)["lane"], return_dtype=pl.String).alias("lane"),
        "name", "start_ns", "end_ns")
    per_lane = lambda df: {lane: Counter(g.drop("lane").rows())  # noqa: E731
                           for (lane,), g in df.group_by("lane")}
    assert per_lane(lane_back) == per_lane(original.select("lane", "name", "start_ns", "end_ns"))
    # and the lanes of the reader are still one per exported thread: none merged
    assert again["lane"].n_unique() >= original["lane"].n_unique()
    assert gap_rows.height == exported["gaps"].height


def test_reader_counts_link_flows_as_not_events(exported):
    back = ta.load(exported["out"])
    (read,) = back.reads
    n = 2 * exported["doc"]["traceana"]["flows"]["v1"]  # v2 flows are fields of slices
    assert any(f"{n} 'traceana_link' flow records" in note for note in read.notes), read.notes
    assert back.events["flow_ids"].drop_nulls().len() == 0  # only ac2g flows are bound


# --- (2) gaps ----------------------------------------------------------------------------------


def test_gap_slices_are_the_gaps(exported):
    doc, expected = exported["doc"], exported["gaps"]
    _, threads = names(doc)
    got = []
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e.get("cat") == "traceana_gap":
            thread = threads[(e["pid"], e["tid"])]
            assert thread.endswith(GAPS_SUFFIX)
            start = ns(doc, e["ts"])
            a = e["args"]
            got.append((thread.removesuffix(GAPS_SUFFIX), start, start + round(e["dur"] * 1000),
                        e["name"], a["next_op"], a["prev_op"], a["link_method"],
                        round(a["duration_us"] * 1000), round(a["transfer_us"] * 1000),
                        round(a["sync_us"] * 1000)))
    want = expected.select("lane", "start_ns", "end_ns", "cause", "next_op", "prev_op",
                           "link_method", "duration_ns", "transfer_ns", "sync_ns").rows()
    assert expected.height > 0
    assert Counter(got) == Counter(want)
    # each gap track sits in the process of its hardware lane
    pid_of_lane = {name: pid for (pid, _), name in threads.items()}
    for (pid, _), name in threads.items():
        if name.endswith(GAPS_SUFFIX):
            assert pid_of_lane[name.removesuffix(GAPS_SUFFIX)] == pid


# --- (3) flows ---------------------------------------------------------------------------------


def test_each_link_is_one_flow_written_where_perfetto_binds_it_to_its_two_slices(exported):
    """Each link is written once: as a v1 pair, ``s`` at the start of the earlier of its two
    slices and ``f`` (``bp: "e"``) at the start of the later, each the last slice of its track
    to start then (Perfetto binds a point to the slice on top of its track: docs/graph.md);
    or, where another slice of the track starts with one of the two, as v2 fields on the two
    slices (``flow_out`` and ``flow_in`` with one ``bind_id``). Perfetto's own engine checks
    the binding in test_export_perfetto.py; this reads the file."""
    doc, events, edges = exported["doc"], exported["events"], exported["edges"]
    last_at: dict[tuple, int] = {}  # (pid, tid, ts) -> the last slice written to start there
    order: dict[int, tuple] = {}  # event_id -> (start, place in the file)
    outs: dict[int, list[int]] = defaultdict(list)  # bind_id -> slices starting it
    ins: list[tuple[int, int]] = []  # (bind_id, slice ending it)
    for i, e in enumerate(doc["traceEvents"]):
        if e["ph"] == "X" and e.get("cat") not in ADDED:
            eid = e["args"]["event_id"]
            last_at[(e["pid"], e["tid"], e["ts"])] = eid
            order[eid] = (e["ts"], i)
            if e.get("flow_out"):
                outs[e["bind_id"]].append(eid)
            if e.get("flow_in"):
                ins.append((e["bind_id"], eid))
    pairs: dict[int, dict[str, dict]] = defaultdict(dict)
    for e in doc["traceEvents"]:
        if e["ph"] in ("s", "f"):
            assert e["ph"] not in pairs[e["id"]], f"two {e['ph']} for flow {e['id']}"
            pairs[e["id"]][e["ph"]] = e
    got = Counter()
    for pair in pairs.values():
        s, f = pair["s"], pair["f"]
        assert f["bp"] == "e" and s["cat"] == f["cat"] == "traceana_link"
        assert s["ts"] <= f["ts"]
        got[tuple(last_at[(p["pid"], p["tid"], p["ts"])] for p in (s, f))] += 1
    for bind_id, eid in ins:  # from the latest slice to start its id before it
        src = max((o for o in outs[bind_id] if order[o] < order[eid]), key=order.__getitem__)
        got[(src, eid)] += 1
    start = dict(events.select("event_id", "start_ns").iter_rows())
    want = Counter((a, b) if start[b] >= start[a] else (b, a)
                   for a, b in edges.select("src", "dst").iter_rows())
    assert edges.height > 0
    assert got == want
    assert doc["traceana"]["flows"]["v1"] == len(pairs)


# --- small inline inputs ---------------------------------------------------------------------


def nested_trace(tmp_path: Path) -> Path:
    """An op whose first child starts with it, each launching a kernel, and on the stream a
    memcpy and a sync that overlap without nesting."""
    pid, tid = 10, 11
    return write_trace(tmp_path / "in" / "trace.json", kineto([
        X("cpu_op", "aten::outer", 1000.0, 100.0, pid, tid, **{"External id": 1}),
        X("cpu_op", "aten::inner", 1000.0, 40.0, pid, tid, **{"External id": 2}),
        X("cuda_runtime", "cudaLaunchKernel", 1010.0, 5.0, pid, tid, correlation=7,
          **{"External id": 2}),
        X("cuda_runtime", "cudaLaunchKernel", 1060.0, 5.0, pid, tid, correlation=10,
          **{"External id": 1}),
        X("kernel", "gemm", 1050.0, 20.0, 0, 7, correlation=7, device=0, stream=7),
        X("gpu_memcpy", "Memcpy HtoD", 1100.0, 100.0, 0, 7, correlation=8, device=0, stream=7),
        X("cuda_sync", "Stream Sync", 1150.0, 100.0, 0, 7, correlation=9, device=0, stream=7),
        X("kernel", "gemm", 1300.0, 10.0, 0, 7, correlation=10, device=0, stream=7),
    ], baseTimeNanoseconds=1_700_000_000_000_000_000))


def test_overlapping_events_of_a_lane_go_on_an_overlap_track(tmp_path):
    src = nested_trace(tmp_path)
    ex = export(src, tmp_path / "out.json")
    _, threads = names(ex["doc"])
    stream = ex["events"].filter(pl.col("name") == "Stream Sync")["lane"][0]
    assert f"{stream} (overlap 1)" in threads.values()
    s = {r["name"]: r for r in slices(ex["doc"])}
    assert threads[(s["Stream Sync"]["pid"], s["Stream Sync"]["tid"])] == f"{stream} (overlap 1)"
    assert threads[(s["Memcpy HtoD"]["pid"], s["Memcpy HtoD"]["tid"])] == stream
    back = ta.load(ex["out"]).events.filter(~pl.col("category").is_in(ADDED))
    assert sorted(back.select("name", "start_ns", "end_ns").rows()) == sorted(
        ex["events"].select("name", "start_ns", "end_ns").rows())


def test_a_flow_on_an_op_whose_child_starts_with_it_binds_to_the_op(tmp_path, trace_processor):
    src = nested_trace(tmp_path)
    ex = export(src, tmp_path / "out.json")
    ev = ex["events"]
    outer = ev.filter(pl.col("name") == "aten::outer").row(0, named=True)
    inner = ev.filter(pl.col("name") == "aten::inner").row(0, named=True)
    # the input: inner is a child of outer starting at the same instant, and links to it
    assert outer["start_ns"] == inner["start_ns"]
    hops = Counter(ex["edges"].select("src", "dst").iter_rows())
    assert outer["event_id"] in {p for p, _ in hops}  # the case this test is about
    trace_processor.load(ex["out"])
    bound = Counter((r["a"], r["b"]) for r in trace_processor.query("""
        select extract_arg(o.arg_set_id, 'args.event_id') as a,
               extract_arg(i.arg_set_id, 'args.event_id') as b
        from flow f join slice o on o.id = f.slice_out join slice i on i.id = f.slice_in"""))
    assert bound == hops


def test_gzip_output(tmp_path):
    out = tmp_path / "annotated.json.gz"
    code, _, err = run_cli("export", NAIVE, "-o", out)
    assert code == 0, err
    doc = json.loads(gzip.decompress(out.read_bytes()))
    assert doc["traceana"]["events"] == ta.load(NAIVE).events.height
    assert ta.load(out).events.filter(~pl.col("category").is_in(ADDED)).height == \
        doc["traceana"]["events"]


def test_written_as_made_is_the_document_byte_for_byte(tmp_path, monkeypatch):
    """The command writes the document a batch of records at a time (``perfetto.document``):
    the file is ``dumps(build(...))``'s bytes, in batches of any size, and gzip-compressed the
    same bytes (no file name in the header, as ``gzip.compress`` writes)."""
    from trace_analyzer.questions.critical.analysis import critical
    from trace_analyzer.questions.export import perfetto

    for src in (NAIVE, FIXTURES / "allreduce_2nc"):
        profile = ta.load(src, args=True)
        parts = (profile, ta.gaps(profile))
        path = critical(profile)
        whole = perfetto.dumps(perfetto.build(*parts, source="run", critical=path))
        for batch in (1, 3, 1000):  # each batch's records alone, some batches empty
            monkeypatch.setattr(perfetto, "BATCH", batch)
            assert perfetto.dumps(perfetto.build(*parts, source="run", critical=path)) == whole
            for name in ("out.json", "out.json.gz"):
                doc = perfetto.document(*parts, source="run", critical=path)
                perfetto.write(doc, tmp_path / name)
            assert (tmp_path / "out.json").read_bytes() == whole
            packed = (tmp_path / "out.json.gz").read_bytes()
            assert gzip.decompress(packed) == whole
            assert packed[3] == 0  # no flags: no file name
        # events whose id is not their row (a table not numbered by load) go where they did
        rows = profile.events.sample(fraction=1.0, shuffle=True, seed=3)
        shuffled = dataclasses.replace(profile, events=rows)
        assert perfetto.dumps(perfetto.build(shuffled, parts[1], source="run", critical=path)) \
            == whole


def test_a_write_that_fails_midway_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    from trace_analyzer.questions.export import perfetto

    def broken(self):
        yield from []
        raise OSError(28, "No space left on device")

    out = tmp_path / "annotated.json"
    out.write_text("before")
    monkeypatch.setattr(perfetto, "BATCH", 5)
    monkeypatch.setattr(perfetto.Document, "_traceana", broken)  # after the events' batches
    profile = ta.load(NAIVE, args=True)
    doc = perfetto.document(profile, ta.gaps(profile))
    with pytest.raises(OSError, match="No space"):
        perfetto.write(doc, out)
    assert out.read_text() == "before"
    assert [p.name for p in tmp_path.iterdir()] == ["annotated.json"]  # no temporary left


# --- (4) errors --------------------------------------------------------------------------------


def test_unwritable_output_is_exit_2_with_one_line(tmp_path):
    out = tmp_path / "no" / "such" / "folder" / "annotated.json"
    line = one_line_error(*run_cli("export", NAIVE, "-o", out))
    assert str(out) in line and "cannot write" in line
    assert not out.exists()


def test_several_runs_is_exit_2_with_one_line(tmp_path):
    out = tmp_path / "annotated.json"
    line = one_line_error(*run_cli("export", FIXTURES, "-o", out))
    assert "runs" in line
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_output_is_required():
    code, _, err = run_cli("export", NAIVE)
    assert code == 2 and "-o" in err
