"""Plots for ``traceana report``: a timeline of the hardware lanes and a histogram of gaps.

Each function takes result dicts (the JSON output's shape: ``gaps_result``, the report's
``timeline``) and returns PNG bytes (or SVG text); none reads or writes a file. matplotlib
is the optional extra ``traceana[report]``, imported when a plot is drawn, never at
``import trace_analyzer``. Figures are drawn on the non-interactive Agg canvas, without
pyplot, so no global backend is switched.
"""

from __future__ import annotations

import io
import re

from trace_analyzer.analyses.gaps import CAUSES
from trace_analyzer.errors import UsageError

INSTALL_HINT = "pip install 'traceana[report]'"
DPI = 100
WIDTH_IN = 12.0
# Okabe-Ito colours: told apart with the common colour-vision deficiencies.
CAUSE_COLOURS = {
    "host_dispatch": "#E69F00",
    "transfer": "#56B4E9",
    "sync": "#CC79A7",
    "runtime": "#D55E00",
    "uncorrelated": "#999999",
    "other": "#F0E442",
}
BUSY_COLOUR = "#1F3A5F"
OP_COLOUR, OP_EDGE = "#DCE3EE", "#7A8BA6"
OUTSIDE_COLOUR = "#F2F2F2"
MAX_OP_ROWS = 6  # nesting deeper than this is left out of the timeline (the JSON has it)
MAX_LANES = 48


def require():
    """Return the matplotlib module; a UsageError naming the extra when it is absent."""
    try:
        import matplotlib
    except ImportError as e:
        raise UsageError(
            f"traceana report draws its plots with matplotlib, which is not "
            f"installed: {INSTALL_HINT}"
        ) from e
    return matplotlib


def _figure(height_in: float):
    require()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, fmt: str) -> bytes | str:
    buf = io.BytesIO()
    metadata = {"Software": "traceana"} if fmt == "png" else {"Date": None}
    fig.savefig(buf, format=fmt, metadata=metadata)
    return buf.getvalue() if fmt == "png" else buf.getvalue().decode()


def _us(ns: int) -> float:
    return ns / 1000


def _patch(colour: str, label: str, edge: str | None = None):
    from matplotlib.patches import Patch

    return Patch(facecolor=colour, edgecolor=edge or colour, label=label)


def short_names(names: list[str]) -> list[str]:
    """Return the names without the path components all of them share (the last two kept)."""
    parts = [n.split("/") for n in names]
    keep = min((len(p) for p in parts), default=0)
    common = 0
    while common < keep - 2 and len({tuple(p[: common + 1]) for p in parts}) == 1:
        common += 1
    return ["/".join(p[common:]) for p in parts]


