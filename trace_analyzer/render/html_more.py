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
