"""The commands that analyse runs and print results: info, gaps, ops, chain.

One option name per meaning (docs/output.md): ``--top N`` is how many rows (gaps, ops,
executions) a command shows; ``--limit`` is its old name in ops and chain, still taken.
The analyses and renderers are imported inside each command, when it runs: declaring the
commands imports no polars, so that their ``--help`` and usage errors are said without it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from trace_analyzer.cli.common import (
    ROWS,
    Loading,
    check_output,
    cli,
    emit,
    exit_on_failures,
    handle_errors,
    load_options,
    output_options,
)
from trace_analyzer.errors import UsageError
from trace_analyzer.units import parse_condition, parse_duration

F = TypeVar("F", bound=Callable[..., Any])

TOP = click.option(
    "--top",
    type=ROWS,
    default=10,
    show_default=True,
    help="How many gaps and ops the text reports show (JSON and CSV have them all).",
)
MARKDOWN_TOP = 10  # rows of an ops or chain Markdown report without --top


def top_option(what: str) -> Callable[[F], F]:
    """--top N (its old name --limit still taken) of ops and chain: only the first N rows, in
    every format; without it every row, the Markdown report showing the first 10."""
    return click.option(
        "--top",
        "--limit",
        "top",
        type=ROWS,
        metavar="N",
        help=f"Only the first N {what} (every format; without it all of them, Markdown "
        f"showing the first {MARKDOWN_TOP}).",
    )


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@output_options
@load_options
@handle_errors
def info(path: Path, fmt: str | None, output: Path | None, loading: Loading) -> None:
    """Show what PATH holds: sources and formats, processes, lanes by kind, NEFF/NTFF files.

    PATH is a profile folder, a single trace file, or a folder of many runs.

    \b
    Example:
        traceana info ./profile_out --format json
    """
    from trace_analyzer.analyses.info import info as describe
    from trace_analyzer.analyses.results import RunResults

    check_output(fmt, output)
    profiles = loading.runs(path)
    emit(RunResults(str(path), tuple(describe(p) for p in profiles)), fmt, output)


def parse_window(text: str | None) -> tuple[int, int] | None:
    """Return --window START:END as (start, end) ns after the run's first event (each a
    duration with its unit, or 0)."""
    if text is None:
        return None
    start, sep, end = text.partition(":")
    if not sep:
        raise UsageError("--window wants START:END, e.g. 0:2ms or 0.5ms:2ms")
    return parse_duration(start), parse_duration(end)


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--step", type=int, help="Window: ProfilerStep#N only.")
@click.option(
    "--window",
    "span",
    metavar="START:END",
    help="Window: from START to END after the run's first event, e.g. 0:100ms, 0.5ms:2ms.",
)
@click.option(
    "--min-gap",
    default="0ns",
    show_default=True,
    metavar="DURATION",
    help="Leave shorter gaps out of the gap list and counts (their time stays idle).",
)
@click.option(
    "--latency",
    default="5us",
    show_default=True,
    metavar="DURATION",
    help="A kernel queued before the previous ended that starts within this of its end waited "
    "only for the launch latency (cause launch_latency).",
)
@TOP
@click.option("--lane", "lane_glob", metavar="GLOB", help="Only hardware lanes matching GLOB.")
@click.option(
    "--by",
    type=click.Choice(["device", "lane", "op", "step"]),
    default="device",
    show_default=True,
    help="The table the text reports lead with (step: one row per ProfilerStep).",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="EXPR",
    help="Exit 1 when EXPR holds for a run, e.g. 'idle_pct>20', 'gap_max_us>500' (the "
    "metric's unit is in its name: gap_max_us is in µs).",
)
@output_options
@load_options
@handle_errors
def gaps(
    path: Path,
    step: int | None,
    span: str | None,
    min_gap: str,
    latency: str,
    top: int,
    lane_glob: str | None,
    by: str,
    fail_on: tuple[str, ...],
    fmt: str | None,
    output: Path | None,
    loading: Loading,
) -> None:
    """Every idle gap on the hardware lanes, attributed to the op that ended it and a cause.

    Causes: host_dispatch, launch_latency, transfer, sync, graph, collective, runtime,
    uncorrelated (docs/gaps.md), each with its evidence and a next step.
    Durations take units: 5us, 1.2ms, 300ns (0 needs none). --fail-on metrics: idle_pct, gap_max_us,
    gap_p50_us, gap_p90_us, gap_p99_us, gap_count, busy_us, idle_us, executions,
    leading_us, trailing_us, idle_<cause>_us. Exit 1 after printing when one holds.

    \b
    Example:
        traceana gaps ./profile_out --format markdown --fail-on 'idle_pct>20'
    """
    from trace_analyzer.analyses.gaps import METRICS, gaps_runs, gate
    from trace_analyzer.render import View

    check_output(fmt, output)
    conditions = [parse_condition(c, METRICS) for c in fail_on]
    window, min_gap_ns = parse_window(span), parse_duration(min_gap)
    latency_ns = parse_duration(latency)
    profiles = loading.runs(path)
    from trace_analyzer.cli.below import with_engines

    results = [
        with_engines(
            gate(
                loading.cache.gaps(
                    p,
                    step=step,
                    span=window,
                    min_gap_ns=min_gap_ns,
                    lanes=lane_glob,
                    latency_ns=latency_ns,
                ),
                conditions,
            ),
            p,
            path,
            loading,
        )
        for p in profiles
    ]
    warned = [p.warnings for p in profiles]
    result = gaps_runs(results, str(path), min_gap_ns=min_gap_ns, warnings=warned)
    emit(result, fmt, output, View(by=by, top=top))
    exit_on_failures(result)


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
    from trace_analyzer.analyses.ops import ops as ops_of
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.render import View

    check_output(fmt, output)
    from trace_analyzer.cli.below import with_engines

    profiles = loading.runs(path)
    results = tuple(with_engines(ops_of(p, limit=top), p, path, loading) for p in profiles)
    result = RunResults(str(path), results, warnings=[p.warnings for p in profiles])
    emit(result, fmt, output, View(top=top or MARKDOWN_TOP))


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
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
@output_options
@load_options
@handle_errors
def chain(
    path: Path,
    op_name: str | None,
    step: int | None,
    by: str,
    unlinked: bool,
    top: int | None,
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
    from trace_analyzer.analyses.chain import chains
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.render import View

    check_output(fmt, output)
    profiles = loading.runs(path)
    results = tuple(
        chains(p, op=op_name, step=step, unlinked=unlinked, by_op=by == "op", limit=top)
        for p in profiles
    )
    result = RunResults(str(path), results, warnings=[p.warnings for p in profiles])
    emit(result, fmt, output, View(top=top or MARKDOWN_TOP))
