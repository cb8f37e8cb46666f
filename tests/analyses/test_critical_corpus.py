"""The critical path and the what-ifs on real traces we did not write (issue 36).

Each step's window is computed here from the raw JSON in a few plain lines (the
ProfilerStep's span, to the end of the device work whose launch call, by correlation, it
holds), and the replay of "no change" must give it back within 1 %; no fix may save more
than the step or less than nothing; each fix's evidence must be found in the raw JSON (an
event of its name at its time; host time inside a range of its label), never taken from
traceana's own output.
"""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

import trace_analyzer as ta
from trace_analyzer.units import glob_regex

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
TRACES = [
    "real/tracelens/h100_bert",
    "real/tracelens/mi300_resnet",
    "real/tracelens/b200_eager",
    "real/tracelens/sglang_decode",
    "real/kineto/tb_plugin_resnet50",
    "real3/particle_transformer/a100_fwd_bs128",
    "hta/tests/data/critical_path/simple_add",
    "hta/tests/data/critical_path/alexnet",
    "real/param/dlrm_kineto",
    "real3/kineto_array/resnet50_num_workers_4",
]
DEVICE = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
CALLS = {"cuda_runtime", "cuda_driver", "Runtime"}
STEP = re.compile(r"^ProfilerStep#(\d+)$")
TOLERANCE_NS = 1000  # the evidence's times against the raw µs (rounded apart by at most this)


def raw(trace: str) -> tuple[list[dict], int, Path]:
    """The complete events of every trace file in the folder (each file's times in ns, as
    ``ts_ns``, ``end_ns``), and the folder."""
    folder = CORPUS / trace
    files = sorted(p for p in folder.glob("*.json*") if p.is_file()) if folder.is_dir() else []
    if not files:
        pytest.skip(f"{folder} is absent: the shared corpus is not checked out beside the repo")
    out = []
    for n, path in enumerate(files):
        data = path.read_bytes()
        doc = json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        base = int(doc.get("baseTimeNanoseconds", 0)) if isinstance(doc, dict) else 0
        for e in events:
            if e.get("ph") == "X" and "dur" in e:
                e["ts_ns"], e["end_ns"] = ns(e, base)
                e["file"] = n
                out.append(e)
    return out, 0, folder


def ns(e: dict, base: int) -> tuple[int, int]:
    t = int(Decimal(repr(e["ts"])) * 1000) + base
    return t, t + round(Decimal(repr(e["dur"])) * 1000)


def raw_windows(xs: list[dict], base: int) -> dict[int, int]:
    """Per ProfilerStep: its span, to the end of the device work launched in it (in every
    file that records it: from the first start to the last end)."""
    steps: dict[int, list[tuple[int, int, int]]] = {}
    for e in xs:
        if (m := STEP.match(str(e.get("name", "")))) and e.get("cat") != "gpu_user_annotation":
            steps.setdefault(int(m.group(1)), []).append((e["file"], e["ts_ns"], e["end_ns"]))
    launch = {(e["file"], e["args"]["correlation"]): e["ts_ns"] for e in xs
              if e.get("cat") in CALLS and "correlation" in e.get("args", {})}  # fmt: skip
    out = {}
    for step, spans in steps.items():
        end = max(b for _, _, b in spans)
        for f, a, b in spans:
            for e in xs:
                at = launch.get((f, e.get("args", {}).get("correlation")))
                if e.get("cat") in DEVICE and e["file"] == f and e["dur"] > 0 and at is not None \
                        and a <= at <= b:  # fmt: skip
                    end = max(end, e["end_ns"])
        out[step] = end - min(a for _, a, _ in spans)
    return out


@pytest.fixture(scope="module", params=TRACES)
def case(request):
    xs, base, folder = raw(request.param)
    window = "[param|pytorch.model.alex_net|0|0|0]" if "critical_path" in request.param else None
    result = ta.critical(ta.load(folder, cache=False), window=window)
    return request.param, xs, base, result


