"""`traceana export` as Perfetto itself reads it: the trace processor of the Perfetto UI (build
v52, run offline by tests/perfetto_tp.py) loads the export of every fixture and every real
trace of ../shared/corpus whole, and the UI draws its lanes (tests/perfetto_ui.py).

Expected values: traceana's own tables of the run (events per lane, links, gaps, summary),
which the export must carry over whole, computed here through the library from the input;
and on the real traces, kernels per stream counted in the raw file here, in a few lines.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path

import orjson
import polars as pl
import pytest
from conftest import run_cli

import trace_analyzer as ta
from trace_analyzer.questions.gaps.analysis import device_of
from trace_analyzer.questions.gaps.hints import cause_hint

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "corpus"
# Inputs traceana refuses (SOURCE.md): a PyTorch execution trace, a rocprofiler-sdk file.
REFUSED = {"real/param/et", "real/tracelens/rocprof"}


def _runs() -> list[str]:
    runs = [f"fixtures/{p.name}" for p in sorted((ROOT / "fixtures").iterdir()) if p.is_dir()]
    for part in ("real", "hta"):
        if (SHARED / part).is_dir():
            found = {f.parent for f in (SHARED / part).rglob("*.json*")}
            runs += sorted(f"{part}/{p.relative_to(SHARED / part)}" for p in found)
    return [r for r in runs if r not in REFUSED]


def _path(run: str) -> Path:
    return ROOT / run if run.startswith("fixtures/") else SHARED / run


_DOCS: dict[str, tuple] = {}


def exported(run: str) -> tuple:
    """The run's profile (as `traceana export` loads it), gaps, export bytes and time base
    (Perfetto's ts 0: the JSON's times are relative to it), built once."""
    if run not in _DOCS:
        profile = ta.load(_path(run), args=True)
        gaps = ta.gaps(profile)
        doc = ta.export(profile, source=run)
        _DOCS[run] = profile, gaps, orjson.dumps(doc), doc["baseTimeNanoseconds"]
    return _DOCS[run]


def slices_per_thread(tp) -> list[dict]:
    return tp.query("""
        select p.name as process, t.name as thread, count(s.id) as n
        from slice s join thread_track tt on s.track_id = tt.id
        join thread t using (utid) left join process p using (upid)
        group by t.utid""")


@pytest.fixture(scope="module", params=_runs())
def loaded(request, trace_processor) -> tuple:
    """A run, exported and loaded into Perfetto's trace processor (once for all its tests)."""
    profile, gaps, data, base = exported(request.param)
    trace_processor.load(data)
    return request.param, profile, gaps, trace_processor, base


def test_every_link_is_a_flow_between_its_own_two_slices(loaded):
    run, profile, _, tp, _ = loaded
    edges = profile.edges
    assert tp.query("select count(*) as n from flow")[0]["n"] == edges.height
    bound = Counter((r["a"], r["b"]) for r in tp.query("""
        select extract_arg(o.arg_set_id, 'args.event_id') as a,
               extract_arg(i.arg_set_id, 'args.event_id') as b
        from flow f join slice o on o.id = f.slice_out join slice i on i.id = f.slice_in"""))
    # Perfetto stores a flow from the slice that starts first: a link whose child starts
    # before its parent (torch-neuronx's runtime call before its op's stream event) is kept
    # the other way round
    start = dict(profile.events.select("event_id", "start_ns").iter_rows())
    want = Counter((s, d) if start[d] >= start[s] else (d, s)
                   for s, d in edges.select("src", "dst").iter_rows())
    assert bound == want


def test_nothing_is_lost_or_in_error(loaded):
    tp = loaded[3]
    bad = tp.query("""select name, idx, severity, value from stats
                      where value > 0 and severity in ('error', 'data_loss')""")
    assert bad == []


def test_each_lane_is_a_track_with_its_events_and_its_gaps_beside_it(loaded):
    run, profile, gaps, tp, _ = loaded
    want = Counter(dict(profile.events.group_by("lane").len().iter_rows()))
    want_gaps = Counter(dict(gaps.gaps.group_by("lane").len().iter_rows())) if \
        gaps.gaps.height else Counter()
    hardware = dict(profile.events.filter(pl.col("lane_kind") == "hardware")
                    .select("lane", device_of(pl.col("lane")).alias("device"))
                    .unique().iter_rows())
    got, got_gaps, summary, critical = Counter(), Counter(), 0, 0
    for r in slices_per_thread(tp):
        thread, process = r["thread"], r["process"]
        if thread == "traceana summary":
            assert process == "traceana"
            summary += r["n"]
            continue
        if thread.startswith("traceana critical path"):
            assert process == "traceana"
            critical += r["n"]
            continue
        if thread.endswith(" gaps"):
            got_gaps[thread.removesuffix(" gaps")] += r["n"]
            lane = thread.removesuffix(" gaps")
        else:
            lane = re.sub(r" \(overlap \d+\)$", "", thread)
            got[lane] += r["n"]
        # each track sits in the process traceana names: its host process, or its device
        assert lane.startswith(process), (lane, process)
        if lane in hardware:
            assert process == hardware[lane], (lane, process)
    assert got == want
    assert got_gaps == want_gaps
    assert summary == (gaps.window is not None)
    assert critical == ta.critical(profile).path.height  # every segment of the path a slice


