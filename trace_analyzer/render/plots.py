"""Plots for ``traceana report``: a timeline of the hardware lanes and a histogram of gaps.

Each function takes result dicts (the JSON output's shape: ``gaps_result``, the report's
``timeline``) and returns PNG bytes (or SVG text); none reads or writes a file. matplotlib
is the optional extra ``traceana[report]``, imported when a plot is drawn, never at
``import trace_analyzer`` (plotting.py: the figures, their bytes, the colours).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from trace_analyzer.analyses.gaps import CAUSES
from trace_analyzer.render.plotting import (
    BUSY_COLOUR,
    CAUSE_COLOURS,
    DPI,
    OP_COLOUR,
    OP_EDGE,
    OUTSIDE_COLOUR,
    WIDTH_IN,
)
from trace_analyzer.render.plotting import figure as _figure
from trace_analyzer.render.plotting import message as _message
from trace_analyzer.render.plotting import patch as _patch
from trace_analyzer.render.plotting import require as require  # the CLI's check before drawing
from trace_analyzer.render.plotting import save as _save
from trace_analyzer.render.plotting import ticks as _ticks

if TYPE_CHECKING:  # matplotlib and numpy are imported only to draw
    from matplotlib.axes import Axes
    from numpy.typing import NDArray

MAX_OP_ROWS = 6  # nesting deeper than this is left out of the timeline (the JSON has it)
MAX_LANES = 48


def _us(ns: int) -> float:
    return ns / 1000


def short_names(names: list[str]) -> list[str]:
    """Return the lane ``names`` without the path components all of them share (the last two
    kept)."""
    parts = [n.split("/") for n in names]
    keep = min((len(p) for p in parts), default=0)
    common = 0
    while common < keep - 2 and len({tuple(p[: common + 1]) for p in parts}) == 1:
        common += 1
    return ["/".join(p[common:]) for p in parts]


def busy_blocks(
    lane: dict[str, Any], lane_gaps: list[dict[str, Any]], window: dict[str, Any]
) -> list[tuple[int, int]]:
    """Return a lane's busy intervals (ns): its span in the ``window`` minus its gaps.

    ``lane``: a row of a gaps result's ``lanes``; ``lane_gaps``: that lane's gaps.

    Exact when the gaps are all of them (no --min-gap): busy + gaps + leading + trailing is
    the window (docs/gaps.md).
    """
    if not lane["executions"]:
        return []
    t, end = window["start_ns"] + lane["leading_ns"], window["end_ns"] - lane["trailing_ns"]
    blocks = []
    for g in sorted(lane_gaps, key=lambda g: g["start_ns"]):
        blocks.append((t, g["start_ns"]))
        t = g["end_ns"]
    blocks.append((t, end))
    return blocks


def op_rows(ops: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Return the framework ``ops`` packed into rows: an op nested in another goes one row
    down."""
    rows: list[list[dict[str, Any]]] = []
    ends: list[int] = []
    for op in sorted(ops, key=lambda o: (o["start_ns"], -o["end_ns"])):
        # the first row free at the op's start, else a new one
        i = next((k for k, e in enumerate(ends) if op["start_ns"] >= e), len(ends))
        if i == len(ends):
            ends.append(0)
            rows.append([])
        ends[i] = op["end_ns"]
        rows[i].append(op)
    return rows


def extent_ns(gaps: dict[str, Any], timeline: dict[str, Any]) -> int:
    """Return the time a timeline spans: the window of ``gaps`` (a gaps result), widened to
    the framework ops of ``timeline`` (a timeline result) shown; 0 without a window."""
    run, t = gaps["runs"][0], timeline["runs"][0]
    if run["window"] is None:
        return 0
    end: int = run["window"]["end_ns"]
    start: int = min(run["window"]["start_ns"], t["start_ns"])
    return end - start


