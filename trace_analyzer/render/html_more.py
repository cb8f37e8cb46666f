"""The report page's sections of the ranks, kernels and launches analyses (html.py), each a
function of its result's JSON parsed back, with its plot (plots_more.py) when drawn.
"""

from __future__ import annotations

from typing import Any

from trace_analyzer.render.html_sections import _cell, _d, _n, _table, esc, img


def _who(r: dict[str, Any]) -> str:
    return _n(r["rank"]) if r.get("rank") is not None else _cell(esc(f"pid {r['pid']}"))


def ranks_section(run: dict[str, Any], png: bytes | None) -> str:
    """Return the ranks section of a ranks ``run`` (``traceana ranks``' JSON): per rank,
    device and step the window broken down, the stragglers, the clock offsets."""
    steps = [
        _who(r)
        + _cell(esc(r["device"]))
        + _n(r["step"])
        + "".join(_d(r[k]) for k in ("window_ns", "compute_ns", "communication_ns"))
        + _n(r["overlap_pct"])
        + "".join(_d(r[k]) for k in ("exposed_communication_ns", "memory_ns", "idle_ns"))
        for r in run["steps"]
    ]
    parts = [
        '<section id="ranks"><h2>Ranks</h2><p class="note">Per rank, device and step: the '
        "window (the step on its host, to the end of its last work) broken down into compute, "
        "exposed communication (collectives with no compute beside them), memory and idle, "
        "each instant counted once; overlap % is communication that ran beside compute "
        "(<code>traceana ranks</code>, docs/distributed.md).</p>",
        img(png, "each step's window broken down, per rank", "ranks") if png else "",
        _table(
            [
                "rank",
                "device",
                "step",
                "window",
                "compute",
                "communication",
                "overlap %",
                "exposed comm",
                "memory",
                "idle",
            ],
            steps,
            "ranks-steps",
        ),  # fmt: skip
    ]
    parts.append(_stragglers(run["stragglers"]))
    offsets = [
        _who(r)
        + _cell(esc(r["host"]))
        + (_d(r["offset_ns"]) if r["offset_ns"] is not None else _cell(""))
        + _cell(esc(r["offset_from"]))
        for r in run["ranks"]
    ]
    parts.append(
        "<h3>Clocks</h3>" + _table(["rank", "host", "offset", "from"], offsets, "ranks-clocks")
    )
    parts += [f'<p class="note">{esc(n)}</p>' for n in run["notes"]]
    return "\n".join(parts) + "</section>"


def _stragglers(stragglers: list[dict[str, Any]]) -> str:
    """Return the stragglers' table of a ranks run (nothing when no step had two ranks)."""
    if not stragglers:
        return ""
    rows = [
        _n(s["step"]) + _who(s) + _n(s["ranks"]) + _d(s["wait_ns"]) + _d(s["others_wait_ns"])
        + _d(s["behind_ns"]) + _cell(esc(s["why"]))
        for s in stragglers
    ]  # fmt: skip
    return "<h3>Stragglers</h3>" + _table(
        ["step", "rank", "ranks", "its wait", "others' wait", "behind", "why"],
        rows,
        "ranks-stragglers",
    )


def kernels_section(run: dict[str, Any], png: bytes | None) -> str:
    """Return the kernels section of a kernels ``run`` (``traceana kernels``' JSON): the
    kernels (Neuron: NEFFs) by total device time, per rank, with their spread."""
    rows = [
        _who(r) + _cell(esc(r["neff"] or r["name"])) + _cell(esc(r["kind"])) + _n(r["count"])
        + _d(r["total_ns"]) + _n(r["share_pct"])
        + "".join(_d(r[k]) for k in ("mean_ns", "p50_ns", "p95_ns", "max_ns"))
        for r in run["kernels"]
    ]  # fmt: skip
    return (
        '<section id="kernels"><h2>Kernels</h2><p class="note">Per rank, each kernel (on '
        "Neuron each NEFF) by total device time: count, share of the rank's device work, "
        "mean, median, p95 and longest, and whether it is compute, communication or memory "
        "(<code>traceana kernels</code>, docs/kernels.md).</p>"
        + (img(png, "the kernels with the most device time", "kernels") if png else "")
        + _table(
            ["rank", "kernel", "kind", "count", "total", "share %", "mean", "p50", "p95", "max"],
            rows,
            "kernels-table",
        )  # fmt: skip
        + _listed(run, "kernels", "traceana kernels PATH --format json")
        + "".join(f'<p class="note">{esc(n)}</p>' for n in run["notes"])
        + "</section>"
    )


def _listed(run: dict[str, Any], key: str, command: str) -> str:
    """A note saying that the page lists the first N of a longer list (html.bounded)."""
    cut = run.get("listed", {}).get(key)
    if not cut:
        return ""
    return (
        f'<p class="note">The first {cut["listed"]:,} rows of {cut["of"]:,}, in rank order: '
        f"<code>{esc(command)}</code> has them all.</p>"
    )


def launches_section(run: dict[str, Any], png: bytes | None) -> str:
    """Return the launches section of a launches ``run`` (``traceana launches``' JSON): per
    lane, launch latency and delay, the queue, time blocked on a full queue."""
    rows = [
        _who(r) + _cell(esc(r["lane"])) + _n(r["launches"])
        + "".join(_d(r[k]) for k in ("latency_p50_ns", "latency_p95_ns", "delay_p50_ns",
                                      "delay_p95_ns"))
        + _n(r["queue_mean"]) + _n(r["queue_max"])
        + (_d(r["blocked_ns"]) if r["blocked_ns"] is not None else _cell(""))
        for r in run["lanes"]
    ]  # fmt: skip
    return (
        '<section id="launches"><h2>Launches</h2><p class="note">Per lane: launch latency '
        "(work start after its launch call's start) and delay (after the call's end), the "
        "queue of work launched and not finished (its time-weighted mean and its longest) "
        "and the time it was full (<code>traceana launches</code>, docs/launches.md). The "
        "plot is the queue over time of the lanes with the longest queues.</p>"
        + (img(png, "queue length over time, per lane", "launches") if png else "")
        + _table(
            [
                "rank",
                "lane",
                "launches",
                "latency p50",
                "latency p95",
                "delay p50",
                "delay p95",
                "queue mean",
                "queue max",
                "blocked",
            ],
            rows,
            "launches-table",
        )  # fmt: skip
        + _listed(run, "lanes", "traceana launches PATH --format json")
        + "".join(f'<p class="note">{esc(n)}</p>' for n in run["notes"])
        + "</section>"
    )


def more_sections(s: dict[str, Any], images: bool) -> list[str]:
    """Return the ranks, kernels and launches sections of a report's JSON ``s``, each with
    its plot when ``images``."""
    from trace_analyzer.render import plots_more

    drawn = (
        ("ranks", ranks_section, plots_more.ranks),
        ("kernels", kernels_section, plots_more.kernels),
        ("launches", launches_section, plots_more.launches),
    )
    out = []
    for kind, section, plot in drawn:
        if s.get(kind):
            run = s[kind]["runs"][0]
            out.append(section(run, plot(run) if images else None))
    return out
