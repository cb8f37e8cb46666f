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
    and Neuron collectives; each collective is matched across ranks by its process group
    and place in it (else by name), with its skew, latency, each rank's wait and its
    bandwidth; a rank's clock is aligned on the ends of the collectives it shares with the
    first rank (docs/distributed.md).

    \b
    Example:
        traceana ranks ./dlrm_traces --format markdown
    """
    from trace_analyzer.model.schema import LATER
    from trace_analyzer.questions.ranks.analysis import ranks as ranks_of

    # the collectives' args (group, sizes) are read for their rows only (collectives.py)
    emit(loading.analysed(path, lambda p: ranks_of(p, step=step), args=LATER), fmt, output)
