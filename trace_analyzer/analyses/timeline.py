"""The framework ops a run's timeline draws above its hardware lanes (``traceana report``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import polars as pl

from trace_analyzer.analyses.busy import window_of
from trace_analyzer.analyses.chain import chain_table
from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.core.profile import Profile

OP_COLUMNS = ("event_id", "name", "pid", "tid", "start_ns", "end_ns")


@dataclass(frozen=True, repr=False)
class TimelineResult(RunResult):
    """``framework_ops``: the framework ops in the drawn span, ``start_ns`` to ``end_ns``
    (both None, and no ops, when nothing ran on hardware)."""

    root: str
    start_ns: int | None
    end_ns: int | None
    framework_ops: pl.DataFrame

    csv_table = "framework_ops"

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "framework_ops": self.framework_ops.to_dicts(),
        }

    def main_frame(self) -> pl.DataFrame:
        return self.framework_ops

    def summary_rows(self) -> list[tuple[str, object]]:
        return [("run", self.root), ("start_ns", self.start_ns), ("end_ns", self.end_ns)]

    def __repr__(self) -> str:
        return frame_repr("TimelineResult", run=self.root, framework_ops=self.framework_ops)


def timeline(p: Profile) -> TimelineResult:
    """Return the framework ops the timeline of run ``p`` draws above its hardware lanes.

    The window is the gaps' default one (the hardware span); it starts earlier where an
    execution in it was launched by an op that began before it, so that op is drawn too.
    """
    events = p.events
    w = window_of(events)
    if w is None:
        empty = pl.DataFrame(schema={c: events.schema[c] for c in OP_COLUMNS})
        return TimelineResult(str(p.root), None, None, empty)
    c = chain_table(events, p.edges).filter(
        (pl.col("hw_end_ns") > w.start_ns) & (pl.col("hw_start_ns") < w.end_ns)
    )
    launched = c["op_start_ns"].drop_nulls()
    start = min(w.start_ns, cast(int, launched.min())) if len(launched) else w.start_ns
    ops = (
        events.filter(
            (pl.col("lane_kind") == "framework_op")
            & (pl.col("end_ns") > start)
            & (pl.col("start_ns") < w.end_ns)
        )
        .sort("start_ns", "event_id")
        .select(*OP_COLUMNS)
    )
    return TimelineResult(str(p.root), start, w.end_ns, ops)
