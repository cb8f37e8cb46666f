"""intervals.innermost (vectorised) answers as intervals.enclosing (the stack sweep) does.

Checked on random ranges on a few threads: properly nested ones (what one thread's ops are)
must give the sweep's answer exactly. Ranges that overlap without nesting (a child ending a
rounding error after its parent) have no single innermost range; there the answer must be
a range that contains the point, and a point gets one exactly when the sweep gives one.
"""

from __future__ import annotations

from unittest import mock

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_analyzer.model.intervals import enclosing, innermost, swept


def nested(draw, lo: int, hi: int, depth: int, out: list) -> None:
    """Append properly nested ranges inside [lo, hi] to out."""
    t = lo
    while t < hi and depth < 4 and draw(st.booleans()):
        s = draw(st.integers(t, hi))
        e = draw(st.integers(s, hi))
        out.append((s, e))
        nested(draw, s, e, depth + 1, out)
        t = e + draw(st.integers(0, 3))


@st.composite
def threads(draw, overlap: bool):
    ranges, points = [], []
    for tid in range(draw(st.integers(1, 3))):
        spans: list[tuple[int, int]] = []
        nested(draw, 0, 60, 0, spans)
        if overlap and spans:  # stretch some ends past their parents'
            spans = [(s, e + draw(st.integers(0, 3))) for s, e in spans]
        ranges += [(tid, s, e) for s, e in spans]
        points += [(tid, draw(st.integers(-2, 65))) for _ in range(draw(st.integers(0, 12)))]
    return ranges, points


def both(ranges, points, sweep_allowed=True, base=1000):
    """innermost's answers and the sweep's for the points, numbered from ``base`` (0: the
    same numbers as the ranges')."""
    ids = range(len(ranges))
    pids = range(base, base + len(points))
    _, ref = swept([(g, s, e, i) for (g, s, e), i in zip(ranges, ids)],
                   [(g, t, i) for (g, t), i in zip(points, pids)])
    r = pl.DataFrame([(g, s, e, i) for (g, s, e), i in zip(ranges, ids)],
                     schema={"g": pl.Int64, "start": pl.Int64, "end": pl.Int64, "id": pl.Int64},
                     orient="row")
    p = pl.DataFrame([(g, t, i) for (g, t), i in zip(points, pids)],
                     schema={"g": pl.Int64, "t": pl.Int64, "id": pl.Int64}, orient="row")
    if sweep_allowed:
        got = dict(innermost(r, p, ["g"]).iter_rows())
    else:  # nested ranges never need the (slow) sweep
        with mock.patch("trace_analyzer.model.intervals.swept", side_effect=AssertionError("sweep")):
            got = dict(innermost(r, p, ["g"]).iter_rows())
    return got, ref


@settings(max_examples=300, deadline=None)
@given(threads(overlap=False))
def test_innermost_equals_the_sweep_on_nested_ranges(case):
    got, ref = both(*case, sweep_allowed=False)
    assert got == ref


@settings(max_examples=300, deadline=None)
@given(threads(overlap=True), st.sampled_from([0, 1000]))
def test_innermost_equals_the_sweep_on_overlapping_ranges(case, base):
    """Where ranges cross (a child ending after its parent, as a Python frame and a
    record_function range do in real traces), each point still gets the sweep's answer, not
    merely a range that holds it; and points numbered as the ranges are keep their own."""
    ranges, points = case
    got, ref = both(ranges, points, base=base)
    assert got == ref
    for pid, rid in got.items():
        g, t = points[pid - base]
        rg, s, e = ranges[rid]
        assert rg == g and s <= t <= e


def test_a_point_numbered_as_a_range_keeps_its_own_answer():
    # A [0, 10] holds B [2, 4]; C [5, 20] crosses A and holds D [12, 15] (id 3, D's parent C).
    # A point at 3, numbered 3 as D is, sits in B: D, swept after it, must not overwrite it.
    r = [(0, 0, 10, 0), (0, 2, 4, 1), (0, 5, 20, 2), (0, 12, 15, 3)]
    of_ranges, of_points = swept(r, [(0, 3, 3)])
    assert of_points == {3: 1} and of_ranges[3] == 2
    assert enclosing(r, [(0, 3, 3)])[3] == 1


def test_innermost_containing_is_inclusive_and_innermost():
    # op A [10, 50] holds B [20, 30] and C [30, 40]; points at 10, 30, 35, 50, 51
    r = pl.DataFrame({"g": [1, 1, 1], "start": [10, 20, 30], "end": [50, 30, 40], "id": [1, 2, 3]})
    p = pl.DataFrame({"g": [1] * 5, "t": [10, 30, 35, 50, 51], "id": [11, 12, 13, 14, 15]})
    got = dict(innermost(r, p, ["g"]).iter_rows())
    # 30 is in B (inclusive end) and C (start): the sweep takes C, the later-opened
    assert got == {11: 1, 12: 3, 13: 3, 14: 1}