def timeline(
    gaps: dict[str, Any], timeline: dict[str, Any], *, span_ns: int | None = None, fmt: str = "png"
) -> bytes | str:
    """Return the timeline of a one-run report: framework ops above the hardware lanes, busy
    blocks, gaps coloured by cause; x in µs from the window start.

    ``gaps`` is a ``gaps_result`` without --min-gap, ``timeline`` the report's framework ops;
    ``span_ns`` sets the width of the x axis, so that two timelines share one scale. ``fmt``:
    "png" (bytes) or "svg" (text).
    """
    if gaps.get("min_gap_ns", 0):
        raise ValueError("the timeline needs every gap: a gaps result without --min-gap")
    run, t = gaps["runs"][0], timeline["runs"][0]
    w = run["window"]
    if w is None or not run["lanes"]:
        return _message(f"{run['root']}: nothing ran on hardware, no timeline to draw", fmt)
    lanes = sorted(run["lanes"], key=lambda lane: _natural(lane["lane"]))[:MAX_LANES]
    rows = op_rows(t["framework_ops"])[:MAX_OP_ROWS]
    n = len(rows) + len(lanes)
    fig = _figure(1.9 + 0.36 * n + (0.2 if rows else 0))
    ax = fig.add_subplot()
    origin = w["start_ns"]
    left = _us(min(t["start_ns"], origin) - origin)
    right = left + _us(span_ns or extent_ns(gaps, timeline))
    ax.set_xlim(left, right)
    labels = _draw_ops(ax, rows, origin, right, WIDTH_IN * DPI * 0.82 / (right - left))
    base = len(rows) + (0.4 if rows else 0)
    causes_seen = _draw_lanes(ax, lanes, run["gaps"], w, base)
    labels += short_names([lane["lane"] for lane in lanes])
    ax.set_yticks([*range(len(rows)), *(base + i for i in range(len(lanes)))], labels, fontsize=9)
    ax.set_ylim(base + len(lanes) - 0.4, -0.6)
    end = _draw_time_axis(ax, w, left, right)
    more = len(run["lanes"]) - len(lanes)
    ax.set_title(
        f"{run['root']}" + (f" (first {len(lanes)} of {len(run['lanes'])} lanes)" if more else ""),
        fontsize=10,
        loc="left",
    )
    handles = [_patch(BUSY_COLOUR, "busy")]
    handles += [_patch(CAUSE_COLOURS[c], f"gap: {c}") for c in CAUSES if c in causes_seen]
    if rows:
        handles.append(_patch(OP_COLOUR, "framework op (host)", OP_EDGE))
    if left < 0 or end < right:
        handles.append(_patch(OUTSIDE_COLOUR, "outside the window", "#bbbbbb"))
    fig.legend(
        handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False
    )
    return _save(fig, fmt)


def _draw_ops(
    ax: Axes, rows: list[list[dict[str, Any]]], origin: int, right: float, px_per_us: float
) -> list[str]:
    """Draw the framework ops, one bar row per nesting level; return their y labels."""
    labels = []
    for y, row in enumerate(rows):
        spans = [(_us(o["start_ns"] - origin), _us(o["end_ns"] - o["start_ns"])) for o in row]
        ax.broken_barh(
            spans, (y - 0.4, 0.8), facecolors=OP_COLOUR, edgecolors=OP_EDGE, linewidth=0.6
        )
        _label_ops(ax, y, spans, row, right, px_per_us)
        labels.append("framework ops" if y == 0 else "")
    return labels


