"""The command over the ranks of a run: `traceana ranks` (questions/ranks/analysis.py)."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer.cli.common import Loading, cli, emit, run_command


@cli.command()
@click.option("--step", type=int, help="Only ProfilerStep#N.")
@run_command
def ranks(
    path: Path, step: int | None, fmt: str | None, output: Path | None, loading: Loading
) -> None:
    """Per rank and step: compute against communication, clock offsets, each step's straggler.

    Each step's window is broken down into compute, exposed communication, memory and idle
    time, with the overlap of communication and compute. Communication is NCCL/RCCL kernels
    and Neuron collectives; a rank's clock is aligned on the ends of the collectives all
    ranks share (docs/distributed.md).

    \b
    Example:
        traceana ranks ./dlrm_traces --format markdown
    """
    from trace_analyzer.questions.ranks.analysis import ranks as ranks_of

    emit(loading.analysed(path, lambda p: ranks_of(p, step=step)), fmt, output)
