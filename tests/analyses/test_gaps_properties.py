"""Property tests of the gaps interval logic (trace_analyzer/gaps.py) on synthetic events tables.

Two references, both plain Python written in the tests, nothing taken from traceana's own
output: a brute-force model here (times are small integers, an execution [start, end) covers
the unit cells start .. end-1, busy is the number of covered cells inside the window, and a
gap is a maximal run of uncovered cells between two covered ones), and conftest.busy_model
(the sort-and-merge union of the executions clipped to the window), which also knows
zero-length executions (busy instants that split a gap, docs/gaps.md).

``busy + idle + leading + trailing == window`` is not checked: gaps.py computes idle as
window - busy - leading - trailing, so it holds by construction. Checked instead, per lane,
per device and for the summary (conftest.check_busy_and_idle): idle is the time in the
listed gaps, busy is the union of the executions, leading and trailing end at the first
busy start and begin at the last busy end.
"""

from __future__ import annotations

import random
from itertools import pairwise

import polars as pl
from conftest import busy_model, check_busy_and_idle, union_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trace_analyzer.model.schema import conform
from trace_analyzer.questions.gaps.analysis import Window, between, gaps, merge, stats
from trace_analyzer.analyses.states import RESOLUTION_NS

# Two streams of GPU 0 (one device), one stream of GPU 1 (another device), and the two
# physical cores of logical NeuronCore 0 with LNC=2 (one device).
A, A2, B = "PID:1/GPU:0/stream:7", "PID:1/GPU:0/stream:8", "PID:1/GPU:1/stream:7"
N0, N1 = "i-0abc/PID:1/neuron_hw/NC0:0", "i-0abc/PID:1/neuron_hw/NC0:1"
LANES = (A, A2, B, N0, N1)
DEVICE = {A: "PID:1/GPU:0", A2: "PID:1/GPU:0", B: "PID:1/GPU:1",
          N0: "i-0abc/PID:1/neuron_hw/NC0", N1: "i-0abc/PID:1/neuron_hw/NC0"}
ANCHOR_LANE = "PID:1/TID:1"  # a host annotation at t=0: the origin of --window offsets

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- building events tables -----------------------------------------------------------------

def table(execs: list[tuple[str, int, int]]) -> pl.DataFrame:
    """Return an events table of hardware executions (lane, start, end), plus a host
    annotation starting at 0 so that the run's first event (the --window origin) is t=0."""
    rows = [dict(name="k", lane_kind="hardware", lane=lane,
                 source="neuron_hw" if "/neuron_hw/" in lane else "cuda", start_ns=s,
                 end_ns=e, duration_ns=e - s, pid=1, file="synthetic") for lane, s, e in execs]
    rows.append(dict(name="ProfilerStep#1", lane_kind="annotation", lane=ANCHOR_LANE,
                     source="framework", start_ns=0, end_ns=1, duration_ns=1, pid=1,
                     file="synthetic"))
    df = pl.DataFrame(rows, schema={"name": pl.String, "lane_kind": pl.String,
                                    "lane": pl.String, "source": pl.String,
                                    "start_ns": pl.Int64, "end_ns": pl.Int64,
                                    "duration_ns": pl.Int64, "pid": pl.Int64,
                                    "file": pl.String})
    return conform(df.with_row_index("event_id").with_columns(pl.col("event_id").cast(pl.Int64)))


execution = st.tuples(st.sampled_from(LANES), st.integers(0, 200), st.integers(1, 40)).map(
    lambda t: (t[0], t[1], t[1] + t[2]))
executions = st.lists(execution, min_size=1, max_size=12)
# zero-length executions too, about one in five
instant_or_not = st.tuples(st.sampled_from(LANES), st.integers(0, 200),
                           st.sampled_from([0, 0] + list(range(1, 9))), st.integers(1, 40))
