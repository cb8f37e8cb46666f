"""Plots for ``traceana report``: a timeline of the hardware lanes and a histogram of gaps.

Each function takes result dicts (the JSON output's shape: the report's ``timeline``, whose
lanes and op rows are bucketed, or listed one by one when few, and whose histogram is
counted already) and returns PNG bytes (or SVG text); none reads or writes a file, and none
draws more than a few thousand shapes, however long the trace. matplotlib is the optional
extra ``traceana[report]``, imported when a plot is drawn, never at ``import trace_analyzer``
(plotting.py: the figures, their bytes, the colours).
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING, Any

from trace_analyzer.numbers import duration
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.render.plotting import (
    BUSY_COLOUR,
    CAUSE_COLOURS,
    DPI,
    OP_COLOUR,
    OP_EDGE,
    OUTSIDE_COLOUR,
    WIDTH_IN,
)
from trace_analyzer.render.plotting import as_png as as_png  # the page's and files' too
from trace_analyzer.render.plotting import figure as _figure
from trace_analyzer.render.plotting import message as _message
from trace_analyzer.render.plotting import patch as _patch
from trace_analyzer.render.plotting import require as require  # the CLI's check before drawing
from trace_analyzer.render.plotting import save as _save
from trace_analyzer.render.plotting import short_names as short_names  # the page's too
from trace_analyzer.render.plotting import text as _text
from trace_analyzer.render.plotting import ticks as _ticks

if TYPE_CHECKING:  # matplotlib is imported only to draw
    from matplotlib.axes import Axes

LANE_H = 0.7  # of a row
# the units of a time axis, as numbers.duration picks them for a span
UNITS = ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"))


def busy_blocks(lane: dict[str, Any]) -> list[tuple[int, int]]:
    """Return the busy intervals of a lane of a timeline listed one by one (``exact``), in ns
    after the window start: its span minus its gaps (``[at_ns, duration_ns, cause, evidence]``)."""
    if lane["first_ns"] is None:
        return []
    t, blocks = lane["first_ns"], []
    for at, dur, *_ in lane["gaps"]:
        blocks.append((t, at))
        t = at + dur
    blocks.append((t, lane["last_ns"]))
    return blocks


def unit_of(span_ns: float) -> tuple[int, str]:
    """Return the unit a time axis ``span_ns`` long is labelled in (ns per unit, its name),
    as ``numbers.duration`` picks it."""
    return next(((per, u) for per, u in UNITS if span_ns >= per), (1, "ns"))


def extent_ns(timeline: dict[str, Any]) -> int:
    """Return the time the run of a timeline result spans (0 without a window)."""
    t = timeline["runs"][0]
    return 0 if t["from_ns"] is None else int(t["to_ns"] - t["from_ns"])


def timeline(
    timeline: dict[str, Any], *, span_ns: int | None = None, fmt: str = "png"
) -> bytes | str:
    """Return the timeline of a one-run report: framework ops above the hardware lanes, busy
    time and the gaps by cause; x: time after the window start.

    ``timeline``: the report's timeline result; ``span_ns`` the width of the x axis, so that
    two timelines share one scale. ``fmt``: "png" (bytes) or "svg" (text).
    """
    t = timeline["runs"][0]
    if t["from_ns"] is None or not t["lanes"]:
        return _message(f"{_text(t['root'])}: nothing ran on hardware, no timeline to draw", fmt)
    lanes = t["lanes"]
    rows = _op_rows(t)
    fig = _figure(1.9 + 0.36 * (len(rows) + len(lanes)) + (0.2 if rows else 0))
    ax = fig.add_subplot()
    left = t["from_ns"]
    right = left + (span_ns or extent_ns(timeline))
    per, unit = unit_of(right - left)
    x = _Axis(per, t["from_ns"], t["bucket_ns"], WIDTH_IN * DPI * 0.82 / ((right - left) / per))
    ax.set_xlim(left / per, right / per)
    for y, row in enumerate(rows):
        _draw_ops(ax, y, row, x, right / per, t["op_names"])
    base = len(rows) + (0.4 if rows else 0)
    seen: set[str] = set()
    for i, lane in enumerate(lanes):
        seen |= _draw_lane(ax, base + i, lane, x)
    labels = ["framework ops" if y == 0 else "" for y in range(len(rows))]
    labels += [_text(n) for n in short_names([lane["lane"] for lane in lanes])]
    ax.set_yticks([*range(len(rows)), *(base + i for i in range(len(lanes)))], labels, fontsize=9)
    ax.set_ylim(base + len(lanes) - 0.4, -0.6)
    _draw_time_axis(ax, t, left / per, right / per, (per, unit))
    more = t["lane_count"] - len(lanes)
    ax.set_title(
        _text(t["root"]) + (f" (first {len(lanes)} of {t['lane_count']} lanes)" if more else ""),
        fontsize=10,
        loc="left",
    )
    handles = [_patch(BUSY_COLOUR, "busy")]
    handles += [_patch(CAUSE_COLOURS[c], f"gap: {c}") for c in CAUSES if c in seen]
    if rows:
        handles.append(_patch(OP_COLOUR, "framework op (host)", OP_EDGE))
    if left < 0 or t["to_ns"] < right:
        handles.append(_patch(OUTSIDE_COLOUR, "outside the window", "#bbbbbb"))
    fig.legend(
        handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False
    )
    return _save(fig, fmt)


class _Axis:
    """ns (after the window start) to x (``per`` ns a unit); the buckets' edges; pixels."""

    def __init__(self, per: int, start: int, width: int, px_per_unit: float):
        self.per, self.start, self.width, self.px = per, start, width, px_per_unit

    def edges(self, n: int) -> list[float]:
        return [(self.start + i * self.width) / self.per for i in range(n + 1)]


