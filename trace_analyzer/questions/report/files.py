"""``traceana report``'s files: one self-contained HTML page, or Markdown and its plots.

The report itself (what it shows) is ``questions.report.analysis.report``; the page is
page.py; the Markdown report is the Markdown renderer's diff, gaps and ops plus the plots,
which it links relatively, as PNG files beside the .md file, with a note on publishing them
(a pull-request comment cannot show a relative image), then the section of each question's
part that has one (the registry's ``Part.markdown``: engines, with its roofline, when the run
has device-profile exports); ``images=False`` writes the text alone (docs/report.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import orjson

from trace_analyzer.analyses.results import RunResults
from trace_analyzer.errors import UsageError
from trace_analyzer.questions import Part, resolve
from trace_analyzer.questions.gaps.analysis import GapsResult
from trace_analyzer.questions.report import page as html
from trace_analyzer.questions.report import plots
from trace_analyzer.questions.report.analysis import ReportResult, registered_parts
from trace_analyzer.questions.report.lanes import TOP_GAPS
from trace_analyzer.render import text
from trace_analyzer.render.blocks import MARKDOWN, heading
from trace_analyzer.render.json import dumps
from trace_analyzer.render.safe import markdown as inert_markdown
from trace_analyzer.render.safe import warning_block

FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}


def format_of(output: Path) -> str:
    """Return "html" or "markdown" from the extension of ``output``; anything else is a
    UsageError."""
    fmt = FORMATS.get(output.suffix.lower())
    if fmt is None:
        raise UsageError(
            f"-o {output}: traceana report writes .html (one self-contained page) "
            "or .md (Markdown, plots as PNG files beside it)"
        )
    return fmt


def shown(report: ReportResult) -> dict[str, Any]:
    """Return what the plots draw: each part of ``report`` as the page's JSON says it (its
    long lists cut, ``html.bounded``)."""
    out: dict[str, Any] = {
        k: _json(k, found) for k in html.kinds() if (found := report.result(k)) is not None
    }
    out.update(path=report.path, base=report.base)
    return out


def _json(kind: str, results: RunResults[Any]) -> dict[str, Any]:
    """The JSON of the report's results ``kind`` as the page embeds it (``html.bounded``)."""
    return cast(dict[str, Any], orjson.loads(dumps(html.bounded(kind, results))))


def _plot_name(part: Part) -> str | None:
    """The name of a part's plot in the Markdown report's files: its function's."""
    return None if part.plot is None else part.plot.rpartition(":")[2]


def _part_runs(report: ReportResult) -> dict[str, dict[str, Any]]:
    """The JSON run of each question's part of ``report`` with a Markdown section (that the
    run has), as the page embeds it, by name."""
    return {
        name: _json(name, found)["runs"][0]
        for name, part in registered_parts()
        if part.markdown and (found := report.result(name)) is not None
    }


def image_names(stem: str, report: ReportResult) -> dict[str, str]:
    """Return the file name of each plot of a Markdown ``report``: ``<stem>.<plot>.png``
    (a question's part's plot: its function's name, ``roofline``)."""
    names = ["timeline", "base-timeline", "histogram"] if report.base else ["timeline", "histogram"]
    drawn = dict(registered_parts())
    names += [plot for name in _part_runs(report) if (plot := _plot_name(drawn[name]))]
    return {n: f"{stem}.{n}.png" for n in names}


# The Markdown report's parts share one PR comment's budget (render/budget.py), warnings and
# the plots' lines taking the rest.
SHARES = {"diff": 18_000, "gaps": 24_000, "ops": 14_000}


def markdown(
    report: ReportResult, stem: str, *, images: bool = True
) -> tuple[str, dict[str, bytes]]:
    """Return the Markdown of ``report`` and its plots (PNG bytes by file name, each
    ``<stem>.<plot>.png``, ``image_names``; none without ``images``)."""
    names = image_names(stem, report) if images else {}
    path, base = report.path, report.base
    parts = [
        f"# traceana report: {inert_markdown(path)}"
        + (f" (base: {inert_markdown(base)})" if base else "")
    ]
    parts += _warnings(report)
    runs = _part_runs(report)
    parts += [
        f"**Next:** {inert_markdown(run[part.headline])}"
        for name, part in registered_parts()
        if part.headline and (run := runs.get(name)) and run.get(part.headline)
    ]
    if base and report.diff is not None:
        parts.append(text.render_markdown(report.diff, budget=SHARES["diff"]).rstrip())
    parts.append(_plots(report, names))
    # the warnings open the report, not its gaps and ops sections too
    parts.append(text.render_markdown(_listed(report), budget=SHARES["gaps"]).rstrip())
    ops = replace(report.ops, warnings=None)
    parts.append(text.render_markdown(ops, budget=SHARES["ops"]).rstrip())
    parts += _part_sections(report, runs, names)
    if not images:
        return "\n\n".join(parts) + "\n", {}
    drawn = plots.figures(shown(report))
    for name, part in registered_parts():
        plot = _plot_name(part)
        if name in runs and part.plot and plot:
            drawn[plot] = resolve(part.plot)(runs[name])
    return "\n\n".join(parts) + "\n", {names[k]: plots.as_png(drawn[k]) for k in names}


