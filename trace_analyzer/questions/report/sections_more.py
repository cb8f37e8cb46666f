"""The report page's sections of the ranks, kernels, launches and engines analyses (html.py),
each a function of its result's JSON parsed back, with its plot (plots_more.py) when drawn.
"""

from __future__ import annotations

from typing import Any

from trace_analyzer.questions.report.sections import _cell, _d, _n, _table, esc, img, num


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


def _listed(run: dict[str, Any], key: str, command: str, order: str = "rank") -> str:
    """A note saying that the page lists the first N of a longer list (html.bounded)."""
    cut = run.get("listed", {}).get(key)
    if not cut:
        return ""
    return (
        f'<p class="note">The first {cut["listed"]:,} rows of {cut["of"]:,}, in {order} order: '
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


def busiest(run: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """Return the busiest engine of each NEFF of an engines ``run`` (``traceana engines``'
    JSON), by (profile, NEFF): its row of ``engines`` with the highest active % on any core
    (the first of equals, in the JSON's order); none where no engine has an active %."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in run["engines"]:
        key, pct = (r["profile"], r["neff"]), r["active_pct"]
        if pct is not None and (key not in out or pct > out[key]["active_pct"]):
            out[key] = r
    return out


def _verdict(v: str | None) -> str:
    from trace_analyzer.questions.report.plots_more import VERDICT_COLOURS

    if v is None:
        return _cell("")
    return f'<td><span class="swatch" style="background:{VERDICT_COLOURS[v]}"></span>{esc(v)}</td>'


def _opt(v: object, cell: Any = _n) -> str:
    return _cell("") if v is None else cell(v)


def engines_section(run: dict[str, Any], png: bytes | None) -> str:
    """Return the engines section of an engines ``run`` (``traceana engines``' JSON): per
    NEFF its window, MFU, MBU, intensity, roofline verdict and headroom and its busiest
    engine, the roofline plot, each engine's active %, the hints, the Summary's mismatches."""
    top = busiest(run)
    many = len(run["profiles"]) > 1
    rows = [
        (_cell(esc(n["profile"])) if many else "") + _cell(esc(n["neff"]))
        + _opt(n["window_ns"], _d)
        + "".join(_opt(n[k]) for k in ("mfu_pct", "mbu_pct", "intensity"))
        + _verdict(n["verdict"]) + _opt(n["headroom"])
        + _cell(esc(top[key]["engine"]) if (key := (n["profile"], n["neff"])) in top else "")
        + _opt(top[key]["active_pct"] if key in top else None)
        for n in run["neffs"]
    ]  # fmt: skip
    heads = ["NEFF", "window", "MFU %", "MBU %", "FLOP/byte", "verdict", "headroom ×",
             "busiest engine", "active %"]  # fmt: skip
    return (
        '<section id="engines"><h2>Engines</h2><p class="note">Per NEFF of the run\'s '
        "device-profile exports: its window, MFU and MBU, arithmetic intensity (model FLOPs "
        "per HBM byte), its roofline verdict and how far under its roof it runs, and its "
        "busiest engine (<code>traceana engines</code>, docs/device.md). The plot places each "
        "NEFF (dots) and its top HLO ops (squares) on the device's roofline, log-log; one "
        "without HBM bytes or FLOPs has no finite intensity and is not drawn.</p>"
        + "".join(f'<p class="note">{esc(_peaks(p))}</p>' for p in run["profiles"])
        + (img(png, "the roofline: each NEFF and top HLO op", "roofline") if png else "")
        + _table((["profile"] if many else []) + heads, rows, "engines-neffs")
        + _listed(run, "neffs", "traceana engines PATH --format json", "NEFF")
        + _engine_table(run)
        + _lines("Hints", [f"{h['neff']}: {h['text']}" for h in run["hints"]])
        + _lines("Mismatches with the export's Summary", run["mismatches"])
        + "".join(f'<p class="note">{esc(n)}</p>' for n in run["notes"])
        + _lines("NEFF/NTFF pairs not exported: export each with", _commands(run))
        + "</section>"
    )


def _commands(run: dict[str, Any]) -> list[str]:
    return [u["command"] for u in run["unexported"] if u.get("command")]


def _peaks(p: dict[str, Any]) -> str:
    """A profile's peaks, as the JSON holds them (or why it has none)."""
    if p["no_peaks"] is not None:
        return f"{p['profile']}: no peaks ({p['no_peaks']}): no roof, no MFU or MBU."
    return (
        f"{p['profile']}: peak {num(p['peak_flops'])} FLOP/s, HBM {num(p['hbm_bw'])} bytes/s, "
        f"ridge {num(p['ridge'])} FLOP/byte."
    )


def _engine_table(run: dict[str, Any]) -> str:
    """Each engine's active time and % per NEFF and core, its instructions and idle."""
    rows = [
        _cell(esc(r["neff"])) + _n(r["pcore"]) + _cell(esc(r["engine"]))
        + _opt(r["active_ns"], _d) + _opt(r["active_pct"]) + _n(r["instructions"])
        + _opt(r["instruction_ns"], _d) + _opt(r["idle_ns"], _d)
        for r in run["engines"]
    ]  # fmt: skip
    heads = ["NEFF", "core", "engine", "active", "active %", "instructions",
             "instruction time", "idle between"]  # fmt: skip
    return (
        "<h3>Engines per NEFF and core</h3>"
        + _table(heads, rows, "engines-engines")
        + _listed(run, "engines", "traceana engines PATH --format json", "NEFF")
    )


def _lines(title: str, lines: list[str]) -> str:
    """A titled list of lines (nothing without lines)."""
    if not lines:
        return ""
    return f"<h3>{esc(title)}</h3><ul>" + "".join(f"<li>{esc(t)}</li>" for t in lines) + "</ul>"


def engines_note_section(note: str) -> str:
    """Return the engines section of a run whose device-profile export could not be read."""
    return f'<section id="engines"><h2>Engines</h2><p class="note">{esc(note)}</p></section>'


def more_sections(s: dict[str, Any], images: bool) -> list[str]:
    """Return the ranks, kernels, launches and engines sections of a report's JSON ``s``,
    each with its plot when ``images`` (engines: only when the run has a device profile)."""
    from trace_analyzer.questions.report import plots_more

    drawn = (
        ("ranks", ranks_section, plots_more.ranks),
        ("kernels", kernels_section, plots_more.kernels),
        ("launches", launches_section, plots_more.launches),
        ("engines", engines_section, plots_more.roofline),
    )
    out = []
    for kind, section, plot in drawn:
        if s.get(kind):
            run = s[kind]["runs"][0]
            out.append(section(run, plot(run) if images else None))
    if s.get("engines_note") and not s.get("engines"):
        out.append(engines_note_section(s["engines_note"]))
    return out