def test_gaps_carry_cause_evidence_and_hint_and_the_summary_its_totals(loaded):
    run, profile, gaps, tp, base = loaded
    rows = tp.query("""
        select ts, dur, name, extract_arg(arg_set_id, 'args.cause') as cause,
               extract_arg(arg_set_id, 'args.evidence') as evidence,
               extract_arg(arg_set_id, 'args.hint') as hint
        from slice where category = 'traceana_gap'""")
    want = Counter(gaps.gaps.select(pl.col("start_ns") - base, "duration_ns", "cause",
                                    pl.col("cause").alias("name"), "evidence")
                   .iter_rows()) if gaps.gaps.height else Counter()
    got = Counter((r["ts"], r["dur"], r["name"], r["cause"], r["evidence"]) for r in rows)
    assert got == want
    # the hint: gaps' own for the op and cause, else for the cause, else the cause's general
    given = {(h["op"], h["cause"]): h["hint"] for h in gaps.hints}
    want_hints = Counter(
        (s - base, given.get((o, c), given.get((None, c), cause_hint(c, n))))
        for s, o, c, n in gaps.gaps.select("start_ns", "next_op", "cause", "neuron").iter_rows()
    ) if gaps.gaps.height else Counter()
    assert Counter((r["ts"], r["hint"]) for r in rows) == want_hints
    if gaps.window is None:
        return
    (s,) = tp.query("""
        select ts, dur, extract_arg(arg_set_id, 'args.idle_ns') as idle,
               extract_arg(arg_set_id, 'args.gap_count') as n
        from slice where name = 'traceana summary'""")
    assert (s["ts"], s["dur"]) == (gaps.window.start_ns - base, gaps.window.duration_ns)
    assert (s["idle"], s["n"]) == (gaps.summary["idle_ns"], gaps.summary["gap_count"])


KERNEL_CATS = ("kernel", "Kernel")


@pytest.mark.parametrize("run", [r for r in _runs() if r.startswith("real/")])
def test_kernels_per_stream_are_the_raw_file_s(run, trace_processor):
    """Kernels per (device, stream) in Perfetto equal those counted in the raw file."""
    raw: Counter = Counter()
    for f in _path(run).glob("*.json*"):
        data = f.read_bytes()
        doc = orjson.loads(gzip.decompress(data) if f.name.endswith(".gz") else data)
        for e in doc["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") in KERNEL_CATS:
                a = e.get("args") or {}
                raw[(a.get("device", e["pid"]), a.get("stream", e["tid"]))] += 1
    if not raw:
        pytest.skip(f"{run} has no kernels")
    data = exported(run)[2]
    trace_processor.load(data)
    got: Counter = Counter()
    for r in trace_processor.query("""
            select t.name as thread, count(*) as n from slice s
            join thread_track tt on s.track_id = tt.id join thread t using (utid)
            where s.category in ('kernel', 'Kernel') group by t.utid"""):
        m = re.search(r"GPU:(\d+)/stream:(\d+)( \(overlap \d+\))?$", r["thread"])
        assert m, r["thread"]
        got[(int(m[1]), int(m[2]))] += r["n"]
    assert got == raw


def test_the_cli_export_of_the_naive_fixture_loads_whole(tmp_path, trace_processor):
    out = tmp_path / "annotated.json"
    code, _, err = run_cli("export", ROOT / "fixtures" / "rmsnorm_naive", "-o", out)
    assert code == 0, err
    trace_processor.load(out)
    links = ta.load(ROOT / "fixtures" / "rmsnorm_naive").edges.height
    assert trace_processor.query("select count(*) as n from flow")[0]["n"] == links
    assert f"{links} links" in err


def test_the_perfetto_ui_draws_every_lane_of_the_naive_export(tmp_path, trace_processor):
    """The bundled Perfetto UI, in headless chromium, opens the export: every lane of the run
    is a track on screen, and each track's row has slices drawn on it (coloured pixels)."""
    import perfetto_ui
    from PIL import Image

    if not perfetto_ui.CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is absent: apt-get install chromium (.ci/run does, as "
                    "root) to run the Perfetto UI test")
    naive = ROOT / "fixtures" / "rmsnorm_naive"
    out = tmp_path / "annotated.json"
    code, _, err = run_cli("export", naive, "-o", out)
    assert code == 0, err
    shot = tmp_path / "perfetto.png"
    titles = perfetto_ui.screenshot(out, shot, tmp_path / "chromium")
    image = Image.open(shot).convert("RGB")
    assert image.size == (perfetto_ui.WIDTH, perfetto_ui.HEIGHT)
    lanes = set(ta.load(naive).events["lane"].unique().to_list())
    gaps = {f"{lane} gaps" for lane in ta.gaps(ta.load(naive)).gaps["lane"].unique()}
    shown = {text.rsplit(" ", 1)[0]: (top, bottom) for text, top, bottom in titles}
    assert lanes | gaps | {"traceana summary"} <= set(shown)

    def coloured(top: float, bottom: float) -> int:  # slices, not the grey and white chrome
        row = image.crop((300, int(top) + 2, perfetto_ui.WIDTH - 20, int(bottom) - 2))
        return sum(n for n, (r, g, b) in row.getcolors(1 << 24) if max(r, g, b) - min(r, g, b) > 60)

    for name in lanes | gaps:
        assert coloured(*shown[name]) > 40, f"nothing drawn on the track {name}"
    assert coloured(0, perfetto_ui.HEIGHT) > 20_000  # not a blank page
