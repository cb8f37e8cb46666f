"""The report's plots of the ranks, kernels and launches analyses (html_more.py), drawn
from their JSON as the page embeds it, with matplotlib (plotting.py) like the other plots.

- ``ranks``: per rank, device and step, the window as one bar split into compute, exposed
  communication, memory and idle (%, docs/distributed.md), in that order.
- ``kernels``: the top kernels (or NEFFs) by total device time, coloured by kind.
- ``launches``: each lane's queue length over time (launched, not finished).
- ``roofline``: each NEFF of the device profiles (and its top HLO ops) on the device's
  roofline, log-log, coloured by its verdict (docs/device.md).
"""

from __future__ import annotations

from typing import Any

from trace_analyzer.render import plotting
from trace_analyzer.render.plotting import as_png, short_names
from trace_analyzer.render.plotting import text as _text

# The parts of a step's window (ranks), and the kinds of work (kernels), in their colours.
PARTS = (
    ("compute_pct", "compute", "#1F3A5F"),
    ("exposed_communication_pct", "exposed communication", "#0072B2"),
    ("memory_pct", "memory", "#56B4E9"),
    ("idle_pct", "idle", "#DDDDDD"),
)
KIND_COLOURS = {"compute": "#1F3A5F", "communication": "#0072B2", "memory": "#56B4E9"}
MAX_BARS = 40  # rows a bar plot draws: the first ones, as the table lists them
# The roofline's verdicts in their colours (Okabe-Ito), a point without one grey; the roof.
VERDICT_COLOURS = {"compute-bound": "#0072B2", "memory-bound": "#D55E00"}
NO_VERDICT, ROOF_COLOUR = "#999999", "#333333"


def _cut(name: str, most: int = 60) -> str:
    """A kernel's name as a plot's label: its first ``most`` characters (a C++ kernel's
    name can be a thousand)."""
    return name if len(name) <= most else name[: most - 1] + "…"


def _row_label(r: dict[str, Any]) -> str:
    who = f"rank {r['rank']}" if r.get("rank") is not None else f"pid {r['pid']}"
    step = f" step {r['step']}" if r.get("step") is not None else ""
    return _text(f"{who}{step}")