with_instants = st.lists(instant_or_not.map(lambda t: (t[0], t[1], t[1] + t[2] * t[3] // 8)),
                         min_size=1, max_size=14)


@st.composite
def spans(draw):
    a = draw(st.integers(0, 240))
    return a, draw(st.integers(a + 1, 260))


# --- the brute-force model --------------------------------------------------------------------

def model(intervals: list[tuple[int, int]], w0: int, w1: int) -> dict:
    """Busy, idle, leading, trailing and the gaps of a set of intervals in window [w0, w1)."""
    cells = {t for s, e in intervals for t in range(max(s, w0), min(e, w1))}
    W = w1 - w0
    if not cells:
        return dict(busy_ns=0, idle_ns=0, leading_ns=W, trailing_ns=0, window_ns=W, gaps=[])
    lo, hi = min(cells), max(cells) + 1
    found, t = [], lo
    while t < hi:
        if t in cells:
            t += 1
            continue
        start = t
        while t not in cells:
            t += 1
        found.append((start, t))
    # a gap of at most the clock's resolution (1 ns, docs/gaps.md) is no gap: its ns are busy
    short = [(s, e) for s, e in found if e - s <= 1]
    cells |= {t for s, e in short for t in range(s, e)}
    found = [g for g in found if g not in short]
    return dict(busy_ns=len(cells), idle_ns=sum(e - s for s, e in found), leading_ns=lo - w0,
                trailing_ns=w1 - hi, window_ns=W, gaps=found)


def window_for(execs, span):
    if span is None:
        return min(s for _, s, _ in execs), max(e for _, _, e in execs)
    return span


def as_run(r) -> dict:
    """A GapsResult in the shape of one run of the JSON output (the parts checked here)."""
    return dict(lanes=r.lanes.to_dicts(), devices=r.devices.to_dicts(), gaps=r.gaps.to_dicts(),
                device_gaps=r.device_gaps.to_dicts(), summary=r.summary)


def hw_of(execs) -> list[tuple[str, str, int, int]]:
    return [(lane, DEVICE[lane], s, e) for lane, s, e in execs]


def rows(df: pl.DataFrame, key: str) -> dict[str, dict]:
    return {r[key]: r for r in df.to_dicts()}


def gap_list(df: pl.DataFrame, key: str, value: str) -> list[tuple[int, int]]:
    if df.is_empty():
        return []
    return sorted(df.filter(pl.col(key) == value).select("start_ns", "end_ns").rows())


PARTS = ("busy_ns", "idle_ns", "leading_ns", "trailing_ns", "window_ns")


# --- properties through gaps(events) ----------------------------------------------------------

@settings(max_examples=30, **SETTINGS)
@given(executions, st.none() | spans())
def test_lanes_and_devices_match_the_brute_force_model(execs, span):
    r = gaps(table(execs), span=span)
    w0, w1 = window_for(execs, span)
    assert (r.window.start_ns, r.window.end_ns) == (w0, w1)
    lanes, devices = rows(r.lanes, "lane"), rows(r.devices, "device")
    assert set(lanes) == {lane for lane, _, _ in execs}
    assert set(devices) == {DEVICE[lane] for lane in lanes}

    for key, table_rows, gap_rows, member in (
            ("lane", lanes, r.gaps, lambda lane, k: lane == k),
            ("device", devices, r.device_gaps, lambda lane, k: DEVICE[lane] == k)):
        for k, row in table_rows.items():
            mine = [(s, e) for lane, s, e in execs if member(lane, k)]
            want = model(mine, w0, w1)
            got = gap_list(gap_rows, key, k)
            # the model's numbers
            assert {p: row[p] for p in PARTS} == {p: want[p] for p in PARTS}, (key, k)
            assert row["window_ns"] == w1 - w0
            assert row["idle_ns"] >= 0 and row["leading_ns"] >= 0 and row["trailing_ns"] >= 0
            assert got == want["gaps"]
            assert row["gap_count"] == len(got)
            assert row["executions"] == sum(1 for s, e in mine if e > w0 and s < w1)
            # gaps: positive, inside the window, disjoint, and never over a busy interval
            assert all(s < e for s, e in got)
            assert all(w0 <= s and e <= w1 for s, e in got)
            assert all(e1 <= s2 for (_, e1), (s2, _) in pairwise(got))
            assert not [(g, x) for g in got for x in mine if g[0] < x[1] and x[0] < g[1]]
            assert sum(e - s for s, e in got) == row["idle_ns"]

    check_busy_and_idle(as_run(r), hw_of(execs), w0, w1)
    s = r.summary
    for p in PARTS[:4]:
        assert s[p] == sum(d[p] for d in devices.values())
    assert s["window_ns"] == len(devices) * (w1 - w0)
    assert s["gap_count"] == sum(d["gap_count"] for d in devices.values())
    assert (s["devices"], s["lanes"]) == (len(devices), len(lanes))


@settings(max_examples=40, **SETTINGS)
@given(with_instants, st.none() | spans(), st.sampled_from([0, 0, 1, 5, 20]))
def test_busy_idle_leading_and_trailing_follow_from_the_executions(execs, span, min_gap):
    """(a) idle = the listed gaps, (b) busy = the union, (c) leading and trailing to and from
    the busy blocks: per lane, per device and for the summary, zero-length executions too."""
    r = gaps(table(execs), span=span, min_gap_ns=min_gap)
    w0, w1 = window_for(execs, span)
    assert (r.window.start_ns, r.window.end_ns) == (w0, w1)
    check_busy_and_idle(as_run(r), hw_of(execs), w0, w1, min_gap)


def test_touching_executions_leave_no_gap_and_an_instant_splits_one():
    # lane A: [0,10) and [10,20) touch: one block, no 0 ns gap; the instant at 30 splits the
    # idle between 20 and 40 in two gaps
    execs = [(A, 0, 10), (A, 10, 20), (A, 30, 30), (A, 40, 50)]
    r = gaps(table(execs))
    (row,) = r.lanes.to_dicts()
    assert sorted(r.gaps.select("start_ns", "end_ns").rows()) == [(20, 30), (30, 40)]
    assert (row["busy_ns"], row["idle_ns"], row["leading_ns"], row["trailing_ns"],
            row["gap_count"], row["executions"]) == (30, 20, 0, 0, 2, 4)
    assert busy_model([(s, e) for _, s, e in execs], 0, 50)["gaps"] == [(20, 30), (30, 40)]
    check_busy_and_idle(as_run(r), hw_of(execs), 0, 50)


def comparable(r) -> dict:
    """The interval results of a GapsResult, without executions counts and event ids."""
    drop = ["executions"]
    gap_cols = ["lane", "start_ns", "end_ns", "duration_ns"]
    dev_cols = ["device", "start_ns", "end_ns", "duration_ns"]
    summary = {k: v for k, v in r.summary.items() if k != "executions"}
    return dict(lanes=r.lanes.drop(drop).sort("lane").to_dicts(),
                devices=r.devices.drop(drop).sort("device").to_dicts(),
                gaps=sorted(r.gaps.select(gap_cols).rows()),
                device_gaps=sorted(r.device_gaps.select(dev_cols).rows()),
                summary=summary)


@settings(max_examples=20, **SETTINGS)
@given(executions, st.none() | spans(), st.randoms(use_true_random=False), st.data())
def test_order_of_events_and_splitting_an_execution_change_nothing(execs, span, rnd, data):
    base = gaps(table(execs), span=span)
    changed = list(execs)
    # maybe cut one execution in two pieces that touch: same busy, idle, gaps
    i = data.draw(st.integers(0, len(execs) - 1))
    lane, s, e = execs[i]
    split = e - s >= 2 and data.draw(st.booleans())
    if split:
        cut = data.draw(st.integers(s + 1, e - 1))
        changed[i:i + 1] = [(lane, s, cut), (lane, cut, e)]
    rnd.shuffle(changed)  # and the rows in another order
    again = gaps(table(changed), span=span)
    assert comparable(again) == comparable(base)
    if not split:
        assert again.lanes.sort("lane")["executions"].to_list() == \
            base.lanes.sort("lane")["executions"].to_list()


@settings(max_examples=12, **SETTINGS)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 40)), min_size=1, max_size=8),
       st.lists(st.tuples(st.sampled_from((A2, B)), st.integers(0, 300), st.integers(1, 60)),
                min_size=1, max_size=8),
       st.none() | spans())
