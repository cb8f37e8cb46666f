"""The plot of the Ranks section of the report page (html.py), drawn from ``traceana ranks``'
JSON as the page embeds it, with matplotlib (render/plotting.py): per rank, device and step,
the window as one bar split into compute, exposed communication, memory and idle (% of the
window, docs/distributed.md), in that order."""

from __future__ import annotations

from typing import Any

from trace_analyzer.render import plotting

# The parts of a step's window, in their colours.
PARTS = (
    ("compute_pct", "compute", "#1F3A5F"),
    ("exposed_communication_pct", "exposed communication", "#0072B2"),
    ("memory_pct", "memory", "#56B4E9"),
    ("idle_pct", "idle", "#DDDDDD"),
)
MAX_BARS = 40  # rows the plot draws: the first ones, as the table lists them


def _row_label(r: dict[str, Any]) -> str:
    who = f"rank {r['rank']}" if r.get("rank") is not None else f"pid {r['pid']}"
    step = f" step {r['step']}" if r.get("step") is not None else ""
    return plotting.text(f"{who}{step}")


def ranks(run: dict[str, Any]) -> bytes:
    """Return the PNG of a ranks run (``traceana ranks``' JSON ``runs[i]``): one bar per
    rank, device and step, its window split into the breakdown's parts (% of the window)."""
    rows = run["steps"][:MAX_BARS]
    if not rows:
        return plotting.as_png(plotting.message("no device work: nothing to break down", "png"))
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
    return plotting.as_png(plotting.save(fig, "png"))


MAX_COLUMNS = 40  # collectives the heat map draws: the first ones, in order of start


def collectives_heat(run: dict[str, Any]) -> bytes | None:
    """Return the PNG of the collectives' heat map of a ranks run (docs/distributed.md,
    "Collectives matched across ranks"): where ranks sent to each other, the bandwidth of
    each pair (rank × rank, GB/s); else each rank's wait in each collective matched on two
    ranks or more (rank × collective, µs); None where there is neither."""
    links = [x for x in run.get("collective_links") or [] if x["bandwidth_gbps"] is not None]
    if links:
        ranks = sorted({x["src"] for x in links} | {x["dst"] for x in links})
        at = {r: i for i, r in enumerate(ranks)}
        cells = [[float("nan")] * len(ranks) for _ in ranks]
        for x in links:
            cells[at[x["src"]]][at[x["dst"]]] = float(x["bandwidth_gbps"])
        return _heat(cells, ranks, [f"rank {r}" for r in ranks], "to", "GB/s (sender: row)")
    shared = [c for c in run.get("collectives") or [] if c["ranks"] > 1][:MAX_COLUMNS]
    if not shared:
        return None
    ranks = sorted({w["rank"] for c in shared for w in c["waits"] if w["rank"] is not None})
    at = {r: i for i, r in enumerate(ranks)}
    cells = [[float("nan")] * len(shared) for _ in ranks]
    for j, c in enumerate(shared):
        for w in c["waits"]:
            if w["rank"] in at:
                cells[at[w["rank"]]][j] = w["wait_ns"] / 1000
    labels = [plotting.text(f"{c['kind'] or '?'} {c['seq'] if c['seq'] is not None else j}")
              for j, c in enumerate(shared)]  # fmt: skip
    return _heat(cells, ranks, labels, "collective", "wait, µs")


def _heat(cells: list[list[float]], ranks: list[int], columns: list[str], x: str,
          unit: str) -> bytes:  # fmt: skip
    """A heat map of ``cells`` (a row per rank of ``ranks``, a column per ``columns``)."""
    fig = plotting.figure(1.2 + 0.3 * len(ranks))
    ax = fig.subplots()
    image = ax.imshow(cells, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.set_yticks(range(len(ranks)), [f"rank {r}" for r in ranks], fontsize=8)
    ax.set_xticks(range(len(columns)), columns, fontsize=7, rotation=90)
    ax.set_xlabel(x, fontsize=9)
    fig.colorbar(image, ax=ax, label=unit)
    return plotting.as_png(plotting.save(fig, "png"))
