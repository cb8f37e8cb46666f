"""``traceana report``: the results one page shows, for one run and an optional base.

A report is plain data: the ``gaps`` and ``ops`` results of the run, the framework ops its
timeline draws (``timeline``), and with a base the ``diff`` result (base → run) and the
base's ``gaps`` and ``timeline``. The HTML renderer embeds each as JSON and shows nothing
else (docs/report.md); the Markdown report is the existing Markdown renderers plus the plots.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import polars as pl

from trace_analyzer.analyses.chain import chains
from trace_analyzer.analyses.diff import diff
from trace_analyzer.analyses.gaps import gaps_result, window_of
from trace_analyzer.analyses.ops import ops_result
from trace_analyzer.core.profile import load
from trace_analyzer.errors import UsageError
from trace_analyzer.render import html, plots, text

FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}


def format_of(output: Path) -> str:
    """Return "html" or "markdown" from the output's extension; anything else is a UsageError."""
    fmt = FORMATS.get(output.suffix.lower())
    if fmt is None:
        raise UsageError(
            f"-o {output}: traceana report writes .html (one self-contained page) "
            "or .md (Markdown, plots as PNG files beside it)"
        )
    return fmt


def timeline_result(profiles: list, path: str) -> dict:
    """Return the framework ops each run's timeline draws above its hardware lanes.

    The window is the gaps' default one (the hardware span); it starts earlier where an
    execution in it was launched by an op that began before it, so that op is drawn too.
    """
    runs = []
    for p in profiles:
        events = p.events
        w = window_of(events)
        run = {"root": str(p.root), "start_ns": None, "end_ns": None, "framework_ops": []}
        if w is not None:
            c = chains(events, p.links()).filter(
                (pl.col("hw_end_ns") > w.start_ns) & (pl.col("hw_start_ns") < w.end_ns)
            )
            launched = c["op_start_ns"].drop_nulls()
            start = min(w.start_ns, launched.min()) if len(launched) else w.start_ns
            ops = (
                events.filter(
                    (pl.col("lane_kind") == "framework_op")
                    & (pl.col("end_ns") > start)
                    & (pl.col("start_ns") < w.end_ns)
                )
                .sort("start_ns", "event_id")
                .select("event_id", "name", "pid", "tid", "start_ns", "end_ns")
            )
            run.update(start_ns=start, end_ns=w.end_ns, framework_ops=ops.to_dicts())
        runs.append(run)
    return {"schema_version": 1, "path": str(path), "runs": runs}


def build(path: Path, base: Path | None = None) -> dict:
    """Return the report of the one run under ``path``, compared with ``base`` when given."""
    head = load(path)  # several runs: a UsageError naming them
    report = {
        "path": str(path),
        "base": None if base is None else str(base),
        "gaps": gaps_result([head], str(path)),
        "ops": ops_result([head], str(path)),
        "timeline": timeline_result([head], str(path)),
    }
    if base is not None:
        before = load(base)
        report.update(
            diff=diff(before, head, str(base), str(path)),
            base_gaps=gaps_result([before], str(base)),
            base_timeline=timeline_result([before], str(base)),
        )
    return report


def image_names(stem: str, report: dict) -> dict[str, str]:
    """Return the file name of each plot of a Markdown report: ``<stem>.<plot>.png``."""
    names = (
        ["timeline", "base-timeline", "histogram"]
        if report.get("base")
        else ["timeline", "histogram"]
    )
    return {n: f"{stem}.{n}.png" for n in names}


def markdown(report: dict, stem: str) -> tuple[str, dict[str, bytes]]:
    """Return the Markdown of a report and its plots (PNG bytes by file name), which it links
    relatively: they go beside the .md file."""
    images = plots.figures(report)
    names = image_names(stem, report)
    path, base = report["path"], report["base"]
    parts = [f"# traceana report: {path}" + (f" (base: {base})" if base else "")]
    if base:
        parts.append(text.render_markdown("diff", report["diff"]).rstrip())
    parts.append(f"## timeline\n\n![timeline of {path}]({quote(names['timeline'])})")
    if base:
        parts.append(f"![timeline of {base}]({quote(names['base-timeline'])})")
    parts.append(f"## gap durations\n\n![gap durations]({quote(names['histogram'])})")
    parts.append(text.render_markdown("gaps", report["gaps"]).rstrip())
    parts.append(text.render_markdown("ops", report["ops"]).rstrip())
    return "\n\n".join(parts) + "\n", {names[k]: images[k] for k in names}


def files(report: dict, output: Path) -> dict[Path, bytes]:
    """Return what to write, by path: the page, or the .md and the PNG files beside it."""
    if format_of(output) == "html":
        return {output: html.render("report", report).encode()}
    text_md, images = markdown(report, output.stem)
    return {
        **{output.with_name(name): png for name, png in images.items()},
        output: text_md.encode(),
    }
