"""The command over a run's kernels: `traceana kernels` (questions/kernels/analysis.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from trace_analyzer.cli.common import (
    ROWS,
    Loading,
    check_output,
    cli,
    emit,
    handle_errors,
    load_options,
    output_options,
)

if TYPE_CHECKING:
    pass


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--step", type=int, help="Only the work launched in ProfilerStep#N.")
@click.option(
    "--top",
    type=ROWS,
    default=10,
    show_default=True,
    help="How many kernels per rank the text reports show (JSON and CSV have them all).",
)
@output_options
@load_options
@handle_errors
def kernels(
    path: Path,
    step: int | None,
    top: int,
    fmt: str | None,
    output: Path | None,
    loading: Loading,
) -> None:
    """Per rank, the kernels (Neuron: NEFFs) by total device time, with their kind and spread.

    Each kernel's count, total, share of the rank's device work, mean, p50, p95, max and
    min, and whether it is compute, communication or memory; the time per kind beside it.
    On Neuron every execution is named after its NEFF (docs/kernels.md).

    \b
    Example:
        traceana kernels ./profile_out --top 20 --format markdown
    """
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.questions.kernels.analysis import kernels as kernels_of
    from trace_analyzer.render.view import View

    check_output(fmt, output)
    profiles = loading.runs(path)
    results = tuple(kernels_of(p, step=step) for p in profiles)
    warnings = [p.warnings for p in profiles]
    emit(RunResults(str(path), results, warnings=warnings), fmt, output, View(top=top))
