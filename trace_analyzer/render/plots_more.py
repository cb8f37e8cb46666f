"""The report's plots of the ranks, kernels and launches analyses (html_more.py), drawn
from their JSON as the page embeds it, with matplotlib (plotting.py) like the other plots.

- ``ranks``: per rank, device and step, the window as one bar split into compute, exposed
  communication, memory and idle (%, docs/distributed.md), in that order.
- ``kernels``: the top kernels (or NEFFs) by total device time, coloured by kind.
- ``launches``: each lane's queue length over time (launched, not finished).
"""

from __future__ import annotations

from typing import Any

from trace_analyzer.render import plotting
from trace_analyzer.render.plots import _text, as_png, short_names

# The parts of a step's window (ranks), and the kinds of work (kernels), in their colours.
PARTS = (
    ("compute_pct", "compute", "#1F3A5F"),
    ("exposed_communication_pct", "exposed communication", "#0072B2"),
    ("memory_pct", "memory", "#56B4E9"),
    ("idle_pct", "idle", "#DDDDDD"),
)
KIND_COLOURS = {"compute": "#1F3A5F", "communication": "#0072B2", "memory": "#56B4E9"}
MAX_BARS = 40  # rows a bar plot draws: the first ones, as the table lists them


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
