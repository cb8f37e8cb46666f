"""The report's own sections of its page (page.py): each a template of templates/ filled from
the results' JSON parsed back (``dict[str, Any]``, as the page embeds it), so a number is
shown as the JSON holds it; the values are inert (render/html.py). The questions' parts have
their sections in their own folders (``Part.section``)."""

from __future__ import annotations

from typing import Any

from trace_analyzer.numbers import duration
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.questions.report.analysis import registered_parts
from trace_analyzer.render.html import fill, num
from trace_analyzer.render.idle import idle_phrase
from trace_analyzer.render.metrics import metric_change, metric_label, metric_value
from trace_analyzer.render.plotting import CAUSE_COLOURS


def _template(name: str) -> str:
    return f"{__package__}:{name}"


def headline(run: dict[str, Any]) -> str:
    """Return the one-line finding of a gaps ``run`` (one of a gaps result's ``runs``),
    numbers as the JSON has them."""
    s, w = run["summary"], run["window"]
    if not s["lanes"]:  # why none (analyses/absent.py), as gaps says it
        why = run.get("no_hardware") or "no hardware lanes: this profile records host activity only"
        return why[0].upper() + why[1:] + "."
    if not s["executions"]:
        return "No hardware executions in the window: nothing to measure."
    causes = {c: ns for c, ns in s["idle_by_cause_ns"].items() if ns}
    text = (
        f"{s['devices']} device(s) {idle_phrase(s, w['origin'], num)}: "
        f"{duration(s['idle_ns'])} in {num(s['gap_count'])} gaps"
    )
    if s["gap_count"]:
        text += f", the longest {duration(s['gap_max_ns'])}"
    if causes:
        top = max(causes, key=lambda c: causes[c])
        text += f"; top cause {top} ({duration(causes[top])})"
    return text + "."


def part_headlines(s: dict[str, Any]) -> list[tuple[str, str]]:
    """Return (part, sentence) for each question's part of the report's JSON ``s`` that has
    a headline (``Part.headline``: the critical path's verdict), in the page's order."""
    return [
        (name, str(line))
        for name, part in registered_parts()
        if part.headline and s.get(name) and (line := s[name]["runs"][0].get(part.headline))
    ]


def header_section(s: dict[str, Any], run: dict[str, Any], diff: dict[str, Any] | None) -> str:
    """Return the page's header: the run and the base of ``s`` (the report's parts), the
    headline of the gaps ``run``, the parts' headlines and, with ``diff`` (the diff's run),
    the verdict."""
    text, _, word = diff["verdict_text"].rpartition(": ") if diff else ("", "", "")
    return fill(
        _template("header.html"),
        root=run["root"],
        base=s.get("base"),
        headline=headline(run),
        next=part_headlines(s),
        verdict=diff["verdict"] if diff else None,
        verdict_text=text,  # the verdict text ends in ": <word>"; the word in bold
        verdict_word=word,
    )


def diff_section(d: dict[str, Any]) -> str:
    """Return the section comparing the run with the base: the key numbers, the ops that
    changed and those only in one of them; ``d`` is the diff's run (its JSON)."""
    return fill(
        _template("diff.html"),
        d=d,
        metrics=[_metric(m) for m in d["metrics"] if m["base"] or m["head"]],
        changed=[
            o
            for o in d["ops"]
            if o["device_us_delta"] or o["calls_delta"] or o["idle_before_us_delta"]
        ],
    )


def _metric(m: dict[str, Any]) -> dict[str, Any]:
    """Return a diff metric ``m`` with its label and values as the diff's text writes them
    (durations in their unit, render/metrics.py)."""
    name = m["metric"]
    return {
        **m,
        "label": metric_label(m["what"]),
        "base_text": metric_value(name, m["base"]),
        "head_text": metric_value(name, m["head"]),
        "delta_text": metric_change(name, m["delta"]),
    }