def test_no_change_replays_each_step_as_the_raw_trace_has_it(case):
    trace, xs, base, result = case
    expected = raw_windows(xs, base)
    if not expected:
        assert result.steps.height == 1  # the annotation's one instance, or the whole run
        assert result.steps["replay_error_pct"][0] == 0
        return
    got = {r["step"]: r["replayed_ns"] for r in result.steps.to_dicts()}
    assert set(got) == set(expected), trace
    for step, want in expected.items():
        assert abs(got[step] - want) <= 0.01 * want, (trace, step, got[step], want)


def test_the_path_tiles_each_step_and_no_fix_saves_more_than_it(case):
    _, _, _, result = case
    for step in result.steps.iter_rows(named=True):
        segs = result.path.filter(result.path["step"].eq_missing(step["step"]))
        assert segs["duration_ns"].sum() == step["replayed_ns"]
        assert (segs["duration_ns"] >= 0).all()
    for fix in result.fixes.iter_rows(named=True):
        assert 0 <= fix["saved_ns"] <= fix["step_ns"], fix["fix"]


def test_each_fix_names_evidence_found_in_the_raw_trace(case):
    trace, xs, base, result = case
    offset = _offset(xs, base, result)
    by_name: dict[str, list[tuple[int, int]]] = {}
    for e in xs:
        by_name.setdefault(str(e.get("name")), []).append((e["ts_ns"], e["end_ns"]))
    checked = 0
    for fix in result.fixes.filter(result.fixes["saved_ns"] > 0).iter_rows(named=True):
        for ev in fix["evidence"]:
            a = ev["start_ns"] - offset
            b = a + ev["duration_ns"]
            name = ev["name"].removeprefix("until ")
            spans = by_name.get(name, [])
            if ev["name"].startswith("ProfilerStep#") or ev["kind"] == "before":
                continue
            near = [(s, e) for s, e in spans if min(abs(s - a), abs(s - b), abs(e - a), abs(e - b))
                    <= TOLERANCE_NS]  # fmt: skip
            assert near, (trace, fix["fix"], ev)
            if ev["kind"] == "host" and ev["label"] != "untraced":
                mid = (a + b) // 2
                assert any(s <= mid <= e for s, e in by_name.get(ev["label"], [])), (trace, ev)
            checked += 1
    assert checked or result.fixes.filter(result.fixes["saved_ns"] > 0).is_empty()


def _offset(xs: list[dict], base: int, result) -> int:
    """traceana's clock less the raw trace's (0 unless the reader moved the run)."""
    steps = [
        e
        for e in xs
        if STEP.match(str(e.get("name", ""))) and e.get("cat") != "gpu_user_annotation"
    ]
    if steps and result.steps["step"][0] is not None:
        first = min(steps, key=lambda e: e["ts_ns"])
        return result.steps.sort("start_ns")["start_ns"][0] - first["ts_ns"]
    return 0


