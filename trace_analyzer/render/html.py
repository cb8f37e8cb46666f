"""HTML: one self-contained page for a report (``traceana report -o report.html``).

As pyinstrument's HTML renderer does, the page embeds the JSON renderer's output of each
result (``<script type="application/json">``) in a static template, and every table and plot
is drawn from that JSON parsed back, so the page never shows a number the JSON lacks. Plots
are PNG data: URIs; the template has no external script, stylesheet, font or image.
"""

from __future__ import annotations

import base64
import html
import re
from importlib import resources

import orjson

from trace_analyzer._version import __version__
from trace_analyzer.analyses.causes import CAUSES
from trace_analyzer.analyses.report import ReportResult
from trace_analyzer.render import json as json_renderer
from trace_analyzer.render import plots

TEMPLATE = "templates/report.html"
# The results a report holds (analyses/report.py), in the order the page embeds them.
KINDS = ("gaps", "ops", "timeline", "diff", "base_gaps", "base_timeline")
# What each embedded result is: the command that prints the same JSON.
COMMANDS = {
    "gaps": "traceana gaps {path} --format json",
    "ops": "traceana ops {path} --format json",
    "timeline": "the framework ops the timeline draws (docs/report.md)",
    "diff": "traceana diff {base} {path} --format json",
    "base_gaps": "traceana gaps {base} --format json",
    "base_timeline": "the framework ops the base's timeline draws",
}


def render(report: ReportResult) -> str:
    """Return the page of a report (``analyses.report.report``)."""
    parts = {k: getattr(report, k) for k in KINDS}
    payloads = {k: json_renderer.render(r) for k, r in parts.items() if r is not None}
    shown = {k: orjson.loads(p) for k, p in payloads.items()}  # the page shows what the JSON says
    shown.update(path=report.path, base=report.base)
    template = resources.files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8")
    title = f"traceana report: {report.path}"
    return _fill(
        template,
        title=html.escape(title),
        body=_body(shown),
        data="\n".join(_data_block(k, p) for k, p in payloads.items()),
    )


def _fill(template: str, **values: str) -> str:
    return re.sub(r"\{\{ (\w+) \}\}", lambda m: values[m[1]], template)


def _data_block(kind: str, payload: str) -> str:
    # "<" only occurs inside JSON strings; escaped, no op name can close the script element
    body = payload.replace("<", "\\u003c").rstrip()
    return (
        f'<script type="application/json" id="traceana-{kind.replace("_", "-")}" '
        f'data-file="{kind}.json">\n{body}\n</script>'
    )


# ---- numbers: shown as the JSON holds them (times in µs are the JSON's ns / 1000, exact)


