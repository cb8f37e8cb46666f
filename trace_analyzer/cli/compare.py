"""``traceana diff``: compare two profiles, base then head, and gate on the change."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer.analyses.diff import DIFF_METRICS, DIFF_METRICS_HINT, diff_runs
from trace_analyzer.analyses.diff import diff as compare
from trace_analyzer.analyses.diff import gate as gate_diff
from trace_analyzer.cli.common import (
    Loading,
    cli,
    emit,
    exit_on_failures,
    handle_errors,
    load_options,
    output_options,
)
from trace_analyzer.render import View
from trace_analyzer.units import parse_condition, parse_duration


@cli.command()
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("head", type=click.Path(path_type=Path))
@click.option("--step", type=int, help="Compare ProfilerStep#N of each.")
@click.option(
    "--min-gap",
    default="0ns",
    show_default=True,
    metavar="DURATION",
    help="Leave shorter gaps out of the gap counts.",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="How many changed ops the text reports show.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="EXPR",
    help="Exit 1 when EXPR holds, e.g. 'idle_pct_delta>2', 'device_time_pct_delta>5'.",
)
@output_options
@load_options
@handle_errors
def diff(
    base: Path,
    head: Path,
    step: int | None,
    min_gap: str,
    top: int,
    fail_on: tuple[str, ...],
    fmt: str | None,
    output: Path | None,
    loading: Loading,
) -> None:
    """Compare two profiles (BASE, then HEAD): idle, device time, gaps, ops, causes.

    Each of BASE and HEAD is one run: a profile folder, a trace file, or a run's folder
    inside a larger one. --fail-on metrics: every compared metric (idle_pct, device_time,
    idle_us, executions, gap_count, gap_p50_us, gap_p90_us, gap_max_us, idle_<cause>_us)
    with a suffix: _delta (head − base; pp for idle_pct), _pct_delta (relative %), _base,
    _head, or none (head's value). Exit 1 after printing when one holds.

    \b
    Example:
        traceana diff base/ head/ --format markdown --fail-on 'idle_pct_delta>2'
    """
    conditions = [parse_condition(c, DIFF_METRICS, DIFF_METRICS_HINT) for c in fail_on]
    before, after = loading.one(base), loading.one(head)
    min_gap_ns = parse_duration(min_gap)
    compared = compare(
        before,
        after,
        base_label=str(base),
        head_label=str(head),
        step=step,
        min_gap_ns=min_gap_ns,
        base_gaps=loading.cache.gaps(before, step=step, min_gap_ns=min_gap_ns),
        head_gaps=loading.cache.gaps(after, step=step, min_gap_ns=min_gap_ns),
    )
    result = diff_runs(gate_diff(compared, conditions))
    emit(result, fmt, output, View(top=top))
    exit_on_failures(result)
