"""The host's figures of a run without hardware lanes, in a gaps report (``host_summary``):
the step time, the steps, the ops by self CPU time and the commands to run next."""

from __future__ import annotations

from trace_analyzer.numbers import count, duration, from_us, plural
from trace_analyzer.questions.gaps.host_summary import HostRun
from trace_analyzer.render.blocks import TOP_MORE, Block, Items, Style, Table, num_col, text_col


def time_line(host: HostRun) -> str:
    """Return the line that gives the run's time: the median step, or the recorded span."""
    steps = host.steps["step"].to_list()
    if not steps:
        return (
            f"host: no ProfilerStep annotations; recorded span {duration(host.span_ns)} "
            f"(the first event to the last), ops' self CPU time {from_us(host.self_cpu_us)}"
        )
    which = f"ProfilerStep#{steps[0]}" if len(steps) == 1 else (
        f"median of {plural(len(steps), 'step')}, ProfilerStep#{steps[0]}–{steps[-1]}"
    )  # fmt: skip
    return (
        f"host: step time {duration(host.step_time_ns)} ({which}), ops' self CPU time "
        f"{from_us(host.self_cpu_us)}"
    )


def host_blocks(host: HostRun, style: Style, top: int) -> list[Block]:
    """Return the blocks of ``host`` for a terminal or Markdown (``style``), its tables cut to
    ``top`` rows: the time line, the steps (two or more), the ops by self CPU time, and the
    commands to run next (commands, never cut: a path in them is one shell word)."""
    blocks: list[Block] = ["", time_line(host)]
    if host.steps.height > 1:
        rows = [[str(s), duration(ns)] for s, ns in host.steps.head(top).iter_rows()]
        blocks.append(Table("steps", (num_col("step"), num_col("time")), rows,
                            total=host.steps.height, noun="steps", more=TOP_MORE))  # fmt: skip
    if host.ops.height:
        rows = [
            [r["name"], count(r["calls"]), from_us(r["self_cpu_us"]), from_us(r["cpu_total_us"])]
            for r in host.ops.head(top).iter_rows(named=True)
        ]
        columns = (text_col("op", cut=20), num_col("calls"), num_col("self CPU"),
                   num_col("CPU total", drop=1))  # fmt: skip
        blocks.append(Table("ops by self CPU time (as traceana ops)", columns, rows,
                            total=host.ops.height, noun="ops", more=TOP_MORE))  # fmt: skip
    commands = [f"{n['command']}    # {n['what']}" for n in host.next]
    blocks.append(Items("next steps", commands, noun="commands", code=True))
    return blocks
