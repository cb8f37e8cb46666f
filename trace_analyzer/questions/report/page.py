"""HTML: one self-contained page for a report (``traceana report -o report.html``).

As pyinstrument's HTML renderer does, the page embeds the JSON renderer's output of each
result (``<script type="application/json">``) in a template (templates/report.html, filled
by Jinja2 with autoescape: render/html.py), and every section, each a template too, is
drawn from that JSON parsed back, so the page never shows a number the JSON lacks: the
report's own (sections.py, and the timeline's here), then each question's part, as the
questions' registry names its section (``Part``). The page stays small whatever the trace:
the gaps and the other long lists are cut to their longest or first rows (``cuts``, saying
so under ``listed``), and the timeline is the bucketed one of ``questions.report.timeline``,
drawn by the page's own script (assets/timeline.js) on a canvas, zoomable. The plots are PNG
data: URIs; nothing is fetched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from importlib import resources
from typing import Any

import orjson
import polars as pl

from trace_analyzer._version import __version__
from trace_analyzer.analyses.results import Later, RunResults
from trace_analyzer.analyses.rows import json_default
from trace_analyzer.questions import resolve
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.questions.report import plots
from trace_analyzer.questions.report.analysis import OWN, ReportResult, registered_parts
from trace_analyzer.questions.report.grid import longest
from trace_analyzer.questions.report.lanes import TOP_GAPS
from trace_analyzer.questions.report.sections import (
    diff_section,
    gaps_section,
    header_section,
    histogram_section,
    host_section,
    note_section,
    ops_section,
    summary_section,
)
from trace_analyzer.questions.report.timeline import MAX_LANES
from trace_analyzer.render import plotting
from trace_analyzer.render.html import Markup, fill
from trace_analyzer.render.safe import plain, warnings_html

ASSETS = ("assets/timeline.css", "assets/timeline.js")
# What each of the report's own results (analysis.OWN) is: the command that prints the same
# JSON; a question's part names its own (``Part.command``).
COMMANDS = {
    "gaps": "traceana gaps {path} --format json",
    "ops": "traceana ops {path} --format json",
    "timeline": "the timeline and histogram, bucketed (docs/report.md)",
    "diff": "traceana diff {base} {path} --format json",
    "base_gaps": "traceana gaps {base} --format json",
    "base_timeline": "the base's timeline and histogram",
}
LIST_CAP = 500  # the rows of any other long list embedded: the first ones, in their order
_GAPS = (
    ("gaps", "gaps", TOP_GAPS, True),
    ("device_gaps", "device_gaps", TOP_GAPS, True),
    ("ops", "ops", LIST_CAP, False),
    ("steps", "steps", LIST_CAP, False),
    ("lanes", "lanes", LIST_CAP, False),
    ("devices", "devices", LIST_CAP, False),
)
Cut = tuple[str, str, int, bool]  # the result's frame, its JSON key, rows kept, the longest
# The long lists of the report's own results; a question's part names its own (``Part.cuts``:
# its first ``LIST_CAP`` rows).
CUTS: dict[str, tuple[Cut, ...]] = {
    "gaps": _GAPS,
    "base_gaps": _GAPS,
    "ops": (("table", "rows", LIST_CAP, False),),
    "diff": tuple((k, k, LIST_CAP, False) for k in ("ops", "added", "removed")),
}
# what JSON text must not hold inside a <script> element: each escaped as JSON reads it
_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def kinds() -> tuple[str, ...]:
    """Return the results a report may hold, in the order the page embeds them: its own
    (``analysis.OWN``), then the questions' parts (the registry's, ``registered_parts``)."""
    return OWN + tuple(name for name, _ in registered_parts())


def command(kind: str) -> str:
    """Return what prints the JSON of the report's results ``kind`` (``{path}``, ``{base}``
    for the run and the base)."""
    return COMMANDS[kind] if kind in COMMANDS else dict(registered_parts())[kind].command


def cuts(kind: str) -> tuple[Cut, ...]:
    """Return the long lists of the report's results ``kind`` that the page cuts."""
    part = dict(registered_parts()).get(kind)
    if part is None:
        return CUTS.get(kind, ())
    return tuple((frame, frame, LIST_CAP, False) for frame in part.cuts)


def render(report: ReportResult, *, images: bool = True) -> str:
    """Return the page of ``report`` (``questions.report.analysis.report``): the template filled
    with its sections and the JSON of each part; ``images``: draw the plots (matplotlib)."""
    found = {k: report.result(k) for k in kinds()}
    payloads = {k: _compact(bounded(k, r)) for k, r in found.items() if r is not None}
    shown = {k: orjson.loads(p) for k, p in payloads.items()}  # the page shows what the JSON says
    shown.update(path=report.path, base=report.base)
    css, js = (resources.files(__package__).joinpath(a).read_text("utf-8") for a in ASSETS)
    return fill(
        f"{__package__}:report.html",
        title=f"traceana report: {report.path}",
        css=Markup(css),
        sections=_sections(shown, images, report.notes),
        data=[_data_block(k, p) for k, p in payloads.items()],
        js=Markup(js),
    )


