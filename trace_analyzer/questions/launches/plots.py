"""The plot of the Launches section of the report page (html.py), drawn from ``traceana
launches``' JSON as the page embeds it, with matplotlib (render/plotting.py): each lane's
queue length over time (launched, not finished)."""

from __future__ import annotations

from typing import Any

from trace_analyzer.render import plotting


def launches(run: dict[str, Any]) -> bytes:
    """Return the PNG of a launches run (``traceana launches``' JSON ``runs[i]``): each lane's
    queue length over time (launched, not finished), one panel per lane of its ``queue``."""
    lanes: dict[str, list[dict[str, Any]]] = {}
    for p in run["queue"]:
        lanes.setdefault(p["lane"], []).append(p)
    if not lanes:
        message = "no launches linked to device work: no queue"
        return plotting.as_png(plotting.message(message, "png"))
    fig = plotting.figure(0.6 + 1.1 * len(lanes))
    axes = fig.subplots(len(lanes), 1, sharex=True, squeeze=False)[:, 0]
    origin = min(p["ts_ns"] for pts in lanes.values() for p in pts)
    names = plotting.short_names(list(lanes))
    for ax, pts, name in zip(axes, lanes.values(), names, strict=True):
        ax.step([(p["ts_ns"] - origin) / 1000 for p in pts], [p["length"] for p in pts],
                where="post", color="#1F3A5F", linewidth=0.9)  # fmt: skip
        ax.set_title(plotting.text(name), fontsize=8, loc="left")
        ax.set_ylabel("queued", fontsize=8)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[-1].set_xlabel("time after the first launch (µs)", fontsize=9)
    return plotting.as_png(plotting.save(fig, "png"))