def test_events_on_other_lanes_do_not_change_a_lane(on_a, others, span):
    mine = [(A, s, s + d) for s, d in on_a]
    more = mine + [(lane, s, s + d) for lane, s, d in others]

    def lane_a(r):
        (row,) = r.lanes.filter(pl.col("lane") == A).drop("device").to_dicts()
        return row, gap_list(r.gaps, "lane", A)

    (alone, gaps_alone), (among, gaps_among) = (lane_a(gaps(table(mine), span=span)),
                                                lane_a(gaps(table(more), span=span)))
    assert gaps_among == gaps_alone
    if span is not None:  # an explicit window: every number of lane A stays the same
        assert among == alone
    else:  # the hardware span, which the other lanes may widen: busy, idle, gaps stay
        assert (among["busy_ns"], among["idle_ns"], among["gap_count"],
                among["executions"]) == (alone["busy_ns"], alone["idle_ns"],
                                         alone["gap_count"], alone["executions"])


def test_explicit_window_clips_executions_that_cross_its_edges():
    # lane A: [0,50) [60,100) [130,200); window 40..150 cuts the first and the last
    r = gaps(table([(A, 0, 50), (A, 60, 100), (A, 130, 200)]), span=(40, 150))
    (row,) = r.lanes.to_dicts()
    assert (row["busy_ns"], row["idle_ns"], row["leading_ns"], row["trailing_ns"]) == \
        ((50 - 40) + (100 - 60) + (150 - 130), (60 - 50) + (130 - 100), 0, 0)
    assert sorted(r.gaps.select("start_ns", "end_ns").rows()) == [(50, 60), (100, 130)]
    assert row["executions"] == 3
    # a window inside one gap: no busy time, all of it leading idle, no gap
    r = gaps(table([(A, 0, 50), (A, 100, 150)]), span=(60, 90))
    (row,) = r.lanes.to_dicts()
    assert (row["busy_ns"], row["idle_ns"], row["leading_ns"], row["trailing_ns"],
            row["gap_count"]) == (0, 0, 90 - 60, 0, 0)


