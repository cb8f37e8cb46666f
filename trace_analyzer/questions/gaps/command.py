"""`traceana gaps`: every idle gap, its cause and evidence (questions/gaps/analysis.py).

One option name per meaning (docs/output.md): ``--top N`` is how many rows a command shows.
The analyses and renderers are imported inside the command, when it runs: declaring it
imports no polars, so that its ``--help`` and usage errors are said without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from trace_analyzer.cli.common import (
    ALLOW_EMPTY_GATE,
    Loading,
    by_rank_options,
    cli,
    emit,
    exit_on_failures,
    run_command,
    top_option,
)
from trace_analyzer.errors import UsageError
from trace_analyzer.units import parse_condition, parse_duration

TOP = top_option("gaps and ops")


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
    default=None,
    metavar="DURATION",
    help="A kernel queued before the previous ended that starts within this of its end waited "
    "only for the launch latency (cause launch_latency). Default: measured from the trace on "
    "GPUs (1.5 x the median queued back-to-back start, at least 5us); 5us on Neuron.",
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
@ALLOW_EMPTY_GATE
@click.option(
    "--next",
    "next_fix",
    is_flag=True,
    help="Open with the fix that saves the most per step, replayed on the run's critical path "
    "(traceana critical; it costs that analysis too).",
)
@by_rank_options("the same output")
@run_command
def gaps(
    path: Path,
    step: int | None,
    span: str | None,
    min_gap: str,
    latency: str | None,
    top: int,
    lane_glob: str | None,
    by: str,
    fail_on: tuple[str, ...],
    allow_empty_gate: bool,
    next_fix: bool,
    jobs: int | None,
    scheduler: str | None,
    fmt: str | None,
    output: Path | None,
    loading: Loading,
) -> None:
    """Every idle gap on the hardware lanes, attributed to the op that ended it and a cause.

    Causes: host_dispatch, launch_blocked, event_wait, launch_latency, transfer, sync, graph,
    collective, runtime, uncorrelated (docs/gaps.md), each with its evidence and a next step.
    Durations take units: 5us, 1.2ms, 300ns (0 needs none). --fail-on metrics: idle_pct, gap_max_us,
    gap_p50_us, gap_p90_us, gap_p99_us, gap_count, busy_us, idle_us, executions,
    leading_us, trailing_us, idle_<cause>_us. Exit 1 after printing when one holds; exit 2
    when the gate compared nothing (no hardware executions) unless --allow-empty-gate.

    \b
    Example:
        traceana gaps ./profile_out --format markdown --fail-on 'idle_pct>20'
    """
    from trace_analyzer.loading.device import device_beside
    from trace_analyzer.loading.profile import Profile
    from trace_analyzer.questions.gaps.analysis import METRICS, GapsResult, gaps_runs, gate
    from trace_analyzer.questions.gaps.gate import with_next_fix
    from trace_analyzer.render import View

    conditions = [parse_condition(c, METRICS) for c in fail_on]
    window, min_gap_ns = parse_window(span), parse_duration(min_gap)
    latency_ns = None if latency is None else parse_duration(latency)
    options: dict[str, Any] = {"step": step, "span": window, "min_gap_ns": min_gap_ns,
                               "lanes": lane_glob, "latency_ns": latency_ns}  # fmt: skip

    def analyse(p: Profile) -> GapsResult:  # a run read whole
        g = loading.cache.gaps(p, **options, device=device_beside(p))
        return with_next_fix(g, p, step=step) if next_fix else g

    if jobs is not None or scheduler is not None:
        if next_fix and step is not None:
            raise UsageError("--jobs and --scheduler do not take --next with --step yet")
        measured, warned = loading.gaps_by_rank(
            path, analyse, options, jobs or 1, scheduler, next_fix=next_fix
        )
    else:
        profiles = loading.runs(path)
        measured, warned = [analyse(p) for p in profiles], [p.warnings for p in profiles]
    results = [gate(g, conditions, allow_empty=allow_empty_gate) for g in measured]
    result = gaps_runs(results, str(path), min_gap_ns=min_gap_ns, warnings=warned)
    emit(result, fmt, output, View(by=by, top=top))
    exit_on_failures(result)