def _part_sections(
    report: ReportResult, runs: dict[str, dict[str, Any]], names: dict[str, str]
) -> list[str]:
    """Return the Markdown sections of the questions' parts of ``report`` that have one (the
    registry's, in the page's order): each drawn from its JSON run (``runs``), with its
    plot's link where ``names`` has it; a part the run lacks for a reason (a device-profile
    export that could not be read) is its title and that note."""
    out = []
    for name, part in registered_parts():
        if part.markdown is None:
            continue
        if name in runs:
            plot = _plot_name(part)
            image = names.get(plot) if plot else None
            out.append(resolve(part.markdown)(runs[name], image))
        elif report.notes.get(name):
            out.append(f"{heading(name, MARKDOWN)}\n\n{inert_markdown(report.notes[name])}")
    return out


def _plots(report: ReportResult, names: dict[str, str]) -> str:
    """Return the Markdown of the plots: their relative links and how to publish them, or
    (no ``names``: ``--no-images``) where the timeline is instead."""
    if not names:
        return (
            "## timeline\n\nNo plots (`--no-images`): the HTML report "
            "(`traceana report PATH -o report.html`) has the timeline, zoomable, and the "
            "gap histogram."
        )
    path, base = report.path, report.base
    files = ", ".join(f"`{n}`" for n in names.values())
    lines = [
        "## timeline",
        f"> The plots are PNG files beside this file ({files}), linked relatively: a "
        "pull-request comment or a CI summary cannot show them so. Commit them beside the "
        ".md, or upload them as the run's artifacts and link those; or write the report "
        "with `--no-images` for text alone.",
        f"![timeline of {path}]({quote(names['timeline'])})",
        *([f"![timeline of {base}]({quote(names['base-timeline'])})"] if base else []),
        "## idle by gap duration\n\nEach bar is the idle time of the device gaps of that "
        "length (not their count), stacked by cause: the few long gaps that hold most of the "
        f"idle show.\n\n![idle time by gap duration]({quote(names['histogram'])})",
    ]
    return "\n\n".join(lines)


def _listed(report: ReportResult) -> RunResults[GapsResult]:
    """Return the gaps of ``report`` as the Markdown renderer shows them: without the
    warnings (the report opens with them), and without the per-lane gaps when there are
    more than a report lists (``TOP_GAPS``; the gaps JSON has them all)."""
    gaps = replace(report.gaps, warnings=None)
    run = gaps.runs[0]
    if run.rows_in("gaps") <= TOP_GAPS:
        return gaps
    return replace(gaps, runs=(replace(run, gaps=run.gaps.clear()),))


def _warnings(report: ReportResult) -> list[str]:
    """Return the Markdown of the run's warnings and the base's (each only when it has some)."""
    shown = [(report.gaps, "warnings"), (report.base_gaps, "warnings of the base")]
    blocks = [
        "\n".join(warning_block(result.warnings[0], MARKDOWN, title)).strip()
        for result, title in shown
        if result is not None and result.warnings and result.warnings[0]
    ]
    return blocks


def files(report: ReportResult, output: Path, *, images: bool = True) -> dict[Path, bytes]:
    """Return what to write for ``report``, by path: the page ``output``, or the .md file
    ``output`` and the PNG files beside it (``format_of`` the output decides); without
    ``images``, no plot is drawn (the page keeps its timeline, drawn by its script)."""
    if format_of(output) == "html":
        return {output: html.render(report, images=images).encode()}
    text_md, drawn = markdown(report, output.stem, images=images)
    return {
        **{output.with_name(name): png for name, png in drawn.items()},
        output: text_md.encode(),
    }