def busy_blocks(lane: dict, lane_gaps: list[dict], window: dict) -> list[tuple[int, int]]:
    """Return a lane's busy intervals (ns): its span in the window minus its gaps.

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


def op_rows(ops: list[dict]) -> list[list[dict]]:
    """Return the framework ops packed into rows: an op nested in another goes one row down."""
    rows: list[list[dict]] = []
    ends: list[int] = []
    for op in sorted(ops, key=lambda o: (o["start_ns"], -o["end_ns"])):
        for i, e in enumerate(ends):
            if op["start_ns"] >= e:
                break
        else:
            i = len(ends)
            ends.append(0)
            rows.append([])
        ends[i] = op["end_ns"]
        rows[i].append(op)
    return rows


def extent_ns(gaps: dict, timeline: dict) -> int:
    """Return the time a timeline spans: its window, widened to the framework ops shown."""
    run, t = gaps["runs"][0], timeline["runs"][0]
    if run["window"] is None:
        return 0
    return run["window"]["end_ns"] - min(run["window"]["start_ns"], t["start_ns"])


def timeline(gaps: dict, timeline: dict, *, span_ns: int | None = None, fmt: str = "png"):
    """Return the timeline of a one-run report: framework ops above the hardware lanes, busy
    blocks, gaps coloured by cause; x in µs from the window start.

    ``gaps`` is a ``gaps_result`` without --min-gap, ``timeline`` the report's framework ops;
    ``span_ns`` sets the width of the x axis, so that two timelines share one scale.
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
    px_per_us = WIDTH_IN * DPI * 0.82 / (right - left)

    labels = []
    for y, row in enumerate(rows):
        spans = [(_us(o["start_ns"] - origin), _us(o["end_ns"] - o["start_ns"])) for o in row]
        ax.broken_barh(
            spans, (y - 0.4, 0.8), facecolors=OP_COLOUR, edgecolors=OP_EDGE, linewidth=0.6
        )
        _label_ops(ax, y, spans, row, right, px_per_us)
        labels.append("framework ops" if y == 0 else "")
    base = len(rows) + (0.4 if rows else 0)
    by_lane: dict[str, list[dict]] = {}
    for g in run["gaps"]:
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
        busy = busy_blocks(lane, by_lane.get(lane["lane"], []), w)
        ax.broken_barh(
            [(_us(s - origin), _us(e - s)) for s, e in busy],
            (y - 0.35, 0.7),
            facecolors=BUSY_COLOUR,
            edgecolors=BUSY_COLOUR,
            linewidth=0.6,
        )
    labels += short_names([lane["lane"] for lane in lanes])
    ax.set_yticks([*range(len(rows)), *(base + i for i in range(len(lanes)))], labels, fontsize=9)
    ax.set_ylim(base + len(lanes) - 0.4, -0.6)
    if left < 0:  # framework ops before the window: grey outside it
        ax.axvspan(left, 0, color=OUTSIDE_COLOUR, zorder=0)
        ax.axvline(0, color="#555555", linestyle="--", linewidth=0.8)
    end = _us(w["duration_ns"])
    if end < right:
        ax.axvspan(end, right, color=OUTSIDE_COLOUR, zorder=0)
        ax.axvline(end, color="#555555", linestyle="--", linewidth=0.8)
    ms = right - left >= 20_000  # long windows: ticks in ms, not 1e6 µs
    ax.xaxis.set_major_formatter(_ticks(1000 if ms else 1))
    ax.set_xlabel(
        f"{'ms' if ms else 'µs'} from the window start ({w['origin']}: {end:,} µs)", fontsize=9
    )
    ax.tick_params(axis="y", length=0)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
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


def _natural(name: str) -> list:
    """Return a sort key that puts stream:7 before stream:23."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _ticks(per: int):
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda x, _: f"{x / per:,.10g}")


def _label_ops(ax, y, spans, row, right, px_per_us) -> None:
    """Name each op inside its bar, else just right of it, where the name fits."""
    starts = [x for x, _ in spans[1:]] + [right]
    for (x, width), nxt, o in zip(spans, starts, row):
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


def _bins(durations: list[float]):
    import numpy as np

    lo, hi = min(durations), max(durations)
    if lo > 0 and hi / lo > 100:
        return np.geomspace(lo, hi, 25), True
    edges = np.histogram_bin_edges(durations, bins="auto", range=(0, hi if hi > 0 else 1))
    if len(edges) < 11:
        edges = np.linspace(0, hi if hi > 0 else 1, 11)
    return edges[:41] if len(edges) > 41 else edges, False


def histogram(results: list[dict], *, fmt: str = "png"):
    """Return a histogram of the device gap durations (µs) of each gaps result, stacked by
    cause; one panel per result, on one x scale."""
    runs = [(r["path"], r["runs"][0]) for r in results]
    every = [g["duration_ns"] / 1000 for _, run in runs for g in run["device_gaps"]]
    ratios = [3 if run["device_gaps"] else 1 for _, run in runs]
    fig = _figure(1.2 + 0.8 * sum(ratios))
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False, height_ratios=ratios)[:, 0]
    bins, log = _bins(every) if every else (None, False)
    seen = set()
    for ax, (path, run) in zip(axes, runs):
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


def _message(text: str, fmt: str):
    fig = _figure(1.2)
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=10, color="#555555")
    return _save(fig, fmt)


def figures(report: dict, fmt: str = "png") -> dict[str, bytes | str]:
    """Return the plots of a report (``trace_analyzer.render.report.build``), by name: timeline,
    base-timeline (with a base), histogram."""
    shown = [("timeline", report["gaps"], report["timeline"])]
    if report.get("base_gaps"):
        shown.append(("base-timeline", report["base_gaps"], report["base_timeline"]))
    span = max(extent_ns(g, t) for _, g, t in shown) or None
    out = {name: timeline(g, t, span_ns=span, fmt=fmt) for name, g, t in shown}
    out["histogram"] = histogram([g for _, g, _ in shown], fmt=fmt)
    return out