def _draw_lanes(
    ax: Axes,
    lanes: list[dict[str, Any]],
    gaps: list[dict[str, Any]],
    window: dict[str, Any],
    base: float,
) -> set[str]:
    """Draw each hardware lane from y = ``base`` down: its gaps by cause, its busy blocks on
    top; return the causes drawn."""
    origin = window["start_ns"]
    by_lane: dict[str, list[dict[str, Any]]] = {}
    for g in gaps:
        by_lane.setdefault(g["lane"], []).append(g)
    causes_seen = set()
    for i, lane in enumerate(lanes):
        y = base + i
        for cause in CAUSES:
            mine = [g for g in by_lane.get(lane["lane"], []) if g["cause"] == cause]
            if mine:
                causes_seen.add(cause)
                # a thin edge keeps a gap narrower than a pixel visible
                ax.broken_barh(
                    [(_us(g["start_ns"] - origin), _us(g["duration_ns"])) for g in mine],
                    (y - 0.35, 0.7),
                    facecolors=CAUSE_COLOURS[cause],
                    edgecolors=CAUSE_COLOURS[cause],
                    linewidth=0.6,
                )
        # busy on top: an execution shorter than a pixel still shows, as a hairline
        busy = busy_blocks(lane, by_lane.get(lane["lane"], []), window)
        ax.broken_barh(
            [(_us(s - origin), _us(e - s)) for s, e in busy],
            (y - 0.35, 0.7),
            facecolors=BUSY_COLOUR,
            edgecolors=BUSY_COLOUR,
            linewidth=0.6,
        )
    return causes_seen


def _draw_time_axis(ax: Axes, window: dict[str, Any], left: float, right: float) -> float:
    """Grey out what lies outside the window, then label and style the axes (x in µs, or ms
    for long windows); return the window's end on the x axis."""
    if left < 0:  # framework ops before the window: grey outside it
        ax.axvspan(left, 0, color=OUTSIDE_COLOUR, zorder=0)
        ax.axvline(0, color="#555555", linestyle="--", linewidth=0.8)
    end = _us(window["duration_ns"])
    if end < right:
        ax.axvspan(end, right, color=OUTSIDE_COLOUR, zorder=0)
        ax.axvline(end, color="#555555", linestyle="--", linewidth=0.8)
    ms = right - left >= 20_000  # long windows: ticks in ms, not 1e6 µs
    ax.xaxis.set_major_formatter(_ticks(1000 if ms else 1))
    ax.set_xlabel(
        f"{'ms' if ms else 'µs'} from the window start ({window['origin']}: {end:,} µs)",
        fontsize=9,
    )
    ax.tick_params(axis="y", length=0)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return end


def _natural(name: str) -> list[int | str]:
    """Return a sort key that puts stream:7 before stream:23."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _label_ops(
    ax: Axes,
    y: int,
    spans: list[tuple[float, float]],
    row: list[dict[str, Any]],
    right: float,
    px_per_us: float,
) -> None:
    """Name each op inside its bar, else just right of it, where the name fits."""
    starts = [x for x, _ in spans[1:]] + [right]
    for (x, width), nxt, o in zip(spans, starts, row, strict=True):
        need = 6.7 * len(o["name"]) + 8  # px at fontsize 8
        if width * px_per_us > need:
            ax.text(
                x + width / 2,
                y,
                o["name"],
                ha="center",
                va="center",
                fontsize=8,
                color="#1b1b1b",
                clip_on=True,
            )
        elif (nxt - x - width) * px_per_us > need + 4:
            ax.text(
                x + width + 3 / px_per_us,
                y,
                o["name"],
                ha="left",
                va="center",
                fontsize=8,
                color="#1b1b1b",
                clip_on=True,
            )


def _bins(durations: list[float]) -> tuple[NDArray[Any], bool]:
    """Return the histogram's bin edges and whether they are logarithmic."""
    import numpy as np

    lo, hi = min(durations), max(durations)
    if lo > 0 and hi / lo > 100:
        return np.geomspace(lo, hi, 25), True
    edges = np.histogram_bin_edges(durations, bins="auto", range=(0, hi if hi > 0 else 1))
    if len(edges) < 11:
        edges = np.linspace(0, hi if hi > 0 else 1, 11)
    return edges[:41] if len(edges) > 41 else edges, False


