"""The plot of the Kernels section of the report page (html.py), drawn from ``traceana
kernels``' JSON as the page embeds it, with matplotlib (render/plotting.py): the top kernels
(or NEFFs) by total device time, coloured by kind."""

from __future__ import annotations

from typing import Any

from trace_analyzer.render import plotting

KIND_COLOURS = {"compute": "#1F3A5F", "communication": "#0072B2", "memory": "#56B4E9"}


def kernels(run: dict[str, Any], most: int = 15) -> bytes:
    """Return the PNG of a kernels run (``traceana kernels``' JSON ``runs[i]``): its ``most``
    kernels (or NEFFs) by total device time, over all ranks, each bar in its kind's colour."""
    rows = sorted(run["kernels"], key=lambda r: -r["total_ns"])[:most]
    if not rows:
        return plotting.as_png(plotting.message("no device work: no kernels", "png"))
    names = plotting.cut_names([r["neff"] or r["name"] for r in rows])
    ranked = len({r["rank"] for r in run["kernels"]}) > 1
    labels = [
        plotting.text(f"rank {r['rank']}: {n}" if ranked else n)
        for r, n in zip(rows, names, strict=True)
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
    return plotting.as_png(plotting.save(fig, "png"))