def bounded(kind: str, results: RunResults[Any]) -> dict[str, Any]:
    """Return the JSON document of ``results``, the report's part ``kind``, with its long
    lists cut (``cuts``); each cut list says how many of how many under the run's
    ``listed`` (``{"gaps": {"listed": 200, "of": 77396}}``); uncut, the command's JSON."""
    run = results.runs[0]
    kept, listed = {}, {}
    for attr, key, n, by_length in cuts(kind):
        lazy = isinstance(type(run).__dict__.get(attr), Later)  # made for the rows kept only
        height = run.rows_in(attr) if lazy else getattr(run, attr).height
        if height > n:
            choose = partial(longest, n=n) if by_length else partial(pl.DataFrame.head, n=n)
            kept[attr] = run.picked(attr, choose) if lazy else choose(getattr(run, attr))
            listed[key] = {"listed": n, "of": height}
    if not kept:
        return results.to_json()
    doc = replace(results, runs=(replace(run, **kept), *results.runs[1:])).to_json()
    doc["runs"][0]["listed"] = listed
    return doc


def _compact(doc: dict[str, Any]) -> str:
    """Return ``doc`` as JSON on one line: the page embeds it unindented (its download too)."""
    return orjson.dumps(doc, default=json_default, option=orjson.OPT_NON_STR_KEYS).decode()


def _data_block(kind: str, payload: str) -> tuple[str, str, Markup]:
    """An embedded JSON document: its element's id, its download's file name, and the JSON
    with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped as JSON reads them (they only occur
    inside its strings): no name can close the script element."""
    body = re.sub("[<>&\u2028\u2029]", lambda m: _UNSAFE[m[0]], payload).rstrip()
    return f"traceana-{kind.replace('_', '-')}", f"{kind}.json", Markup(body)


def _sections(s: dict[str, Any], images: bool, notes: Mapping[str, str]) -> list[Markup]:
    """The page's sections, in order, from the report's JSON ``s``."""
    run = s["gaps"]["runs"][0]
    drawn = {"histogram": plots.as_png(plots.histogram(s))} if images else {}
    diff = s["diff"]["runs"][0] if s.get("diff") else None
    summary = host_section(run) if run.get("host") else summary_section(run)
    parts = [header_section(s, run, diff), *_warnings(s, run), summary]
    parts.append(timeline_section(s))
    parts.append(histogram_section(drawn))
    if diff:
        parts.append(diff_section(diff))
    parts.append(ops_section(s["ops"]["runs"][0], run))
    parts.append(gaps_section(run))
    parts += part_sections(s, images, notes)
    parts.append(_data(s))
    return [Markup(p) for p in parts]  # each filled from its template, or made inert


def part_sections(s: dict[str, Any], images: bool, notes: Mapping[str, str]) -> list[str]:
    """Return the sections of the questions' parts of a report's JSON ``s`` (the registry's,
    in the page's order), each with its plot when ``images``; a part the run lacks for a
    reason (``notes``: a device-profile export that could not be read) is that note."""
    out = []
    for name, part in registered_parts():
        if s.get(name):
            run = s[name]["runs"][0]
            png = resolve(part.plot)(run) if images and part.plot else None
            out.append(resolve(part.section)(run, png))
        elif notes.get(name):
            out.append(note_section(name, notes[name]))
    return out


def timeline_section(s: dict[str, Any]) -> str:
    """Return the timeline section: a canvas per run (and the base's, on one scale, zoomed
    together) that assets/timeline.js draws from the embedded timeline JSON, and the legend."""
    shown = [("run", s["path"], "timeline", s["timeline"]["runs"][0])]
    if s.get("base_timeline"):
        shown.append(("base", s["base"], "base-timeline", s["base_timeline"]["runs"][0]))
    colours = {
        "busy": plotting.BUSY_COLOUR,
        "op": plotting.OP_COLOUR,
        "op_edge": plotting.OP_EDGE,
        "outside": plotting.OUTSIDE_COLOUR,
        "causes": plotting.CAUSE_COLOURS,
    }
    timelines = [
        # drawn on the canvas as shown: a lane's control characters as escapes (the JSON
        # blocks keep the names exactly)
        (
            who,
            path,
            name,
            [plain(n) for n in plots.short_names([lane["lane"] for lane in t["lanes"]])],
            t["lane_count"],
        )
        for who, path, name, t in shown
    ]
    return fill(
        f"{__package__}:timeline.html",
        colours=colours,
        timelines=timelines,
        max_lanes=MAX_LANES,
        legend=_legend(s),
    )


def _legend(s: dict[str, Any]) -> list[tuple[str, str]]:
    """Return the timeline's legend (colour, label): busy, the causes of the idle of the run
    (and base), the ops, outside the window."""
    runs = [s[k]["runs"][0] for k in ("gaps", "base_gaps") if s.get(k)]
    seen = {c for r in runs for c, ns in (r["summary"].get("idle_by_cause_ns") or {}).items() if ns}
    items = [(plotting.BUSY_COLOUR, "busy")]
    items += [(plotting.CAUSE_COLOURS[c], f"gap: {c}") for c in CAUSES if c in seen]
    items += [
        (plotting.OP_COLOUR, "framework op (host)"),
        (plotting.OUTSIDE_COLOUR, "outside the window"),
    ]
    return items


def _warnings(s: dict[str, Any], run: dict[str, Any]) -> list[str]:
    """Return the sections of the run's warnings and the base's (each only when it has some)."""
    base = s["base_gaps"]["runs"][0] if s.get("base_gaps") else {}
    sections = [
        warnings_html(run.get("warnings") or []),
        warnings_html(base.get("warnings") or [], "Warnings of the base"),
    ]
    return [part for part in sections if part]


def _data(s: dict[str, Any]) -> str:
    """The Data section: each embedded JSON document, what prints it, its download."""
    documents = [
        (f"traceana-{k.replace('_', '-')}", command(k).format(path=s["path"], base=s.get("base")))
        for k in kinds()
        if s.get(k) is not None
    ]
    return fill(f"{__package__}:data.html", documents=documents, version=__version__)