def ranks(run: dict[str, Any]) -> bytes:
    """Return the PNG of a ranks run (``traceana ranks``' JSON ``runs[i]``): one bar per
    rank, device and step, its window split into the breakdown's parts (% of the window)."""
    rows = run["steps"][:MAX_BARS]
    if not rows:
        return as_png(plotting.message("no device work: nothing to break down", "png"))
    fig = plotting.figure(1.0 + 0.28 * len(rows))
    ax = fig.subplots()
    y = list(range(len(rows)))[::-1]
    left = [0.0] * len(rows)
    for key, label, colour in PARTS:
        width = [float(r[key] or 0) for r in rows]
        ax.barh(y, width, left=left, color=colour, label=label, height=0.7)
        left = [a + b for a, b in zip(left, width, strict=True)]
    ax.set_yticks(y, [_row_label(r) for r in rows], fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the step's window", fontsize=9)
    fig.legend(loc="outside lower center", ncols=len(PARTS), fontsize=8, frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return as_png(plotting.save(fig, "png"))


def kernels(run: dict[str, Any], most: int = 15) -> bytes:
    """Return the PNG of a kernels run (``traceana kernels``' JSON ``runs[i]``): its ``most``
    kernels (or NEFFs) by total device time, over all ranks, each bar in its kind's colour."""
    rows = sorted(run["kernels"], key=lambda r: -r["total_ns"])[:most]
    if not rows:
        return as_png(plotting.message("no device work: no kernels", "png"))
    names = [_cut(r["neff"] or r["name"]) for r in rows]
    ranked = len({r["rank"] for r in run["kernels"]}) > 1
    labels = [
        _text(f"rank {r['rank']}: {n}" if ranked else n) for r, n in zip(rows, names, strict=True)
    ]
    fig = plotting.figure(1.0 + 0.3 * len(rows))
    ax = fig.subplots()
    y = list(range(len(rows)))[::-1]
    ax.barh(y, [r["total_ns"] / 1000 for r in rows], height=0.7,
            color=[KIND_COLOURS.get(r["kind"], "#999999") for r in rows])  # fmt: skip
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel("total device time (µs)", fontsize=9)
    kinds = [k for k in KIND_COLOURS if any(r["kind"] == k for r in rows)]
    fig.legend(handles=[plotting.patch(KIND_COLOURS[k], k) for k in kinds],
               loc="outside lower center", ncols=len(kinds), fontsize=8, frameon=False)  # fmt: skip
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return as_png(plotting.save(fig, "png"))


def launches(run: dict[str, Any]) -> bytes:
    """Return the PNG of a launches run (``traceana launches``' JSON ``runs[i]``): each lane's
    queue length over time (launched, not finished), one panel per lane of its ``queue``."""
    lanes: dict[str, list[dict[str, Any]]] = {}
    for p in run["queue"]:
        lanes.setdefault(p["lane"], []).append(p)
    if not lanes:
        return as_png(plotting.message("no launches linked to device work: no queue", "png"))
    fig = plotting.figure(0.6 + 1.1 * len(lanes))
    axes = fig.subplots(len(lanes), 1, sharex=True, squeeze=False)[:, 0]
    origin = min(p["ts_ns"] for pts in lanes.values() for p in pts)
    names = short_names(list(lanes))
    for ax, pts, name in zip(axes, lanes.values(), names, strict=True):
        ax.step([(p["ts_ns"] - origin) / 1000 for p in pts], [p["length"] for p in pts],
                where="post", color="#1F3A5F", linewidth=0.9)  # fmt: skip
        ax.set_title(_text(name), fontsize=8, loc="left")
        ax.set_ylabel("queued", fontsize=8)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[-1].set_xlabel("time after the first launch (µs)", fontsize=9)
    return as_png(plotting.save(fig, "png"))


def short_neff(name: str) -> str:
    """A NEFF's name as the roofline labels it: no folder, no ``.neff``, 24 characters."""
    return _cut(name.rsplit("/", 1)[-1].removesuffix(".neff"), 24)


def _drawn(r: dict[str, Any]) -> bool:
    """Whether a roofline row can be drawn on log-log axes (a finite, positive place)."""
    return bool(r["intensity"]) and bool(r["achieved_flops"])


def roofline(run: dict[str, Any]) -> bytes:
    """Return the PNG of an engines run (``traceana engines``' JSON ``runs[i]``): log-log,
    arithmetic intensity (FLOP/byte) against achieved FLOP/s; each profile's roof,
    min(peak, intensity × HBM bandwidth), with its ridge point; each NEFF a dot named by its
    short name and each top HLO op a small square, coloured by its verdict."""
    from matplotlib.lines import Line2D

    points = [r for r in run["roofline"] if _drawn(r)]
    roofs = sorted({(p["peak_flops"], p["hbm_bw"]) for p in run["profiles"]
                    if p["peak_flops"] and p["hbm_bw"]})  # fmt: skip
    if not points and not roofs:
        return as_png(plotting.message("nothing to place on the roofline", "png"))
    xs = [r["intensity"] for r in points] + [f / b for f, b in roofs]
    ys = [r["achieved_flops"] for r in points] + [f for f, _ in roofs]
    lo, hi = min(xs) / 10, max(xs) * 10
    fig = plotting.figure(5.0)
    ax = fig.subplots()
    ax.set_xscale("log")
    ax.set_yscale("log")
    handles = _draw_roofs(ax, roofs, lo, hi)
    for level, size, marker in (("neff", 90, "o"), ("hlo", 30, "s")):
        mine = [r for r in points if r["level"] == level]
        ax.scatter([r["intensity"] for r in mine], [r["achieved_flops"] for r in mine], s=size,
                   marker=marker, zorder=3, linewidths=0,
                   c=[VERDICT_COLOURS.get(r["verdict"], NO_VERDICT) for r in mine])  # fmt: skip
    ax.set_xlim(lo, hi)
    ax.set_ylim(min(ys) / 5, max(ys) * 5)
    _label_neffs(ax, [r for r in points if r["level"] == "neff"])
    ax.set_xlabel("arithmetic intensity (FLOP/byte)", fontsize=9)
    ax.set_ylabel("FLOP/s (model FLOPs / time)", fontsize=9)
    ax.grid(color="#dddddd", linewidth=0.6, which="major")
    ax.set_axisbelow(True)
    verdicts = [v for v in VERDICT_COLOURS if any(r["verdict"] == v for r in points)]
    handles += [plotting.patch(VERDICT_COLOURS[v], v) for v in verdicts]
    shapes = (("o", "NEFF", 8), ("s", "top HLO op", 5))
    handles += [Line2D([], [], color="#777777", marker=m, linestyle="", label=label,
                       markersize=size) for m, label, size in shapes]  # fmt: skip
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8,
               frameon=False)  # fmt: skip
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return as_png(plotting.save(fig, "png"))


def _draw_roofs(ax: Any, roofs: list[tuple[float, float]], lo: float, hi: float) -> list[Any]:
    """Draw each roof (peak FLOP/s, HBM bytes/s) from ``lo`` to ``hi`` FLOP/byte with its
    ridge point marked and named; return the legend's entries."""
    from trace_analyzer.numbers import number
    from trace_analyzer.questions.engines.text import _si

    handles = []
    for peak, bw in roofs:
        ridge = peak / bw
        label = f"roof: peak {_si(peak, 'FLOP/s')}, HBM {_si(bw, 'B/s')}"
        (line,) = ax.plot([lo, ridge, hi], [lo * bw, peak, peak], color=ROOF_COLOUR,
                          linewidth=2, label=label)  # fmt: skip
        ax.plot([ridge], [peak], marker="D", color=ROOF_COLOUR, markersize=7, zorder=4)
        ax.annotate(f"ridge {number(round(ridge, 2))} FLOP/byte", (ridge, peak), xytext=(8, -14),
                    textcoords="offset points", fontsize=8, color=ROOF_COLOUR)  # fmt: skip
        handles.append(line)
    return handles


def _label_neffs(ax: Any, neffs: list[dict[str, Any]]) -> None:
    """Name each NEFF's dot by its short name, right of it; the names of dots close together
    stacked one above the other (from the lowest), not drawn over each other."""
    import math

    low, high = ax.get_ylim()
    per_pt = math.log10(high / low) / 280  # decades per point: the axes are ~280 pt high
    placed: list[tuple[float, float]] = []  # (log x of the dot, log y of its name)
    for r in sorted(neffs, key=lambda r: (r["achieved_flops"], r["name"])):
        x, y = r["intensity"], r["achieved_flops"]
        lx, ly = math.log10(x), math.log10(y)
        at = max([ly] + [py + 11 * per_pt for px, py in placed if abs(px - lx) < 0.4])
        placed.append((lx, at))
        ax.annotate(_text(short_neff(r["name"])), (x, y), xytext=(8, 4 + (at - ly) / per_pt),
                    textcoords="offset points", fontsize=8)  # fmt: skip
