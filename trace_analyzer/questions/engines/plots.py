"""The roofline of the Engines section of the report page (html.py) and of its Markdown
(text_report.py), drawn from ``traceana engines``' JSON as the page embeds it, with
matplotlib (render/plotting.py): each NEFF of the device profiles (and its top HLO ops) on
the device's roofline, log-log, coloured by its verdict (docs/device.md)."""

from __future__ import annotations

from typing import Any

from trace_analyzer.numbers import number
from trace_analyzer.questions.engines.text import _si
from trace_analyzer.render import plotting

# The roofline's verdicts in their colours (Okabe-Ito), a point without one grey; the roof.
VERDICT_COLOURS = {"compute-bound": "#0072B2", "memory-bound": "#D55E00"}
NO_VERDICT, ROOF_COLOUR = "#999999", "#333333"


def short_neff(name: str) -> str:
    """A NEFF's name as the roofline labels it: no folder, no ``.neff``, 24 characters."""
    return plotting.cut(name.rsplit("/", 1)[-1].removesuffix(".neff"), 24)


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
        return plotting.as_png(plotting.message("nothing to place on the roofline", "png"))
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
    return plotting.as_png(plotting.save(fig, "png"))


def _draw_roofs(ax: Any, roofs: list[tuple[float, float]], lo: float, hi: float) -> list[Any]:
    """Draw each roof (peak FLOP/s, HBM bytes/s) from ``lo`` to ``hi`` FLOP/byte with its
    ridge point marked and named; return the legend's entries."""
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
        label = plotting.text(short_neff(r["name"]))
        ax.annotate(label, (x, y), xytext=(8, 4 + (at - ly) / per_pt),
                    textcoords="offset points", fontsize=8)  # fmt: skip