def num(v) -> str:
    """Return a number as text: integers grouped by thousands, floats in full."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    return f"{v:,}"


def us(ns) -> str:
    return "" if ns is None else num(ns / 1000)


def _e(v) -> str:
    return html.escape("" if v is None else str(v))


def _cell(v, kind: str = "text", sort=None) -> str:
    if kind == "num":
        key = "" if sort is None else f' data-sort="{sort}"'
        return f'<td class="num"{key}>{v}</td>'
    return f"<td>{v}</td>"


def _n(v) -> str:
    return _cell(num(v), "num", v)


def _u(ns) -> str:
    return _cell(us(ns), "num", ns)


def _cause(c) -> str:
    if c is None:
        return _cell("")
    colour = plots.CAUSE_COLOURS.get(c, "#ffffff")
    return f'<td><span class="swatch" style="background:{colour}"></span>{_e(c)}</td>'


def _table(headers: list[str], rows: list[str], table_id: str = "", note: str = "") -> str:
    head = "".join(f'<th scope="col">{_e(h)}</th>' for h in headers)
    ident = f' id="{table_id}"' if table_id else ""
    caption = f"<caption>{_e(note)}</caption>" if note else ""
    return (
        f'<div class="scroll"><table class="sortable"{ident}>{caption}<thead><tr>{head}'
        f"</tr></thead><tbody>\n"
        + "\n".join(f"<tr>{r}</tr>" for r in rows)
        + "\n</tbody></table></div>"
    )


def _img(png: bytes, alt: str, name: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="plot" id="plot-{name}" alt="{_e(alt)}" src="data:image/png;base64,{data}">'


# ---- sections


def _body(s: dict) -> str:
    run = s["gaps"]["runs"][0]
    images = plots.figures(s)
    diff = s["diff"]["runs"][0] if s.get("diff") else None
    parts = [_header(s, run, diff), _summary(run), _timeline(s, images)]
    parts.append(
        '<section id="histogram"><h2>Gap durations</h2>'
        '<p class="note">Device gaps (the whole device idle), stacked by cause.</p>'
        + _img(images["histogram"], "histogram of gap durations", "histogram")
        + "</section>"
    )
    if diff:
        parts.append(_diff(diff))
    parts.append(_ops(s["ops"]["runs"][0], run))
    parts.append(_gaps(run))
    parts.append(_data(s))
    return "\n".join(parts)


def headline(run: dict) -> str:
    """Return the one-line finding of a gaps run, numbers as the JSON has them."""
    s, w = run["summary"], run["window"]
    if not s["lanes"]:
        return "No hardware lanes: this profile records host activity only."
    if not s["executions"]:
        return "No hardware executions in the window: nothing to measure."
    causes = {c: ns for c, ns in s["idle_by_cause_ns"].items() if ns}
    text = (
        f"{s['devices']} device(s) idle {num(s['idle_pct'])} % of the {w['origin']}: "
        f"{us(s['idle_ns'])} µs in {s['gap_count']} gaps"
    )
    if s["gap_count"]:
        text += f", the longest {us(s['gap_max_ns'])} µs"
    if causes:
        top = max(causes, key=causes.get)
        text += f"; top cause {top} ({us(causes[top])} µs)"
    return text + "."


def _header(s: dict, run: dict, diff: dict | None) -> str:
    base = (
        f'<p class="meta">compared with the base <code>{_e(s["base"])}</code></p>'
        if s.get("base")
        else ""
    )
    verdict = ""
    if diff:  # the verdict text ends in ": <word>"; the word in bold
        text, _, word = diff["verdict_text"].rpartition(": ")
        verdict = (
            f'<p class="verdict {_e(diff["verdict"])}" id="verdict">run against the '
            f"base: {_e(text)}: <strong>{_e(word)}</strong> "
            '<a href="#diff">details</a></p>'
        )
    return (
        f'<header><h1>traceana report</h1><p class="meta">run <code>{_e(run["root"])}</code>'
        f'</p>{base}<p class="headline" id="headline">{_e(headline(run))}</p>{verdict}'
        "</header>"
    )


def _diff(d: dict) -> str:
    rows = [
        f'<th scope="row">{_e(m["what"])}</th>{_n(m["base"])}{_n(m["head"])}'
        f"{_cell(_signed(m['delta']), 'num', m['delta'])}"
        f"{_cell(_signed(m['pct_delta']), 'num', m['pct_delta'])}"
        for m in d["metrics"]
        if m["base"] or m["head"]
    ]
    parts = [
        '<section id="diff"><h2>Compared with the base</h2>'
        f'<p class="note">{_e(d["verdict_text"])}</p>',
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
        parts.append(
            _table(
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
                    f"<td>{_e(o['name'])}</td>{_n(o['calls_base'])}{_n(o['calls_head'])}"
                    f"{_n(o['device_us_base'])}{_n(o['device_us_head'])}"
                    f"{_cell(_signed(o['device_us_delta']), 'num', o['device_us_delta'])}"
                    f"{_cell(_signed(o['idle_before_us_delta']), 'num', o['idle_before_us_delta'])}"
                    for o in changed
                ],
                "diff-ops",
                "ops in both that changed",
            )
        )
    for title, ops, side in (
        ("ops only in the run", d["added"], "head"),
        ("ops only in the base", d["removed"], "base"),
    ):
        if ops:
            parts.append(
                _table(
                    ["op", "calls", "device µs"],
                    [
                        f"<td>{_e(o['name'])}</td>{_n(o[f'calls_{side}'])}"
                        f"{_n(o[f'device_us_{side}'])}"
                        for o in ops
                    ],
                    f"diff-{'added' if side == 'head' else 'removed'}",
                    title,
                )
            )
    return "\n".join(parts) + "</section>"


def _signed(v) -> str:
    return "" if v is None else ("+" if v > 0 else "") + num(v)


SUMMARY = [  # (label, key in the run, unit)
    ("window", "window.duration_ns", "µs"),
    ("devices", "summary.devices", ""),
    ("hardware lanes", "summary.lanes", ""),
    ("busy", "summary.busy_ns", "µs"),
    ("idle in gaps", "summary.idle_ns", "µs"),
    ("idle", "summary.idle_pct", "%"),
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


def _lookup(run: dict, key: str):
    v = run
    for part in key.split("."):
        v = None if v is None else v.get(part)
    return v


def _summary(run: dict) -> str:
    split = next(i for i, (_, key, _) in enumerate(SUMMARY) if key == "summary.gap_count")
    tables = "".join(
        _summary_table(run, part, f"summary-{n}")
        for n, part in enumerate((SUMMARY[:split], SUMMARY[split:]), 1)
    )
    origin = run["window"]["origin"] if run["window"] else "no window: nothing ran on hardware"
    return (
        f'<section id="summary"><h2>Summary</h2><p class="note">Window: {_e(origin)}. '
        "Busy, idle and gaps add up the devices (docs/gaps.md).</p>"
        f'<div class="columns">{tables}</div></section>'
    )


def _summary_table(run: dict, part: list, table_id: str) -> str:
    rows = []
    for label, key, unit in part:
        v = _lookup(run, key)
        shown = us(v) if unit == "µs" else num(v)
        cause = key.rsplit(".", 1)[-1] if "idle_by_cause" in key else None
        swatch = (
            f'<span class="swatch" style="background:{plots.CAUSE_COLOURS[cause]}"></span>'
            if cause
            else ""
        )
        rows.append(
            f'<tr data-key="{key}"><th scope="row">{swatch}{_e(label)}</th>'
            f'<td class="num">{shown}</td><td class="unit">{unit}</td></tr>'
        )
    return (
        f'<table id="{table_id}" class="summary"><tbody>\n' + "\n".join(rows) + "\n</tbody></table>"
    )


def _timeline(s: dict, images: dict) -> str:
    parts = [
        '<section id="timeline"><h2>Timeline</h2><p class="note">Hardware lanes: busy '
        "blocks, and gaps coloured by cause; above them the framework ops on the host. "
        "Time in µs from the window start; grey: outside the window.</p>"
    ]
    if s.get("base"):
        parts.append(f"<h3>run <code>{_e(s['path'])}</code></h3>")
    parts.append(_img(images["timeline"], f"timeline of {s['path']}", "timeline"))
    if s.get("base"):
        parts.append(f"<h3>base <code>{_e(s['base'])}</code> (same scale)</h3>")
        parts.append(_img(images["base-timeline"], f"timeline of {s['base']}", "base-timeline"))
    return "\n".join(parts) + "</section>"


def _ops(ops: dict, run: dict) -> str:
    cov = ops["coverage"]
    line = (
        f"device time {num(ops['total_device_us'])} µs in {num(ops['executions'])} "
        f"executions; {num(cov['linked'])} of {num(cov['hardware_executions'])} link to a "
        f"framework op ({num(cov['linked_pct'])} %)"
        if cov.get("hardware_executions")
        else "no hardware executions"
    )
    rows = [
        f"<td>{_e(r['name'])}</td>{_n(r['calls'])}{_n(r['self_cpu_us'])}"
        f"{_n(r['cpu_total_us'])}{_n(r['device_us'])}{_n(r['device_pct'])}"
        f"{_n(r['executions'])}{_n(r['executions_per_call'])}"
        f"{_n(r['mean_dispatch_to_hw_us'])}"
        for r in ops["rows"]
    ]
    parts = [
        f'<section id="ops"><h2>Ops</h2><p class="note">{_e(line)}.</p>',
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
                    f"<td>{_e(o['op'])}</td>{_u(o['idle_before_ns'])}{_n(o['gaps'])}"
                    + "".join(_u(o[f"{c}_ns"]) for c in CAUSES)
                    + f"<td>{_e(o.get('transfers'))}</td>"
                    for o in run["ops"]
                ],
                "idle-by-op",
                "idle before each op (µs, by cause)",
            )
        )
    return "\n".join(parts) + "</section>"


def _gaps(run: dict) -> str:
    gaps = run["device_gaps"]
    if not gaps:
        return '<section id="gaps"><h2>Gaps</h2><p class="note">No gaps.</p></section>'
    origin = run["window"]["start_ns"]
    rows = [
        f"<td>{_e(g['device'])}</td>{_u(g['start_ns'] - origin)}{_u(g['duration_ns'])}"
        f"{_cause(g['cause'])}<td>{_e(g['prev_op'] or '(' + str(g['prev_name']) + ')')}</td>"
        f"<td>{_e(g['next_op'] or '(unlinked)')}</td><td>{_e(g['next_runtime'])}</td>"
        f"<td>{_e(g.get(str(g['cause']) + '_event'))}</td><td>{_e(g['link_method'])}</td>"
        for g in gaps
    ]
    return (
        '<section id="gaps"><h2>Gaps</h2><p class="note">Every device gap (the whole device '
        "idle), in time order; click a column to sort. The per-lane gaps are in the gaps "
        "JSON.</p>"
        + _table(
            [
                "device",
                "at µs",
                "gap µs",
                "cause",
                "after op",
                "next op",
                "next runtime call",
                "evidence",
                "link",
            ],
            rows,
            "gaps-table",
        )
        + "</section>"
    )


def _data(s: dict) -> str:
    items = "".join(
        f"<li><code>traceana-{k.replace('_', '-')}</code>: "
        f"{_e(COMMANDS[k].format(path=s['path'], base=s.get('base')))}"
        f' <span class="download" data-for="traceana-{k.replace("_", "-")}"></span></li>'
        for k in KINDS
        if s.get(k) is not None
    )
    return (
        '<section id="data"><h2>Data</h2><p class="note">Every number on this page comes '
        "from these JSON documents, embedded in the page as "
        '<code>&lt;script type="application/json"&gt;</code> blocks.</p>'
        f"<ul>{items}</ul></section>"
        f"<footer>traceana {_e(__version__)}</footer>"
    )
