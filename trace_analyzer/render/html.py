"""HTML: one self-contained page for a report (``traceana report -o report.html``).

As pyinstrument's HTML renderer does, the page embeds the JSON renderer's output of each
result (``<script type="application/json">``) in a static template, and every table and plot
is drawn from that JSON parsed back, so the page never shows a number the JSON lacks. Plots
are PNG data: URIs; the template has no external script, stylesheet, font or image.
"""

from __future__ import annotations

import html
import re
from importlib import resources
from typing import Any

import orjson

from trace_analyzer._version import __version__
from trace_analyzer.analyses.report import ReportResult
from trace_analyzer.render import json as json_renderer
from trace_analyzer.render import plots
from trace_analyzer.render.html_sections import (
    diff_section,
    esc,
    gaps_section,
    header_section,
    histogram_section,
    ops_section,
    summary_section,
    timeline_section,
)
from trace_analyzer.render.safe import warnings_html

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
    """Return the page of ``report`` (``analyses.report.report``): the template filled with
    its sections and the JSON of each part."""
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


def _body(s: dict[str, Any]) -> str:
    run = s["gaps"]["runs"][0]
    images = {name: plots.as_png(image) for name, image in plots.figures(s).items()}
    diff = s["diff"]["runs"][0] if s.get("diff") else None
    parts = [header_section(s, run, diff), *_warnings(s, run), summary_section(run)]
    parts.append(timeline_section(s, images))
    parts.append(histogram_section(images))
    if diff:
        parts.append(diff_section(diff))
    parts.append(ops_section(s["ops"]["runs"][0], run))
    parts.append(gaps_section(run))
    parts.append(_data(s))
    return "\n".join(parts)


def _warnings(s: dict[str, Any], run: dict[str, Any]) -> list[str]:
    """Return the sections of the run's warnings and the base's (each only when it has some)."""
    base = s["base_gaps"]["runs"][0] if s.get("base_gaps") else {}
    sections = [
        warnings_html(run.get("warnings") or []),
        warnings_html(base.get("warnings") or [], "Warnings of the base"),
    ]
    return [part for part in sections if part]


def _data(s: dict[str, Any]) -> str:
    items = "".join(
        f"<li><code>traceana-{k.replace('_', '-')}</code>: "
        f"{esc(COMMANDS[k].format(path=s['path'], base=s.get('base')))}"
        f' <span class="download" data-for="traceana-{k.replace("_", "-")}"></span></li>'
        for k in KINDS
        if s.get(k) is not None
    )
    return (
        '<section id="data"><h2>Data</h2><p class="note">Every number on this page comes '
        "from these JSON documents, embedded in the page as "
        '<code>&lt;script type="application/json"&gt;</code> blocks.</p>'
        f"<ul>{items}</ul></section>"
        f"<footer>traceana {esc(__version__)}</footer>"
    )