# --- properties of merge / between / stats directly ------------------------------------------

crowded = st.lists(st.tuples(st.sampled_from(("a", "b")), st.integers(0, 60),
                             st.integers(0, 80)), min_size=1, max_size=25)


@settings(max_examples=50, **SETTINGS)
@given(crowded, spans())
def test_crowded_overlapping_intervals_never_give_negative_idle(ivs, span):
    w = Window(span[0], span[1], "--window")
    clipped = [(k, max(s, w.start_ns), min(s + d, w.end_ns)) for k, s, d in ivs
               if s + d > w.start_ns and s < w.end_ns]
    df = pl.DataFrame({"lane": [k for k, _, _ in clipped], "pid": [1] * len(clipped),
                       "event_id": list(range(len(clipped))),
                       "start_ns": [s for _, s, _ in clipped],
                       "end_ns": [e for _, _, e in clipped]},
                      schema={"lane": pl.String, "pid": pl.Int64, "event_id": pl.Int64,
                              "start_ns": pl.Int64, "end_ns": pl.Int64})
    merged = merge(df, "lane", RESOLUTION_NS)  # as gaps() merges: 1 ns apart is one block
    found = between(merged, "lane")
    keys = pl.DataFrame({"lane": ["a", "b"]})
    out = stats(merged, found, keys, "lane", w)
    # merged intervals are disjoint and ordered per lane; gaps positive and between them
    for k in ("a", "b"):
        m = merged.filter(pl.col("lane") == k).sort("start_ns").select("start_ns", "end_ns").rows()
        assert all(e1 < s2 for (_, e1), (s2, _) in pairwise(m))
        assert m == union_of([(s, e) for kk, s, e in clipped if kk == k])
    assert (found["duration_ns"] > 0).all()
    for r in out.to_dicts():
        assert r["idle_ns"] >= 0 and r["busy_ns"] <= r["window_ns"]
        blocks = union_of([(s, e) for kk, s, e in clipped if kk == r["lane"]])
        assert r["leading_ns"] == (blocks[0][0] if blocks else w.end_ns) - w.start_ns
        assert r["trailing_ns"] == w.end_ns - (blocks[-1][1] if blocks else w.end_ns)
        own = found.filter(pl.col("lane") == r["lane"])
        assert r["idle_ns"] == own["duration_ns"].sum()
        assert r["gap_count"] == own.height
        # busy: the covered ns, plus the gaps of at most 1 ns the union closes
        assert r["busy_ns"] == sum(e - s for s, e in blocks)


def test_random_orders_of_the_same_rows_merge_alike():
    rnd = random.Random(7)
    ivs = [(rnd.randrange(0, 500), rnd.randrange(1, 50)) for _ in range(40)]
    frames = []
    for _ in range(5):
        rnd.shuffle(ivs)
        df = pl.DataFrame({"lane": ["a"] * len(ivs), "pid": [1] * len(ivs),
                           "event_id": list(range(len(ivs))),
                           "start_ns": [s for s, _ in ivs], "end_ns": [s + d for s, d in ivs]})
        frames.append(merge(df, "lane").select("start_ns", "end_ns", "events").rows())
    assert all(f == frames[0] for f in frames)
    assert [(s, e) for s, e, _ in frames[0]] == union_of([(s, s + d) for s, d in ivs])