def _op_rows(t: dict[str, Any]) -> list[Any]:
    """Return the op rows of timeline run ``t``: lists of ops (exact) or bucketed rows."""
    if t["op_rows"]:
        return list(t["op_rows"])
    rows: dict[int, list[dict[str, Any]]] = {}
    for o in t["framework_ops"]:
        rows.setdefault(o["row"], []).append(o)
    return [rows[r] for r in sorted(rows)]


def _draw_ops(ax: Axes, y: int, row: Any, x: _Axis, right: float, names: list[str]) -> None:
    """Draw one row of framework ops: each op (a list) or the coverage of each bucket."""
    if isinstance(row, dict):  # bucketed: coverage, and the name of the op covering most
        edges = x.edges(len(row["cover"]))
        top = [y + 0.4 - c * 0.8 / 1000 for c in row["cover"]]
        ax.fill_between(edges, y + 0.4, [*top, top[-1]], step="post", color=OP_EDGE, lw=0)
        runs, start = [], 0
        for i in range(1, len(row["op"]) + 1):
            if i == len(row["op"]) or row["op"][i] != row["op"][start]:
                if row["op"][start] >= 0:
                    runs.append((edges[start], edges[i] - edges[start], names[row["op"][start]]))
                start = i
        _label_ops(ax, y, runs, right, x.px)
        return
    spans = [(o["at_ns"] / x.per, o["duration_ns"] / x.per) for o in row]
    ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=OP_COLOUR, edgecolors=OP_EDGE, linewidth=0.6)
    _label_ops(
        ax, y, [(a, d, o["name"]) for (a, d), o in zip(spans, row, strict=True)], right, x.px
    )


def _draw_lane(ax: Axes, y: float, lane: dict[str, Any], x: _Axis) -> set[str]:
    """Draw one hardware lane at ``y``: its gaps by cause and busy blocks (exact), or per
    bucket its busy time from the bottom and its idle above in the main cause's colour."""
    bottom, h = y + LANE_H / 2, LANE_H / 1000
    if lane["exact"]:
        seen = set()
        for ci, cause in enumerate(CAUSES):
            mine = [(at / x.per, d / x.per) for at, d, c, _ in lane["gaps"] if c == ci]
            if mine:
                seen.add(cause)
                colour = CAUSE_COLOURS[cause]  # a thin edge keeps a short gap visible
                ax.broken_barh(
                    mine, (y - 0.35, LANE_H), facecolors=colour, edgecolors=colour, lw=0.6
                )
        busy = [(s / x.per, (e - s) / x.per) for s, e in busy_blocks(lane)]
        ax.broken_barh(
            busy, (y - 0.35, LANE_H), facecolors=BUSY_COLOUR, edgecolors=BUSY_COLOUR, lw=0.6
        )
        return seen
    if not lane["busy"]:
        return set()
    edges = x.edges(len(lane["busy"]))
    busy_top = [bottom - b * h for b in lane["busy"]]
    ax.fill_between(edges, bottom, [*busy_top, busy_top[-1]], step="post", color=BUSY_COLOUR, lw=0)
    seen = set()
    for ci, cause in enumerate(CAUSES):
        if ci not in lane["cause"]:
            continue
        seen.add(cause)
        idle = [
            t - (d * h if c == ci else 0)
            for t, d, c in zip(busy_top, lane["idle"], lane["cause"], strict=True)
        ]
        ax.fill_between(
            edges,
            [*busy_top, busy_top[-1]],
            [*idle, idle[-1]],
            step="post",
            color=CAUSE_COLOURS[cause],
            lw=0,
        )
    return seen


