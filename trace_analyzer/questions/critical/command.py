"""The command over a run's critical path: `traceana critical` (questions/critical/analysis.py)."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer.cli.common import Loading, cli, emit, run_command, top_option
from trace_analyzer.errors import UsageError


def renamed_window(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """critical's --window GLOB, --annotation's old name: taken, with a note on stderr (gaps's
    --window is a time range, START:END; docs/output.md, "Conventions")."""
    if value is not None:
        click.echo(
            "traceana: note: critical --window GLOB is now --annotation GLOB, the same windows "
            '(--window is a time range in gaps; docs/output.md, "Conventions")',
            err=True,
        )
    return value


@cli.command()
@click.option("--step", type=int, help="Only ProfilerStep#N (window N with --annotation).")
@click.option(
    "--annotation",
    "window",
    metavar="GLOB",
    help="The windows: each instance of the annotations this names (default: each "
    "ProfilerStep; the whole run where there are none).",
)
@click.option("--window", "old_window", metavar="GLOB", hidden=True, callback=renamed_window)
@click.option("--fuse", metavar="GLOB", help="What if the device work of these ops were fused.")
@click.option(
    "--factor",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="The fused work's time as this factor of its summed time (with --fuse).",
)
@click.option(
    "--remove-host",
    metavar="GLOB",
    help="What if the host time inside these ops, frames or annotations were gone.",
)
@click.option("--async", "sync", metavar="GLOB", help="What if these waiting calls did not wait.")
@click.option("--remove-copy", metavar="GLOB", help="What if these device copies took no time.")
@top_option("fixes and segments")
@run_command
def critical(
    path: Path,
    step: int | None,
    window: str | None,
    old_window: str | None,
    fuse: str | None,
    factor: float,
    remove_host: str | None,
    sync: str | None,
    remove_copy: str | None,
    top: int,
    fmt: str | None,
    output: Path | None,
    loading: Loading,
) -> None:
    """The critical path of each step and a what-if replay that ranks the fixes by time saved.

    The run's recorded dependencies (each thread's calls in order, launches, each device
    lane in order, calls that waited for the device) are replayed: as recorded they give
    each step back; the chain that bounds each step is its critical path; each fix found on
    it (a host range's own time, a waiting call, a copy, CUDA/HIP graphs, warm-up), and each
    one asked for here, is replayed and ranked by the step time it saves
    (docs/critical-path.md).

    \b
    Example:
        traceana critical ./profile_out --fuse 'aten::*' --format markdown
    """
    from trace_analyzer.questions.critical.analysis import Asked
    from trace_analyzer.questions.critical.analysis import critical as critical_of
    from trace_analyzer.render.view import View

    if old_window is not None:
        if window is not None:
            raise UsageError("--window is --annotation's old name: give one of them")
        window = old_window
    asked = Asked(fuse, factor, remove_host, sync, remove_copy)
    emit(
        loading.analysed(path, lambda p: critical_of(p, window=window, step=step, asked=asked)),
        fmt,
        output,
        View(top=top),
    )
