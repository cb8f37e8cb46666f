"""The command over the ranks of a run: `traceana ranks` (questions/ranks/analysis.py; a rank at
a time with --jobs or --scheduler: batch/ranks.py)."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer.cli.common import Loading, by_rank_options, cli, emit, run_command


@cli.command()
@click.option("--step", type=int, help="Only ProfilerStep#N.")
@by_rank_options("the same output")
@run_command
def ranks(
    path: Path,
    step: int | None,
    jobs: int | None,
    scheduler: str | None,
    fmt: str | None,
    output: Path | None,
    loading: Loading,
) -> None:
    """Per rank and step: compute against communication, clock offsets, each step's straggler.

    Each step's window is broken down into compute, exposed communication, memory and idle
    time, with the overlap of communication and compute. Communication is NCCL/RCCL kernels
    and Neuron collectives; each collective is matched across ranks by its process group
    and place in it (else by name), with its skew, latency, each rank's wait and its
    bandwidth; a rank's clock is aligned on the ends of the collectives it shares with the
    first rank (docs/distributed.md).

    With --jobs or --scheduler, each trace file is read alone where it is analysed and only
    its summary comes back: the same result, without the whole run in one process.

    \b
    Example:
        traceana ranks ./dlrm_traces --format markdown
        traceana ranks ./traces_1024_ranks --jobs 8
    """
    if jobs is None and scheduler is None:
        from trace_analyzer.model.schema import COLLECTIVES
        from trace_analyzer.questions.ranks.analysis import ranks as ranks_of

        # the collectives' args (group, sizes) are read for their rows only (collectives.py)
        analysed = loading.analysed(path, lambda p: ranks_of(p, step=step), args=COLLECTIVES)
        emit(analysed, fmt, output)
        return
    emit(loading.by_rank(path, step=step, jobs=jobs or 1, scheduler=scheduler), fmt, output)