def histogram(results: list[dict[str, Any]], *, fmt: str = "png") -> bytes | str:
    """Return a histogram of the device gap durations (µs) of each gaps result of ``results``,
    stacked by cause; one panel per result, on one x scale. ``fmt``: "png" (bytes) or "svg"
    (text)."""
    runs = [(r["path"], r["runs"][0]) for r in results]
    every = [g["duration_ns"] / 1000 for _, run in runs for g in run["device_gaps"]]
    ratios = [3 if run["device_gaps"] else 1 for _, run in runs]
    fig = _figure(1.2 + 0.8 * sum(ratios))
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False, height_ratios=ratios)[:, 0]
    bins, log = _bins(every) if every else (None, False)
    seen = set()
    for ax, (path, run) in zip(axes, runs, strict=True):
        gaps = run["device_gaps"]
        ax.set_title(f"{path}: {len(gaps)} device gaps", fontsize=10, loc="left")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if not gaps:
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
            continue
        present = [c for c in CAUSES if any(g["cause"] == c for g in gaps)]
        seen.update(present)
        ax.hist(
            [[g["duration_ns"] / 1000 for g in gaps if g["cause"] == c] for c in present],
            bins=bins,
            stacked=True,
            color=[CAUSE_COLOURS[c] for c in present],
            edgecolor="white",
            linewidth=0.5,
        )
        from matplotlib.ticker import MaxNLocator

        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("gaps", fontsize=9)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
    if log:
        axes[-1].set_xscale("log")
    if not every:
        axes[-1].set_xticks([])
    axes[-1].set_xlabel("gap duration (µs)", fontsize=9)
    if seen:
        fig.legend(
            handles=[_patch(CAUSE_COLOURS[c], c) for c in CAUSES if c in seen],
            loc="outside lower center",
            ncols=len(seen),
            fontsize=8,
            frameon=False,
        )
    return _save(fig, fmt)


def as_png(image: bytes | str) -> bytes:
    """Return ``image``, a plot drawn with ``fmt="png"``, as the bytes it is (TypeError for
    SVG text)."""
    if not isinstance(image, bytes):
        raise TypeError("not a PNG: an SVG plot is text")
    return image


def figures(report: dict[str, Any], fmt: str = "png") -> dict[str, bytes | str]:
    """Return the plots of a report, by name: timeline, base-timeline (with a base),
    histogram, each in ``fmt`` ("png" bytes or "svg" text).

    ``report``: each part of the report as its JSON says it (``render.report.shown``).
    """
    shown = [("timeline", report["gaps"], report["timeline"])]
    if report.get("base_gaps"):
        shown.append(("base-timeline", report["base_gaps"], report["base_timeline"]))
    span = max(extent_ns(g, t) for _, g, t in shown) or None
    out = {name: timeline(g, t, span_ns=span, fmt=fmt) for name, g, t in shown}
    out["histogram"] = histogram([g for _, g, _ in shown], fmt=fmt)
    return out


def trend(result: dict[str, Any]) -> bytes:
    """Return the PNG of a ``traceana trend`` result (its JSON shape: ``by``, and the rows
    of ``runs[0]``): idle % (top) and device time (bottom) over capture time, one line per
    group."""
    from datetime import datetime

    fig = _figure(6.0)
    top, bottom = fig.subplots(2, 1, sharex=True)
    rows = [r for r in result["runs"][0]["rows"] if r["time"]]
    for name in sorted({r["group"] for r in rows}):
        pts = [r for r in rows if r["group"] == name]
        x = [datetime.fromisoformat(r["time"]) for r in pts]
        top.plot(x, [r["idle_pct"] for r in pts], marker="o", label=name)
        bottom.plot(x, [r["device_time_ms"] for r in pts], marker="o", label=name)
    top.set_ylabel("idle %")
    bottom.set_ylabel("device time (ms)")
    bottom.set_xlabel("capture time")
    top.set_title(f"trend by {result['by']}")
    if rows:
        top.legend(loc="best", fontsize="small")
    png = _save(fig, "png")
    assert isinstance(png, bytes)
    return png
