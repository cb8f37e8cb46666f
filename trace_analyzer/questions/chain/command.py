"""`traceana chain`: each hardware execution's chain to its op (questions/chain/analysis.py)."""

from __future__ import annotations

import functools
from pathlib import Path

import click

from trace_analyzer.cli.common import (
    Loading,
    cli,
    emit,
    limit_option,
    rows_shown,
    run_command,
    top_option,
)


@cli.command()
@click.option("--op", "op_name", metavar="NAME", help="Only this op (a name or a glob: 'aten::*').")
@click.option("--step", type=int, help="Only executions in ProfilerStep#N.")
@click.option(
    "--by",
    "by",
    type=click.Choice(["execution", "op"]),
    default="execution",
    show_default=True,
    help="One row per hardware execution, or per op.",
)
@click.option("--unlinked", is_flag=True, help="Only the executions that reach no op.")
@top_option("rows")
@limit_option("rows")
@run_command
def chain(
    path: Path,
    op_name: str | None,
    step: int | None,
    by: str,
    unlinked: bool,
    top: int,
    limit: int | None,
    fmt: str | None,
    output: Path | None,
    loading: Loading,
) -> None:
    """The dependency chain of every hardware execution: op, dispatch, schedule, hardware.

    Hops in µs: dispatch→schedule, schedule→hardware start, dispatch→hardware start, and the
    hardware duration, with the link method (the least trusted one on the chain).

    \b
    Example:
        traceana chain ./profile_out --op 'aten::mul' --top 10
    """
    from trace_analyzer.questions.chain.analysis import chains
    from trace_analyzer.render import View

    asked = functools.partial(chains, op=op_name, step=step, unlinked=unlinked, by_op=by == "op")
    result = loading.analysed(path, lambda p: asked(p, limit=limit))
    emit(result, fmt, output, View(top=rows_shown(top, limit)))
