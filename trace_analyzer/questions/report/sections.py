"""The sections of the report page (html.py), and how they show numbers.

Each section is a function of the results' JSON parsed back (``dict[str, Any]``, as the page
embeds it) returning its HTML; a number is shown as the JSON holds it.
"""

from __future__ import annotations

import base64
from typing import Any

from trace_analyzer.numbers import duration, instant
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.render.idle import idle_phrase
from trace_analyzer.render.plotting import CAUSE_COLOURS
from trace_analyzer.render.safe import html_text

# ---- numbers: shown as the JSON holds them (times in µs are the JSON's ns / 1000, exact)


def num(v: object) -> str:
    """Return a number ``v`` as text: integers grouped by thousands, floats in full, booleans
    as JSON writes them, None as nothing."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    return f"{v:,}"


def us(ns: float | None) -> str:
    """Return a time ``ns`` as µs text (``num`` of ns / 1000), None as nothing."""
    return "" if ns is None else num(ns / 1000)


def esc(v: object) -> str:
    """Return ``v`` as inert HTML text (``safe.html_text``: control characters shown as
    their escapes, as every text output shows them, then HTML-escaped), None as nothing. A
    browser acts on a bidirectional override (it reorders what follows) and draws other
    controls as nothing, so a name is shown as the text of its escape here too."""
    return "" if v is None else html_text(v)


def _cell(v: object, kind: str = "text", sort: object = None) -> str:
    if kind == "num":
        key = "" if sort is None else f' data-sort="{sort}"'
        return f'<td class="num"{key}>{v}</td>'
    return f"<td>{v}</td>"


def _n(v: object) -> str:
    return _cell(num(v), "num", v)


def _u(ns: float | None) -> str:
    return _cell(us(ns), "num", ns)


def _d(ns: int, origin: int | None = None) -> str:
    """A time cell, sorted by its ns: a duration ``ns``, or with ``origin`` the time ``ns``
    after it, auto-scaled as the text outputs write them (``numbers.duration``, ``instant``)."""
    shown = duration(ns) if origin is None else instant(ns, origin)
    return _cell(esc(shown), "num", ns if origin is None else ns - origin)


def _cause(c: str | None) -> str:
    if c is None:
        return _cell("")
    colour = CAUSE_COLOURS.get(c, "#ffffff")
    return f'<td><span class="swatch" style="background:{colour}"></span>{esc(c)}</td>'


def _table(headers: list[str], rows: list[str], table_id: str = "", note: str = "") -> str:
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    ident = f' id="{table_id}"' if table_id else ""
    caption = f"<caption>{esc(note)}</caption>" if note else ""
    return (
        f'<div class="scroll"><table class="sortable"{ident}>{caption}<thead><tr>{head}'
        f"</tr></thead><tbody>\n"
        + "\n".join(f"<tr>{r}</tr>" for r in rows)
        + "\n</tbody></table></div>"
    )


def img(png: bytes, alt: str, name: str) -> str:
    """Return the ``<img>`` of a plot: ``png`` as a data: URI, ``alt`` its text, ``name`` its
    id (``plot-<name>``)."""
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<img class="plot" id="plot-{name}" alt="{esc(alt)}" src="data:image/png;base64,{data}">'
    )


def headline(run: dict[str, Any]) -> str:
    """Return the one-line finding of a gaps ``run`` (one of a gaps result's ``runs``),
    numbers as the JSON has them."""
    s, w = run["summary"], run["window"]
    if not s["lanes"]:
        return "No hardware lanes: this profile records host activity only."
    if not s["executions"]:
        return "No hardware executions in the window: nothing to measure."
    causes = {c: ns for c, ns in s["idle_by_cause_ns"].items() if ns}
    text = (
        f"{s['devices']} device(s) {idle_phrase(s, w['origin'], num)}: "
        f"{us(s['idle_ns'])} µs in {s['gap_count']} gaps"
    )
    if s["gap_count"]:
        text += f", the longest {us(s['gap_max_ns'])} µs"
    if causes:
        top = max(causes, key=lambda c: causes[c])
        text += f"; top cause {top} ({us(causes[top])} µs)"
    return text + "."


def header_section(s: dict[str, Any], run: dict[str, Any], diff: dict[str, Any] | None) -> str:
    """Return the page's header: the run and the base of ``s`` (the report's parts), the
    headline of the gaps ``run`` and, with ``diff`` (the diff's run), the verdict."""
    base = (
        f'<p class="meta">compared with the base <code>{esc(s["base"])}</code></p>'
        if s.get("base")
        else ""
    )
    verdict = ""
    if diff:  # the verdict text ends in ": <word>"; the word in bold
        text, _, word = diff["verdict_text"].rpartition(": ")
        verdict = (
            f'<p class="verdict {esc(diff["verdict"])}" id="verdict">run against the '
            f"base: {esc(text)}: <strong>{esc(word)}</strong> "
            '<a href="#diff">details</a></p>'
        )
    return (
        f'<header><h1>traceana report</h1><p class="meta">run <code>{esc(run["root"])}</code>'
        f'</p>{base}<p class="headline" id="headline">{esc(headline(run))}</p>{verdict}'
        "</header>"
    )


def diff_section(d: dict[str, Any]) -> str:
    """Return the section comparing the run with the base: the key numbers, the ops that
    changed and those only in one of them; ``d`` is the diff's run (its JSON)."""
    rows = [
        f'<th scope="row">{esc(m["what"])}</th>{_n(m["base"])}{_n(m["head"])}'
        f"{_cell(_signed(m['delta']), 'num', m['delta'])}"
        f"{_cell(_signed(m['pct_delta']), 'num', m['pct_delta'])}"
        for m in d["metrics"]
        if m["base"] or m["head"]
    ]
    parts = [
        '<section id="diff"><h2>Compared with the base</h2>'
        f'<p class="note">{esc(d["verdict_text"])}</p>',
        _table(
            ["metric", "base", "run", "change", "change %"],
            rows,
            "diff-metrics",
            "key numbers: run − base",
        ),
    ]
    changed = [
        o for o in d["ops"] if o["device_us_delta"] or o["calls_delta"] or o["idle_before_us_delta"]
    ]
    if changed:
        parts.append(_changed_ops(changed))
    for title, ops, side in (
        ("ops only in the run", d["added"], "head"),
        ("ops only in the base", d["removed"], "base"),
    ):
        if ops:
            parts.append(
                _table(
                    ["op", "calls", "device µs"],
                    [
                        f"<td>{esc(o['name'])}</td>{_n(o[f'calls_{side}'])}"
                        f"{_n(o[f'device_us_{side}'])}"
                        for o in ops
                    ],
                    f"diff-{'added' if side == 'head' else 'removed'}",
                    title,
                )
            )
    return "\n".join(parts) + "</section>"


def _changed_ops(changed: list[dict[str, Any]]) -> str:
    return _table(
        [
            "op",
            "calls base",
            "calls run",
            "device µs base",
            "device µs run",
            "device µs Δ",
            "idle before µs Δ",
        ],
        [
            f"<td>{esc(o['name'])}</td>{_n(o['calls_base'])}{_n(o['calls_head'])}"
            f"{_n(o['device_us_base'])}{_n(o['device_us_head'])}"
            f"{_cell(_signed(o['device_us_delta']), 'num', o['device_us_delta'])}"
            f"{_cell(_signed(o['idle_before_us_delta']), 'num', o['idle_before_us_delta'])}"
            for o in changed
        ],
        "diff-ops",
        "ops in both that changed",
    )


def _signed(v: float | None) -> str:
    return "" if v is None else ("+" if v > 0 else "") + num(v)


SUMMARY = [  # (label, key in the run, unit)
    ("window", "window.duration_ns", "µs"),
    ("devices", "summary.devices", ""),
    ("hardware lanes", "summary.lanes", ""),
    ("busy", "summary.busy_ns", "µs"),
    ("idle in gaps", "summary.idle_ns", "µs"),
    ("idle, of the window", "summary.idle_pct", "%"),
    ("idle, of the active spans", "summary.active_idle_pct", "%"),
    ("active spans", "summary.active_ns", "µs"),
    ("leading idle", "summary.leading_ns", "µs"),
    ("trailing idle", "summary.trailing_ns", "µs"),
    ("executions", "summary.executions", ""),
    ("gaps", "summary.gap_count", ""),
    ("median gap", "summary.gap_p50_ns", "µs"),
    ("p90 gap", "summary.gap_p90_ns", "µs"),
    ("p99 gap", "summary.gap_p99_ns", "µs"),
    ("longest gap", "summary.gap_max_ns", "µs"),
    *((f"idle from {c}", f"summary.idle_by_cause_ns.{c}", "µs") for c in CAUSES),
]


def _lookup(run: dict[str, Any], key: str) -> Any:
    v: Any = run
    for part in key.split("."):
        v = None if v is None else v.get(part)
    return v


def summary_section(run: dict[str, Any]) -> str:
    """Return the summary section of a gaps ``run``: the window, and the ``SUMMARY`` rows in
    two tables."""
    split = next(i for i, (_, key, _) in enumerate(SUMMARY) if key == "summary.gap_count")
    tables = "".join(
        _summary_table(run, part, f"summary-{n}")
        for n, part in enumerate((SUMMARY[:split], SUMMARY[split:]), 1)
    )
    origin = run["window"]["origin"] if run["window"] else "no window: nothing ran on hardware"
    return (
        f'<section id="summary"><h2>Summary</h2><p class="note">Window: {esc(origin)}. '
        "Busy, idle and gaps add up the devices (docs/gaps.md).</p>"
        f'<div class="columns">{tables}</div></section>'
    )


def _summary_table(run: dict[str, Any], part: list[tuple[str, str, str]], table_id: str) -> str:
    rows = []
    for label, key, unit in part:
        v = _lookup(run, key)
        shown = us(v) if unit == "µs" else num(v)
        cause = key.rsplit(".", 1)[-1] if "idle_by_cause" in key else None
        swatch = (
            f'<span class="swatch" style="background:{CAUSE_COLOURS[cause]}"></span>'
            if cause
            else ""
        )
        rows.append(
            f'<tr data-key="{key}"><th scope="row">{swatch}{esc(label)}</th>'
            f'<td class="num">{shown}</td><td class="unit">{unit}</td></tr>'
        )
    return (
        f'<table id="{table_id}" class="summary"><tbody>\n' + "\n".join(rows) + "\n</tbody></table>"
    )


def histogram_section(images: dict[str, bytes]) -> str:
    """Return the section of the gap histogram, ``images["histogram"]`` (PNG bytes; a note
    when it was not drawn, ``--no-images``)."""
    png = images.get("histogram")
    shown = (
        img(png, "histogram of gap durations", "histogram")
        if png
        else '<p class="note">Not drawn (<code>--no-images</code>): the counts are the '
        "timeline JSON's <code>histogram</code>.</p>"
    )
    return (
        '<section id="histogram"><h2>Gap durations</h2>'
        '<p class="note">Device gaps (the whole device idle), stacked by cause.</p>'
        + shown
        + "</section>"
    )


def ops_section(ops: dict[str, Any], run: dict[str, Any]) -> str:
    """Return the ops section: the ops table of ``ops`` (the ops run) and the idle before each
    op of ``run`` (the gaps run)."""
    cov = ops["coverage"]
    line = (
        f"device time {num(ops['total_device_us'])} µs in {num(ops['executions'])} "
        f"executions; {num(cov['linked'])} of {num(cov['hardware_executions'])} link to a "
        f"framework op ({num(cov['linked_pct'])} %)"
        if cov.get("hardware_executions")
        else "no hardware executions"
    )
    rows = [
        f"<td>{esc(r['name'])}</td>{_n(r['calls'])}{_n(r['self_cpu_us'])}"
        f"{_n(r['cpu_total_us'])}{_n(r['device_us'])}{_n(r['device_pct'])}"
        f"{_n(r['executions'])}{_n(r['executions_per_call'])}"
        f"{_n(r['mean_dispatch_to_hw_us'])}"
        for r in ops["rows"]
    ]
    parts = [
        f'<section id="ops"><h2>Ops</h2><p class="note">{esc(line)}.</p>',
        _table(
            [
                "op",
                "calls",
                "self CPU µs",
                "CPU total µs",
                "device µs",
                "device %",
                "executions",
                "executions / call",
                "mean dispatch→hw µs",
            ],
            rows,
            "ops-table",
            "the offline key_averages(), by device time",
        ),
    ]
    if run["ops"]:
        parts.append(
            _table(
                ["op", "idle before µs", "gaps", *CAUSES, "transfers"],
                [
                    f"<td>{esc(o['op'])}</td>{_u(o['idle_before_ns'])}{_n(o['gaps'])}"
                    + "".join(_u(o[f"{c}_ns"]) for c in CAUSES)
                    + f"<td>{esc(o.get('transfers'))}</td>"
                    for o in run["ops"]
                ],
                "idle-by-op",
                "idle before each op (µs, by cause)",
            )
        )
    return "\n".join(parts) + "</section>"


def gaps_section(run: dict[str, Any]) -> str:
    """Return the gaps section: the device gaps of the gaps ``run`` listed in its JSON (the
    longest, when it lists only some: ``listed``), in time order."""
    gaps = run["device_gaps"]
    if not gaps:
        return '<section id="gaps"><h2>Gaps</h2><p class="note">No gaps.</p></section>'
    origin = run["window"]["start_ns"]
    rows = [
        f"<td>{esc(g['device'])}</td>{_d(g['start_ns'], origin)}{_d(g['duration_ns'])}"
        f"{_cause(g['cause'])}<td>{esc(g['prev_op'] or '(' + str(g['prev_name']) + ')')}</td>"
        f"<td>{esc(g['next_op'] or '(unlinked)')}</td><td>{esc(g['next_runtime'])}</td>"
        f"<td>{esc(g.get('evidence'))}</td><td>{esc(g['link_method'])}</td>"
        for g in gaps
    ]
    steps = "".join(
        f"<li><b>{esc(h['cause'] if h['op'] is None else h['op'] + ' (' + h['cause'] + ')')}"
        f"</b>, {us(h['idle_ns'])} µs: {esc(h['hint'])}</li>"
        for h in run.get("hints") or []
    )
    cut = (run.get("listed") or {}).get("device_gaps")
    which = (
        f"The {num(cut['listed'])} longest of the {num(cut['of'])} device gaps (the whole "
        "device idle), in time order; the other "
        f'<span id="gaps-left-out">{num(cut["of"] - cut["listed"])}</span> are in '
        f"<code>traceana gaps {esc(run['root'])} --format json</code>."
        if cut
        else "Every device gap (the whole device idle), in time order."
    )
    return (
        '<section id="gaps"><h2>Gaps</h2>'
        + (f'<h3>Next steps</h3><ul class="hints">{steps}</ul>' if steps else "")
        + f'<p class="note" id="gaps-note">{which} at: the time after the window start. '
        "Click a column to sort. The per-lane gaps are in the gaps JSON.</p>"
        + _table(
            ["device", "at", "gap", "cause", "after op", "next op", "next runtime call"]
            + ["evidence", "link"],
            rows,
            "gaps-table",
        )
        + "</section>"
    )


def note_section(name: str, note: str) -> str:
    """Return the section of a question's part ``name`` that the run lacks for a reason,
    ``note`` (a device-profile export that could not be read): its title and the note."""
    return (
        f'<section id="{esc(name)}"><h2>{esc(name.capitalize())}</h2>'
        f'<p class="note">{esc(note)}</p></section>'
    )