def _draw_time_axis(
    ax: Axes, t: dict[str, Any], left: float, right: float, unit: tuple[int, str]
) -> None:
    """Grey out what lies outside the window, then label and style the axes (x in ``unit``,
    ns per unit and its name)."""
    per = unit[0]
    if left < 0:  # framework ops before the window: grey outside it
        ax.axvspan(left, 0, color=OUTSIDE_COLOUR, zorder=0)
        ax.axvline(0, color="#555555", linestyle="--", linewidth=0.8)
    end = t["to_ns"] / per
    if end < right:
        ax.axvspan(end, right, color=OUTSIDE_COLOUR, zorder=0)
        ax.axvline(end, color="#555555", linestyle="--", linewidth=0.8)
    ax.xaxis.set_major_formatter(_ticks(1))
    note = (
        ""
        if not any(not lane["exact"] for lane in t["lanes"])
        else (f"; lanes in buckets of {duration(t['bucket_ns'])}")
    )
    ax.set_xlabel(f"{unit[1]} after the window start{note}", fontsize=9)
    ax.tick_params(axis="y", length=0)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _label_ops(
    ax: Axes, y: int, spans: list[tuple[float, float, str]], right: float, px_per_unit: float
) -> None:
    """Name each op (or run of buckets) inside its bar, else just right of it, where the name
    fits."""
    starts = [s for s, _, _ in spans[1:]] + [right]
    for (x, width, name), nxt in zip(spans, starts, strict=True):
        need = 6.7 * len(name) + 8  # px at fontsize 8
        if width * px_per_unit > need:
            at, ha = x + width / 2, "center"
        elif (nxt - x - width) * px_per_unit > need + 4:
            at, ha = x + width + 3 / px_per_unit, "left"
        else:
            continue
        ax.text(at, y, _text(name), ha=ha, va="center", fontsize=8, color="#1b1b1b", clip_on=True)


def histogram(report: dict[str, Any], *, fmt: str = "png") -> bytes | str:
    """Return a histogram of the device gaps of the run (and the base) of ``report`` (its
    parts' JSON) by their duration, each bar the idle time of its gaps (so that the few long
    gaps that hold most of the idle show), stacked by cause, one panel per run on one x
    scale; the sums are the timelines' ``histogram`` (``idle_ns``). ``fmt``: "png" (bytes) or
    "svg" (text)."""
    runs = [(report["path"], report["timeline"]["runs"][0]["histogram"])]
    if report.get("base_timeline"):
        runs.append((report["base"], report["base_timeline"]["runs"][0]["histogram"]))
    empty: dict[str, Any] = {"edges_ns": [], "log": False, "counts": {}, "idle_ns": {}}
    counted = [(p, h or empty) for p, h in runs]
    ratios = [3 if h["counts"] else 1 for _, h in counted]
    fig = _figure(1.2 + 0.8 * sum(ratios))
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False, height_ratios=ratios)[:, 0]
    seen: set[str] = set()
    log = any(h["log"] for _, h in counted)
    per, unit = unit_of(max((e for _, h in counted for e in h["edges_ns"]), default=0))
    for ax, (path, h) in zip(axes, counted, strict=True):
        seen |= _histogram_panel(ax, path, h, per)
    if log:
        axes[-1].set_xscale("log")
    if not seen:
        axes[-1].set_xticks([])
    axes[-1].set_xlabel(f"gap duration ({unit})", fontsize=9)
    if seen:
        fig.legend(
            handles=[_patch(CAUSE_COLOURS[c], c) for c in CAUSES if c in seen],
            loc="outside lower center",
            ncols=len(seen),
            fontsize=8,
            frameon=False,
        )
    return _save(fig, fmt)


def _histogram_panel(ax: Axes, path: str, h: dict[str, Any], per: int) -> set[str]:
    """Draw one run's histogram ``h`` (edges, idle per bin of each cause; x in units of
    ``per`` ns) on ``ax``; return its causes."""
    n = sum(sum(c) for c in h["counts"].values())
    idle = h.get("idle_ns") or {}
    total = sum(sum(c) for c in idle.values())
    ax.set_title(
        f"{_text(path)}: {duration(total)} idle in {n:,} device gaps", fontsize=10, loc="left"
    )
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if not h["counts"]:
        ax.text(
            0.5,
            0.5,
            "no gaps: the device was never idle between executions",
            ha="center",
            va="center",
            transform=ax.transAxes,
            fontsize=10,
            color="#555555",
        )
        ax.set_yticks([])
        return set()
    edges = [e / per for e in h["edges_ns"]]
    mids = [((a * b) ** 0.5 if h["log"] else (a + b) / 2) for a, b in pairwise(edges)]
    present = [c for c in CAUSES if c in idle]
    tallest = max(map(sum, zip(*(idle[c] for c in present), strict=True)), default=0)
    y_per, y_unit = unit_of(tallest)
    ax.hist(
        [mids] * len(present),
        bins=edges,
        weights=[[v / y_per for v in idle[c]] for c in present],
        stacked=True,
        color=[CAUSE_COLOURS[c] for c in present],
        edgecolor="white",
        linewidth=0.5,
    )
    ax.set_ylabel(f"idle in these gaps ({y_unit})", fontsize=9)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    return set(present)


def figures(report: dict[str, Any], fmt: str = "png") -> dict[str, bytes | str]:
    """Return the plots of a report, by name: timeline, base-timeline (with a base),
    histogram, each in ``fmt`` ("png" bytes or "svg" text).

    ``report``: each part of the report as its JSON says it (``questions.report.files.shown``).
    """
    shown = [("timeline", report["timeline"])]
    if report.get("base_timeline"):
        shown.append(("base-timeline", report["base_timeline"]))
    span = max(extent_ns(t) for _, t in shown) or None
    out = {name: timeline(t, span_ns=span, fmt=fmt) for name, t in shown}
    out["histogram"] = histogram(report, fmt=fmt)
    return out
