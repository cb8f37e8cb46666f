"""``traceana report``'s files: one self-contained HTML page, or Markdown and its plots.

The report itself (what it shows) is ``analyses.report.report``; the page is html.py; the
Markdown report is the Markdown renderer's diff, gaps and ops plus the plots, which it links
relatively, as PNG files beside the .md file (docs/report.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from trace_analyzer.analyses.report import ReportResult
from trace_analyzer.errors import UsageError
from trace_analyzer.render import html, plots, text
from trace_analyzer.render.json import parsed
from trace_analyzer.render.safe import warning_block
from trace_analyzer.render.tables import MARKDOWN

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
    """Return what the plots draw: each part of ``report`` as its JSON says it."""
    parts = ("gaps", "ops", "timeline", "diff", "base_gaps", "base_timeline")
    out: dict[str, Any] = {k: parsed(getattr(report, k)) for k in parts if getattr(report, k)}
    out.update(path=report.path, base=report.base)
    return out


def image_names(stem: str, report: ReportResult) -> dict[str, str]:
    """Return the file name of each plot of a Markdown ``report``: ``<stem>.<plot>.png``."""
    names = ["timeline", "base-timeline", "histogram"] if report.base else ["timeline", "histogram"]
    return {n: f"{stem}.{n}.png" for n in names}


def markdown(report: ReportResult, stem: str) -> tuple[str, dict[str, bytes]]:
    """Return the Markdown of ``report`` and its plots (PNG bytes by file name, each
    ``<stem>.<plot>.png``, ``image_names``)."""
    images = plots.figures(shown(report))
    names = image_names(stem, report)
    path, base = report.path, report.base
    parts = [f"# traceana report: {path}" + (f" (base: {base})" if base else "")]
    parts += _warnings(report)
    if base and report.diff is not None:
        parts.append(text.render_markdown(report.diff).rstrip())
    parts.append(f"## timeline\n\n![timeline of {path}]({quote(names['timeline'])})")
    if base:
        parts.append(f"![timeline of {base}]({quote(names['base-timeline'])})")
    parts.append(f"## gap durations\n\n![gap durations]({quote(names['histogram'])})")
    # the warnings open the report, not its gaps and ops sections too
    parts.append(text.render_markdown(replace(report.gaps, warnings=None)).rstrip())
    parts.append(text.render_markdown(replace(report.ops, warnings=None)).rstrip())
    return "\n\n".join(parts) + "\n", {names[k]: plots.as_png(images[k]) for k in names}


def _warnings(report: ReportResult) -> list[str]:
    """Return the Markdown of the run's warnings and the base's (each only when it has some)."""
    shown = [(report.gaps, "warnings"), (report.base_gaps, "warnings of the base")]
    blocks = [
        "\n".join(warning_block(result.warnings[0], MARKDOWN, title)).strip()
        for result, title in shown
        if result is not None and result.warnings and result.warnings[0]
    ]
    return blocks


def files(report: ReportResult, output: Path) -> dict[Path, bytes]:
    """Return what to write for ``report``, by path: the page ``output``, or the .md file
    ``output`` and the PNG files beside it (``format_of`` the output decides)."""
    if format_of(output) == "html":
        return {output: html.render(report).encode()}
    text_md, images = markdown(report, output.stem)
    return {
        **{output.with_name(name): png for name, png in images.items()},
        output: text_md.encode(),
    }
