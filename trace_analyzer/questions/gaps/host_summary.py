"""What a run without hardware lanes shows of its host (docs/gaps.md, "Host-only runs"): the
step time, the ops by self CPU time, and what to run next.

A run that records host activity alone (a CPU capture, a GPU run whose device was not
recorded) has no gap to measure. What it does have is the time the host took per step
(``ProfilerStep#N``, each from its first start to its last end, as ``--step`` measures it;
the recorded span where the run has no steps) and where that time went, op by op: the self
CPU time of ``traceana ops``, taken from its own table (``questions/ops/analysis``), not
computed again here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from trace_analyzer.inputs.neff import shell_word
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import text
from trace_analyzer.questions.ops.analysis import ops, ops_table

STEP = r"^ProfilerStep#(\d+)$"
OP_COLUMNS = ("name", "calls", "self_cpu_us", "cpu_total_us")  # ops' own, device ones left out


def step_lengths(events: pl.DataFrame) -> pl.DataFrame:
    """Return per ``ProfilerStep#N`` of ``events`` its number and length (``step``,
    ``duration_ns``: its first start to its last end), by step; no rows without steps."""
    return (
        events.lazy()
        .select(
            step=text("name").str.extract(STEP).cast(pl.Int64),
            start=pl.col("start_ns"),
            end=pl.col("end_ns"),
        )  # fmt: skip
        .drop_nulls("step")
        .group_by("step")
        .agg(duration_ns=pl.col("end").max() - pl.col("start").min())
        .sort("step")
        .collect()
    )


@dataclass(frozen=True)
class HostRun:
    """The host's figures of a run without hardware lanes.

    ``steps``: per ProfilerStep its length (``step_lengths``); ``span_ns``: the recorded span,
    the first event's start to the last end; ``ops``: ``traceana ops``' table (calls, self CPU,
    CPU total; µs) sorted by self CPU time; ``next``: what to run for more, each a ``command``
    and ``what`` it gives."""

    steps: pl.DataFrame
    span_ns: int
    ops: pl.DataFrame
    next: tuple[dict[str, str], ...]

    @property
    def step_time_ns(self) -> int | None:
        """The median step length (None without steps)."""
        median = self.steps["duration_ns"].median() if self.steps.height else None
        return None if median is None else round(float(median))  # type: ignore[arg-type]

    @property
    def self_cpu_us(self) -> float:
        """The ops' self CPU time, summed (µs): the host time inside ops."""
        return round(float(self.ops["self_cpu_us"].sum()), 3)

    def to_json(self) -> dict[str, Any]:
        """Return the ``host`` object of a gaps run's JSON (docs/gaps.md)."""
        return {
            "step_time_ns": self.step_time_ns,
            "steps": self.steps.to_dicts(),
            "span_ns": self.span_ns,
            "self_cpu_us": self.self_cpu_us,
            "ops": self.ops.to_dicts(),
            "next": list(self.next),
        }


def host_run(profile: Profile | pl.DataFrame) -> HostRun | None:
    """Return the host's figures of ``profile``, a run without hardware lanes (or its events
    table); None when it records no op and no step (nothing on the host to show)."""
    events = profile.events if isinstance(profile, Profile) else profile
    steps = step_lengths(events)
    has_ops = events.select((pl.col("lane_kind") == "framework_op").any()).item()
    if not (has_ops or steps.height):
        return None
    table = ops(profile).table if isinstance(profile, Profile) else ops_table(events)
    by_self = table.select(OP_COLUMNS).sort(["self_cpu_us", "name"], descending=[True, False])
    span = events.select(pl.col("end_ns").max() - pl.col("start_ns").min()).item()
    where = _where(profile) if isinstance(profile, Profile) else "PATH"
    return HostRun(steps, int(span), by_self, _next(where, bool(steps.height), bool(has_ops)))


def _where(profile: Profile) -> str:
    """The arguments that name the run ``profile`` to another command: its root (one word for
    a shell, safe to print: ``shell_word``), with ``--run`` for a part of a folder
    (loading/parts.py)."""
    run = profile.run
    root = shell_word(run.root)
    return root if run.part is None else f"{root} --run {shell_word(run.part)}"


def _next(where: str, steps: bool, has_ops: bool) -> tuple[dict[str, str], ...]:
    """What to run for more of the host: ``ops`` (every op) where there are ops, and
    ``critical`` where there are steps to replay (without steps it has no window)."""
    out = []
    if has_ops:
        out.append({"command": f"traceana ops {where}",
                    "what": "every op: calls, self CPU time and CPU total"})  # fmt: skip
    if steps:
        out.append({"command": f"traceana critical {where}",
                    "what": "each step's critical path on the host, and the fixes ranked by "
                    "the time they save"})  # fmt: skip
    return tuple(out)