def test_the_replay_of_every_node_gives_back_its_recorded_start(case):
    """Replayed from the first node on (a change that changes nothing), every node of the
    graph starts when the trace recorded it: the delays and gaps hold all the graph does not
    explain, and no dependency ends after its node started. And the compiled replay gives
    the Python loop's times under changes everywhere (every third gap gone, every other
    piece of work halved, a waiting call's wait dropped, the first step's marks pinned), and
    the compiled walk the Python walk's paths."""
    trace, _, _, _ = case
    from trace_analyzer.questions.critical.graph import build
    from trace_analyzer.questions.critical.replay import Change, replay, walk_all, windows

    window = "[param|pytorch.model.alex_net|0|0|0]" if "critical_path" in trace else None
    g = build(ta.load(CORPUS / trace, cache=False), glob_regex(window) if window else None)
    same = Change(dur={0: g.dur[0]})
    for native in (True, False):
        assert list(replay(g, same, native=native).start) == list(g.start)
    change = Change(
        gap={i: 0 for i in range(0, g.n, 3) if g.gap[i] > 0},
        dur={i: g.dur[i] // 2 for i in g.device_nodes()[::2]},
        wait={i: -1 for i in g.returns()[:5]},
    )
    pin = frozenset(g.marks[min(g.marks)][0]) if g.marks else frozenset()
    fast, slow = replay(g, change, pin), replay(g, change, pin, native=False)
    assert list(fast.start) == list(slow.start) and list(fast.end) == list(slow.end)
    # and the compiled walk gives the Python walk's paths, as recorded and under the change
    for times in (replay(g, same), fast):
        spans = list(windows(g, times).values())
        w0s, lasts = [w[0] for w in spans], [w[2] for w in spans]
        fast_path = walk_all(g, times, w0s, lasts)
        assert fast_path.equals(walk_all(g, times, w0s, lasts, native=False))


def compiled(trace: str):
    """The trace's profile, its window (a regex: the annotation HTA's traces are read by, else
    None) and its graph, or a skip where the replay was not compiled."""
    from trace_analyzer.questions.critical.graph import build
    from trace_analyzer.questions.critical.link import _replay

    if _replay is None:
        pytest.skip("the replay was not compiled on this machine")
    window = "[param|pytorch.model.alex_net|0|0|0]" if "critical_path" in trace else None
    regex = glob_regex(window) if window else None
    profile = ta.load(CORPUS / trace, cache=False)
    return profile, regex, build(profile, regex)


def test_the_compiled_link_gives_the_graph_polars_gives(case):
    """The compiled link (_replay.link) and its polars reference build the same graph on each
    real trace: every array, the launch latency, the steps, the marks and the node table."""
    from polars.testing import assert_frame_equal

    from trace_analyzer.questions.critical.graph import build
    from trace_analyzer.questions.critical.link import LINK_OUT

    profile, regex, fast = compiled(case[0])
    slow = build(profile, regex, native=False)
    for name in LINK_OUT:
        assert list(getattr(fast, name)) == list(getattr(slow, name)), name
    assert (fast.latency_ns, fast.step, fast.marks) == (slow.latency_ns, slow.step, slow.marks)
    assert_frame_equal(fast.table, slow.table)
    for name in ("chain", "launch", "wait", "call", "cross", "gap"):  # -1 a null, as columns
        column = fast.links(name)[0]
        assert column.to_list() == [None if v == -1 else v for v in getattr(fast, name)], name


def test_the_compiled_host_time_and_windows_give_what_polars_and_python_give(case):
    """On each real trace, the compiled pieces of the host's own time (_replay.own_pieces)
    are polars' pieces; the host-time what-if of each of the three labels holding the most
    own time leaves the same gaps by _replay.covered as by polars, and replays to the same
    times; and each window's span
    found by _replay.spans is the one Python's loop finds."""
    from polars.testing import assert_frame_equal

    from trace_analyzer.questions.critical.own import own_time
    from trace_analyzer.questions.critical.replay import Times, replay, windows
    from trace_analyzer.questions.critical.scenarios import host_time

    profile, regex, g = compiled(case[0])
    threads = g.table.filter(pl.col("kind") == "call").select("pid", "tid").unique()
    own = own_time(profile.keyed, threads, regex)
    assert_frame_equal(own, own_time(profile.keyed, threads, regex, native=False))
    held = own.group_by("label").agg(t=(pl.col("end_ns") - pl.col("start_ns")).sum())
    for label in held.sort("t", "label", descending=[True, False])["label"].head(3):
        mine = own.filter(pl.col("label") == label)
        fast, slow = (host_time(g, mine, label, label, native=n) for n in (True, False))
        assert fast.change.gap == slow.change.gap, label
        # the compiled answer (a frame of nodes and values) replays as polars' dict does
        a, b = replay(g, fast.change), replay(g, slow.change)
        assert (list(a.start), list(a.end)) == (list(b.start), list(b.end)), label
        assert sorted(fast.nodes().to_list()) == sorted(slow.touched), label
    times = replay(g)
    as_lists = Times(*(list(v) for v in vars(times).values()))
    assert windows(g, times) == windows(g, as_lists)
