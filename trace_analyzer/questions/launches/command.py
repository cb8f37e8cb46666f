"""The command over the launches of a run: `traceana launches` (questions/launches/analysis.py)."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer.cli.common import Loading, cli, emit, run_command


@cli.command()
@click.option("--step", type=int, help="Only the launches made in ProfilerStep#N.")
@run_command
def launches(
    path: Path, step: int | None, fmt: str | None, output: Path | None, loading: Loading
) -> None:
    """Per lane: launch latency and delay, queue length over time, time blocked on a full queue.

    A launch is a runtime call (cudaLaunchKernel, hipLaunchKernel, Neuron's
    nrta_execute_schedule) and the device work it launched. Latency is the work's start less
    the call's start, delay less the call's end (HTA's launch delay); the queue holds what
    was launched and has not finished; blocked is the time a CUDA stream's queue was at its
    bound of 1024 (docs/launches.md). JSON holds each lane's queue over time, at most 500
    points a lane.

    \b
    Example:
        traceana launches ./trace_dir --format markdown
    """
    from trace_analyzer.questions.launches.analysis import launches as launches_of

    emit(loading.analysed(path, lambda p: launches_of(p, step=step)), fmt, output)
