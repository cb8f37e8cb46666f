"""``traceana report``'s files: one self-contained HTML page, or Markdown and its plots.

The report itself (what it shows) is ``questions.report.analysis.report``; the page is html.py; the
Markdown report is the Markdown renderer's diff, gaps and ops plus the plots, which it links
relatively, as PNG files beside the .md file, with a note on publishing them (a pull-request
comment cannot show a relative image), and, when the run has device-profile exports, its
engines and their roofline; ``images=False`` writes the text alone (docs/report.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import orjson

from trace_analyzer.analyses.results import RunResults
from trace_analyzer.errors import UsageError
from trace_analyzer.numbers import DASH, duration, number, percent
from trace_analyzer.questions.gaps.analysis import GapsResult
from trace_analyzer.questions.report import page as html
from trace_analyzer.questions.report import plots, plots_more
from trace_analyzer.questions.report.analysis import ReportResult
from trace_analyzer.questions.report.sections_more import busiest
from trace_analyzer.questions.report.timeline import TOP_GAPS
from trace_analyzer.render import text
from trace_analyzer.render.blocks import (
    MARKDOWN,
    Block,
    Items,
    Table,
    draw,
    heading,
    num_col,
    text_col,
)
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
        k: orjson.loads(dumps(html.bounded(k, getattr(report, k))))
        for k in html.KINDS
        if getattr(report, k)
    }
    out.update(path=report.path, base=report.base)
    return out


def image_names(stem: str, report: ReportResult) -> dict[str, str]:
    """Return the file name of each plot of a Markdown ``report``: ``<stem>.<plot>.png``."""
    names = ["timeline", "base-timeline", "histogram"] if report.base else ["timeline", "histogram"]
    if report.engines is not None:
        names.append("roofline")
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
    if base and report.diff is not None:
        parts.append(text.render_markdown(report.diff, budget=SHARES["diff"]).rstrip())
    parts.append(_plots(report, names))
    # the warnings open the report, not its gaps and ops sections too
    parts.append(text.render_markdown(_listed(report), budget=SHARES["gaps"]).rstrip())
    ops = replace(report.ops, warnings=None)
    parts.append(text.render_markdown(ops, budget=SHARES["ops"]).rstrip())
    engines = _engines_run(report)
    if engines is not None or report.engines_note:
        parts.append(engines_markdown(engines, names.get("roofline"), report.engines_note))
    if not images:
        return "\n\n".join(parts) + "\n", {}
    drawn = plots.figures(shown(report))
    if engines is not None:
        drawn["roofline"] = plots_more.roofline(engines)
    return "\n\n".join(parts) + "\n", {names[k]: plots.as_png(drawn[k]) for k in names}


def _engines_run(report: ReportResult) -> dict[str, Any] | None:
    """The engines JSON of ``report``'s run as the page embeds it (``html.bounded``), or None
    without a device profile."""
    if report.engines is None:
        return None
    doc: dict[str, Any] = orjson.loads(dumps(html.bounded("engines", report.engines)))
    return cast(dict[str, Any], doc["runs"][0])


def engines_markdown(run: dict[str, Any] | None, image: str | None, note: str | None) -> str:
    """Return the Markdown engines section of an engines ``run`` (its JSON): the roofline
    plot's link (``image``), per NEFF its window, MFU, MBU, intensity, verdict, headroom and
    busiest engine, the hints and the Summary's mismatches; or the ``note`` saying why the
    device-profile export could not be read."""
    blocks: list[Block] = [heading("engines", MARKDOWN)]
    if run is None:
        return f"{heading('engines', MARKDOWN)}\n\n{inert_markdown(note or '')}"
    blocks.append("Per NEFF of the run's device-profile exports (`traceana engines PATH` has "
                  "every table; docs/device.md).")  # fmt: skip
    if image:
        blocks.append(f"![roofline]({quote(image)})")
    top = busiest(run)
    rows = [
        [n["neff"], duration(n["window_ns"]) if n["window_ns"] is not None else DASH,
         percent(n["mfu_pct"]), percent(n["mbu_pct"]), number(n["intensity"]),
         n["verdict"] or DASH, DASH if n["headroom"] is None else f"{number(n['headroom'])}×",
         (b := top.get((n["profile"], n["neff"]), {})).get("engine") or DASH,
         percent(b.get("active_pct"))]
        for n in run["neffs"]
    ]  # fmt: skip
    columns = (text_col("NEFF"), num_col("window"), num_col("MFU"), num_col("MBU"),
               num_col("FLOP/byte"), text_col("verdict"), num_col("headroom"),
               text_col("busiest engine"), num_col("active"))  # fmt: skip
    blocks.append(Table(None, columns, rows))
    hints = [inert_markdown(f"{h['neff']}: {h['text']}") for h in run["hints"]]
    mismatches = [inert_markdown(m) for m in run["mismatches"]]
    blocks += [Items("hints", hints, noun="hints")] if hints else []
    blocks += [Items("mismatches with the export's Summary", mismatches)] if mismatches else []
    return "\n\n".join("\n".join(draw([b], MARKDOWN)).strip() for b in blocks)


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
        f"## gap durations\n\n![gap durations]({quote(names['histogram'])})",
    ]
    return "\n\n".join(lines)


def _listed(report: ReportResult) -> RunResults[GapsResult]:
    """Return the gaps of ``report`` as the Markdown renderer shows them: without the
    warnings (the report opens with them), and without the per-lane gaps when there are
    more than a report lists (``TOP_GAPS``; the gaps JSON has them all)."""
    gaps = replace(report.gaps, warnings=None)
    run = gaps.runs[0]
    if run.gaps.height <= TOP_GAPS:
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
