"""`traceana ops`: the offline key_averages() (questions/ops/analysis.py)."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer.cli.common import (
    MARKDOWN_TOP,
    Loading,
    check_output,
    cli,
    emit,
    handle_errors,
    load_options,
    output_options,
    top_option,
)


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@top_option("ops")
@output_options
@load_options
@handle_errors
def ops(
    path: Path, top: int | None, fmt: str | None, output: Path | None, loading: Loading
) -> None:
    """The offline key_averages(): per op, calls, self CPU, device time and device %.

    Device time is the hardware executions linked to each op (docs/graph.md); executions
    that reach no op are the row "(unlinked)". Sorted by device time.

    \b
    Example:
        traceana ops ./profile_out --format markdown
    """
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.questions.ops.analysis import ops as ops_of
    from trace_analyzer.render import View

    check_output(fmt, output)
    from trace_analyzer.loading.device import device_beside

    profiles = loading.runs(path)
    results = tuple(ops_of(p, limit=top, device=device_beside(p)) for p in profiles)
    result = RunResults(str(path), results, warnings=[p.warnings for p in profiles])
    emit(result, fmt, output, View(top=top or MARKDOWN_TOP))