SUMMARY = [  # (label, key in the run, unit: "ns" a duration, written as durations are)
    ("window", "window.duration_ns", "ns"),
    ("devices", "summary.devices", ""),
    ("hardware lanes", "summary.lanes", ""),
    ("busy", "summary.busy_ns", "ns"),
    ("idle in gaps", "summary.idle_ns", "ns"),
    ("idle, of the window", "summary.idle_pct", "%"),
    ("idle, of the active spans", "summary.active_idle_pct", "%"),
    ("active spans", "summary.active_ns", "ns"),
    ("leading idle", "summary.leading_ns", "ns"),
    ("trailing idle", "summary.trailing_ns", "ns"),
    ("executions", "summary.executions", ""),
    ("gaps", "summary.gap_count", ""),
    ("median gap", "summary.gap_p50_ns", "ns"),
    ("p90 gap", "summary.gap_p90_ns", "ns"),
    ("p99 gap", "summary.gap_p99_ns", "ns"),
    ("longest gap", "summary.gap_max_ns", "ns"),
    *((f"idle from {c}", f"summary.idle_by_cause_ns.{c}", "ns") for c in CAUSES),
    ("idle inside the DataLoader", "summary.idle_in_data_loader_ns", "ns"),
]


def _lookup(run: dict[str, Any], key: str) -> Any:
    v: Any = run
    for part in key.split("."):
        v = None if v is None else v.get(part)
    return v


def summary_section(run: dict[str, Any]) -> str:
    """Return the summary section of a gaps ``run``: the window, and the ``SUMMARY`` rows in
    two tables (each row: its key, label, the number shown, its unit, a cause's colour, the
    number as the JSON holds it). A duration is written as the text outputs write it, its
    unit in it (``7.891 s``); nothing where the JSON has none."""
    rows = []
    for label, key, unit in SUMMARY:
        v = _lookup(run, key)
        cause = key.rsplit(".", 1)[-1] if "idle_by_cause" in key else None
        colour = CAUSE_COLOURS[cause] if cause else None
        if unit == "ns":
            rows.append((key, label, "" if v is None else duration(v), "", colour, v))
        else:
            rows.append((key, label, num(v), unit, colour, v))
    split = next(i for i, (_, key, _) in enumerate(SUMMARY) if key == "summary.gap_count")
    origin = run["window"]["origin"] if run["window"] else "no window: nothing ran on hardware"
    return fill(_template("summary.html"), origin=origin, tables=(rows[:split], rows[split:]))


HOST_ROWS = [  # (key in the run, label, unit: ns and us durations, "" a count)
    ("host.step_time_ns", "step time (median)", "ns"),
    ("host.steps", "steps", ""),
    ("host.span_ns", "host span", "ns"),
    ("host.self_cpu_us", "ops' self CPU time", "us"),
]
HOST_TOP = 10  # ops shown by self CPU time


def host_section(run: dict[str, Any]) -> str:
    """Return the summary of a gaps ``run`` that records host activity only (its ``host``
    object): its step time and steps, its span, and its first ``HOST_TOP`` ops by self CPU."""
    host = run["host"]
    rows = [
        (key, label, unit, len(host["steps"]) if key == "host.steps" else _lookup(run, key))
        for key, label, unit in HOST_ROWS
    ]
    return fill(_template("host.html"), host=host, rows=rows, top=HOST_TOP)


def histogram_section(images: dict[str, bytes]) -> str:
    """Return the section of the gap histogram, ``images["histogram"]`` (PNG bytes; a note
    when it was not drawn, ``--no-images``)."""
    return fill(_template("histogram.html"), png=images.get("histogram"))


def ops_section(ops: dict[str, Any], run: dict[str, Any]) -> str:
    """Return the ops section: the ops table of ``ops`` (the ops run) and the idle before each
    op of ``run`` (the gaps run)."""
    return fill(_template("ops.html"), ops=ops, run=run, causes=list(CAUSES))


def gaps_section(run: dict[str, Any]) -> str:
    """Return the gaps section: the device gaps of the gaps ``run`` listed in its JSON (the
    longest, when it lists only some: ``listed``), in time order."""
    return fill(_template("gaps.html"), run=run, cause_colours=CAUSE_COLOURS)


def note_section(name: str, note: str) -> str:
    """Return the section of a question's part ``name`` that the run lacks for a reason,
    ``note`` (a device-profile export that could not be read): its title and the note."""
    return fill(_template("note.html"), name=name, title=name.capitalize(), note=note)
