"""`traceana report`: one page for one run (questions/report/)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from trace_analyzer import atomic
from trace_analyzer.cli.common import (
    Loading,
    by_rank_options,
    cli,
    handle_errors,
    load_options,
    output_file,
    writing,
)
from trace_analyzer.cli.messages import plain
from trace_analyzer.errors import UsageError

if TYPE_CHECKING:
    from trace_analyzer.questions.report.analysis import ReportResult


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--base",
    type=click.Path(path_type=Path),
    metavar="BASE",
    help="Compare with this run (e.g. before a change): adds the diff and its timeline.",
)
@output_file(
    "File to write: .html (one self-contained page) or .md (Markdown; the plots "
    "go beside it as <name>.<plot>.png)."
)
@click.option(
    "--images/--no-images",
    default=True,
    show_default=True,
    help="Draw the PNG plots (matplotlib). --no-images: a .md of text alone (a PR comment "
    "cannot show relative images), a page without the gap histogram.",
)
@by_rank_options("the same page")
@load_options
@handle_errors
def report(
    path: Path,
    base: Path | None,
    output: Path,
    images: bool,
    jobs: int | None,
    scheduler: str | None,
    loading: Loading,
) -> None:
    """One page for one run: timeline, gap histogram, summary, ops and gaps; with --base, the diff.

    With --jobs or --scheduler, a multi-rank run is read a rank's file at a time and reduced:
    the same page (docs/distributed.md, "report a rank at a time").

    The page embeds the JSON of `gaps`, `ops`, `ranks`, `kernels`, `launches` (and `diff`;
    `engines` when PATH holds device-profile exports), their long lists cut, and shows
    nothing else; its timeline zooms, and it needs no network (docs/report.md). The PNG
    plots need matplotlib: pip install 'traceana[report]' (or --no-images).

    \b
    Example:
        traceana report ./profile_out --base ./before -o report.html
    """
    from trace_analyzer.questions.report import files as report_page
    from trace_analyzer.questions.report import plots

    report_page.format_of(output)
    if images:
        plots.require()
    mapped = jobs is not None or scheduler is not None
    if mapped and base is not None:
        raise UsageError("--jobs and --scheduler do not take --base yet")
    result = _made(loading, path, base, (jobs or 1, scheduler) if mapped else None)
    written = report_page.files(result, output, images=images)
    for target, content in written.items():
        with writing(target):  # a plot beside it replaces a link there, not what it names
            atomic.replace(target, content, through_links=target == output)
    beside = f" and {len(written) - 1} plots beside it" if len(written) > 1 else ""
    click.echo(f"wrote {plain(output)}{beside}", err=True)


def _made(
    loading: Loading, path: Path, base: Path | None, mapped: tuple[int, str | None] | None
) -> ReportResult:
    """The report of ``path`` (with ``base``): a rank at a time where ``mapped`` gives the
    jobs and scheduler and the run can be read so (batch/report.py), else read whole."""
    from trace_analyzer.loading.device import device_of
    from trace_analyzer.model.schema import COLLECTIVES
    from trace_analyzer.questions.report.analysis import report as report_of

    device, note = device_of(path)  # its device-profile exports, for the engines section
    if mapped is not None and not note and not (device and device.profiles):
        from trace_analyzer.batch.report import mapped_report, report_passes

        found = loading.one_by_file(path, report_passes, *mapped)
        if found is not None:
            return mapped_report(str(path), found)
    # args="later": the collectives' groups and sizes (ranks), read for their rows alone
    head = loading.one(path, args=COLLECTIVES)  # several runs: a usage error naming them
    before = None if base is None else loading.one(base)
    return report_of(
        head, before, path=str(path), base_path=None if base is None else str(base),
        device=device, device_note=note,
        base_device=None if base is None else device_of(base)[0],  # below the base's ops
    )  # fmt: skip
