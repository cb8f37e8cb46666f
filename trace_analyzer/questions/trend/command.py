"""`traceana trend`: idle % and device time over capture time, from a `traceana batch` table
(questions/trend/analysis.py)."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer import atomic
from trace_analyzer.cli.common import (
    Words,
    cli,
    emit,
    handle_errors,
    output_options,
    writing,
)
from trace_analyzer.cli.messages import plain
from trace_analyzer.errors import InputError

# trend --by: ``questions.trend.analysis.GROUPINGS`` and ``OLD_GROUPINGS``, written here so that
# declaring the command imports no polars (tests/cli/test_startup.py holds them equal).
GROUPINGS = ("variant", "backend", "glob", "rank", "device")
OLD_GROUPINGS = {"path-glob": "glob"}


@cli.command()
@click.argument("table", type=click.Path(path_type=Path))
@click.option(
    "--by",
    type=Words(GROUPINGS, OLD_GROUPINGS),
    default="variant",
    show_default=True,
    help="Group runs by capture.json's variant or backend, by which --glob their run id "
    "matches, or split them by rank or by device (batch's device_key). (path-glob: glob's old "
    "name.)",
)
@click.option(
    "--glob",
    "globs",
    multiple=True,
    metavar="PATTERN",
    help="With --by glob: a group per pattern (first match wins), e.g. '*naive*'.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw idle % and device time over time to this .png (the report extra).",
)
@output_options
@handle_errors
def trend(
    table: Path,
    by: str,
    globs: tuple[str, ...],
    plot_path: Path | None,
    fmt: str | None,
    output: Path | None,
) -> None:
    """Idle % and device time over capture time, per group, from a `traceana batch` table.

    A run's time is its capture.json started_at, else its files' modification time.
    -o trend.png draws the plot instead of printing the table.

    \b
    Example:
        traceana trend runs.parquet --by variant -o trend.png
    """
    from trace_analyzer.batch.table import read_table
    from trace_analyzer.questions.trend.analysis import trend as trend_of

    df = read_table(table)
    if df is None:
        raise InputError(table, "no such file")
    result = trend_of(df, str(table), by=by, globs=globs)
    pngs = [p for p in (plot_path, output) if p is not None and p.suffix.lower() == ".png"]
    if pngs:
        from trace_analyzer.questions.trend.plots import trend as trend_plot
        from trace_analyzer.render.json import parsed
        from trace_analyzer.render.plotting import require

        require()
        image = trend_plot(parsed(result))
        for target in pngs:
            with writing(target):
                atomic.replace(target, image)
            click.echo(f"wrote {plain(target)}", err=True)
    if output is None or output.suffix.lower() != ".png":
        emit(result, fmt, output)
