"""`traceana ops`: the offline key_averages() (questions/ops/analysis.py)."""

from __future__ import annotations

from pathlib import Path

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
@top_option("ops")
@limit_option("ops")
@run_command
def ops(
    path: Path,
    top: int,
    limit: int | None,
    fmt: str | None,
    output: Path | None,
    loading: Loading,
) -> None:
    """The offline key_averages(): per op, calls, self CPU, device time and device %.

    Device time is the hardware executions linked to each op (docs/graph.md); executions
    that reach no op are the row "(unlinked)". Sorted by device time.

    \b
    Example:
        traceana ops ./profile_out --format markdown
    """
    from trace_analyzer.loading.device import device_beside
    from trace_analyzer.questions.ops.analysis import ops as ops_of
    from trace_analyzer.render import View

    result = loading.analysed(path, lambda p: ops_of(p, limit=limit, device=device_beside(p)))
    emit(result, fmt, output, View(top=rows_shown(top, limit)))
