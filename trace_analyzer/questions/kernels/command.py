"""The command over a run's kernels: `traceana kernels` (questions/kernels/analysis.py)."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer.cli.common import Loading, cli, emit, run_command, top_option


@cli.command()
@click.option("--step", type=int, help="Only the work launched in ProfilerStep#N.")
@top_option("kernels per rank")
@run_command
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
    from trace_analyzer.questions.kernels.analysis import kernels as kernels_of
    from trace_analyzer.render.view import View

    emit(loading.analysed(path, lambda p: kernels_of(p, step=step)), fmt, output, View(top=top))
