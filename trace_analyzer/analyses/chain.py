"""Dependency chains: for every hardware execution, the op, dispatch, runtime and hardware times.

This is Neuron Explorer's dependency chain view as a table, for every execution at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.core.link import METHODS, link
from trace_analyzer.core.profile import Profile
from trace_analyzer.core.schema import text
from trace_analyzer.units import glob_regex

GRAPH_REPLAY = "graph replay"  # the op of kernels replayed from a graph no op launched
PYTHON_LAUNCH = "python launch"  # the op of kernels launched from Python outside every op
# link methods whose parent is a Python caller, not an op: the op is named after it
CALLERS = {"graph": GRAPH_REPLAY, "python": PYTHON_LAUNCH}
MAX_DEPTH = 8  # hardware -> runtime -> stream -> dispatch -> op is 4 hops; margin for more
SCHEDULE, SUBMIT = "nrta_execute_schedule", "nrt_model_submit"

CHAIN_COLUMNS = [
    "hw_event_id",
    "hw_name",
    "lane",
    "step",
    "op",
    "op_event_id",
    "link_method",
    "runtime",
    "op_start_ns",
    "dispatch_start_ns",
    "schedule_start_ns",
    "submit_start_ns",
    "hw_start_ns",
    "hw_end_ns",
    "dispatch_to_schedule_us",
    "schedule_to_hw_us",
    "dispatch_to_hw_us",
    "hw_duration_us",
]


def chain_table(events: pl.DataFrame, edges: pl.DataFrame | None = None) -> pl.DataFrame:
    """Return one row per hardware execution of ``events`` with its chain back to a framework
    op (the columns of ``CHAIN_COLUMNS``), by time.

    ``edges``: the events' edges table (``core.link.link``), linked here when not given.
    ``link_method`` is the least trusted method on the path to the op; it and ``op`` are
    null for an execution that reaches no op (unlinked, still listed).
    """
    edges = link(events) if edges is None else edges
    # the columns a chain shows, not the whole width (at 1 million executions, 0.3 GB)
    hw = (
        events.lazy()
        .filter(pl.col("lane_kind") == "hardware")
        .select("event_id", "step", "lane", "name", "start_ns", "end_ns")
        .collect()
    )
    out = _nearest_ancestors(hw, _ancestors(hw["event_id"], edges), events)
    # Without a dispatch on the path (an Explorer export alone), the op's own dispatch call.
    launched = (
        edges.filter(pl.col("hop") == "launch")
        .join(events.select("event_id", "start_ns"), left_on="dst", right_on="event_id")
        .group_by(op_event_id="src")
        .agg(op_dispatch_ns=pl.col("start_ns").min())
    )
    out = (
        out.join(_runtime_starts(events, edges), on="rt_event_id", how="left")
        .join(launched, on="op_event_id", how="left")
        .with_columns(pl.col("dispatch_start_ns").fill_null(pl.col("op_dispatch_ns")))
    )
    out = out.with_columns(
        dispatch_to_schedule_us=us("dispatch_start_ns", "schedule_start_ns"),
        schedule_to_hw_us=us("schedule_start_ns", "hw_start_ns"),
        dispatch_to_hw_us=us("dispatch_start_ns", "hw_start_ns"),
        hw_duration_us=us("hw_start_ns", "hw_end_ns"),
    )
    return out.select(CHAIN_COLUMNS).sort("hw_start_ns", "hw_event_id")


def _nearest_ancestors(
    hw: pl.DataFrame, ancestors: pl.DataFrame, events: pl.DataFrame
) -> pl.DataFrame:
    """Return per hardware event its nearest op, dispatch, runtime event and runtime call
    among its ``ancestors`` (``_ancestors``), and the least trusted link method to the op."""
    kinds = events.select(
        "event_id",
        "name",
        "start_ns",
        "seq_id",
        "pid",
        kind="lane_kind",
        src=pl.col("source"),
    )
    anc = ancestors.join(kinds, left_on="ancestor", right_on="event_id")

    def nearest(cond: pl.Expr, **cols: str) -> pl.DataFrame:
        return (
            anc.filter(cond)
            .sort("depth")
            .group_by("hw", maintain_order=True)
            .first()
            .select("hw", **cols)
        )

    op = _op_of(nearest)
    dispatch = nearest(
        pl.col("kind").is_in(["framework_dispatch", "runtime"]) & (pl.col("src") != "neuron_rt"),
        dispatch_start_ns="start_ns",
    )
    runtime = nearest(pl.col("src") == "neuron_rt", rt_event_id="ancestor")
    runtime_call = nearest(pl.col("kind") == "runtime", runtime="name")
    return (
        hw.select(
            "step",
            "lane",
            hw="event_id",
            hw_event_id="event_id",
            hw_name="name",
            hw_start_ns="start_ns",
            hw_end_ns="end_ns",
        )
        .join(op, on="hw", how="left")
        .join(dispatch, on="hw", how="left")
        .join(runtime, on="hw", how="left")
        .join(runtime_call, on="hw", how="left")
        .join(_weakest(ancestors, op), on="hw", how="left")
    )


def _op_of(nearest: Callable[..., pl.DataFrame]) -> pl.DataFrame:
    """Return per hardware event its op: the nearest framework op among its ancestors, or the
    function a graph launch was replayed from, named ``graph replay (<function>)``."""
    op = nearest(
        (pl.col("kind") == "framework_op") | pl.col("link_method").is_in(list(CALLERS)),
        op="name",
        op_event_id="ancestor",
        op_start_ns="start_ns",
        op_depth="depth",
        caller="link_method",
    )
    named = pl.col("op")
    for method, label in CALLERS.items():
        named = (
            pl.when(pl.col("caller") == method)
            .then(pl.format(f"{label} ({{}})", "op"))
            .otherwise(named)
        )
    return op.with_columns(op=named).drop("caller")


def us(start: str, end: str) -> pl.Expr:
    """Return the time from column ``start`` to column ``end`` in µs (ns resolution)."""
    return ((pl.col(end) - pl.col(start)) / 1000).round(3)


def _ancestors(hw_ids: pl.Series, edges: pl.DataFrame) -> pl.DataFrame:
    """Return (hw, ancestor, depth, link_method) for every ancestor of every hardware event."""
    parent = edges.select(node="dst", ancestor="src", link_method="link_method")
    level = pl.DataFrame({"hw": hw_ids, "node": hw_ids})
    found = []
    for depth in range(1, MAX_DEPTH + 1):
        level = level.join(parent, on="node").with_columns(depth=pl.lit(depth))
        if level.is_empty():
            break
        found.append(level.select("hw", "ancestor", "depth", "link_method"))
        level = level.select("hw", node="ancestor")
    if not found:
        return pl.DataFrame(
            schema={
                "hw": pl.Int64,
                "ancestor": pl.Int64,
                "depth": pl.Int32,
                "link_method": pl.String,
            }
        )
    return pl.concat(found)


def _weakest(ancestors: pl.DataFrame, op: pl.DataFrame) -> pl.DataFrame:
    """Return per hardware event the least trusted link method on its path to the op."""
    rank = pl.col("link_method").replace_strict(
        METHODS, list(range(len(METHODS))), return_dtype=pl.Int64
    )
    return (
        ancestors.join(op.select("hw", "op_depth"), on="hw")
        .filter(pl.col("depth") <= pl.col("op_depth"))
        .group_by("hw")
        .agg(worst=rank.max())
        .select(
            "hw",
            link_method=pl.col("worst").replace_strict(
                list(range(len(METHODS))), METHODS, return_dtype=pl.String
            ),
        )
    )


def _runtime_starts(events: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Return per Neuron runtime event when the runtime scheduled and submitted its execution.

    The runtime events of one execution are those that link to the same framework event, or,
    where none links (a capture without the framework side), share an ``nrt_sequence_id``.
    """
    up = edges.filter(pl.col("hop").is_in(["runtime", "runtime_op"])).select(
        event_id="dst", framework="src"
    )
    rt = (
        events.filter(pl.col("source") == "neuron_rt")
        .select("event_id", "pid", "seq_id", "name", "start_ns")
        .join(up, on="event_id", how="left")
        .with_columns(
            execution=pl.when(pl.col("framework").is_not_null())
            .then(pl.format("f{}", "framework"))
            .when(pl.col("seq_id").is_not_null())
            .then(pl.format("s{}:{}", "pid", "seq_id"))
        )
        .filter(pl.col("execution").is_not_null())
    )
    starts = rt.group_by("execution").agg(
        schedule_start_ns=pl.col("start_ns").filter(pl.col("name") == SCHEDULE).min(),
        submit_start_ns=pl.col("start_ns").filter(pl.col("name") == SUBMIT).min(),
    )
    return rt.join(starts, on="execution").select(
        "schedule_start_ns", "submit_start_ns", rt_event_id="event_id"
    )


def coverage(chain: pl.DataFrame) -> dict[str, Any]:
    """Return how many hardware executions of ``chain`` (``chain_table``) reach a framework
    op, in all and by method."""
    total = chain.height
    linked = chain.filter(pl.col("op").is_not_null())
    by_method = {m: n for m, n in linked.group_by("link_method").len().rows()}
    return {
        "hardware_executions": total,
        "linked": linked.height,
        "linked_pct": round(100 * linked.height / total, 2) if total else None,
        "by_method": {m: by_method[m] for m in METHODS if m in by_method},
        "unlinked": total - linked.height,
    }


def select(
    chain: pl.DataFrame, *, op: str | None = None, step: int | None = None, unlinked: bool = False
) -> pl.DataFrame:
    """Return the rows of ``chain`` of one ``op`` (a name or a glob such as ``aten::*``), one
    ``step``, or, with ``unlinked``, only the executions that reach no op."""
    if op is not None:
        chain = chain.filter(text("op").str.contains(glob_regex(op)))
    if step is not None:
        chain = chain.filter(pl.col("step") == step)
    if unlinked:
        chain = chain.filter(pl.col("op").is_null())
    return chain


def group_by_op(chain: pl.DataFrame) -> pl.DataFrame:
    """Return one row per op of ``chain``: executions, the least trusted link method, and
    the mean of each hop, in µs."""
    hops = ["dispatch_to_schedule_us", "schedule_to_hw_us", "dispatch_to_hw_us", "hw_duration_us"]
    trust = pl.col("link_method").replace_strict(
        METHODS, list(range(len(METHODS))), default=None, return_dtype=pl.Int64
    )
    return (
        chain.group_by("op")
        .agg(
            pl.len().alias("executions"),
            trust.max().alias("worst"),
            *(pl.col(h).mean().round(3) for h in hops),
        )
        .with_columns(
            link_method=pl.col("worst").replace_strict(
                list(range(len(METHODS))), METHODS, default=None, return_dtype=pl.String
            )
        )
        .select("op", "executions", "link_method", *hops)
        .sort("hw_duration_us", "op", descending=[True, False], nulls_last=True)
    )


@dataclass(frozen=True, repr=False)
class ChainResult(RunResult):
    """The dependency chains of one run's hardware executions.

    ``table``: the selected rows, one per execution (or per op with ``by_op``): op, hardware
    event, lane, link method and the hops in µs (docs/graph.md). ``coverage``: how many of
    the run's executions reach an op, in all and by method (of the whole run, not only the
    selection). ``start_ns``: the first execution's start, what the text tables count from.
    """

    root: str
    start_ns: int | None
    coverage: dict[str, Any]
    table: pl.DataFrame

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "start_ns": self.start_ns,
            "coverage": self.coverage,
            "rows": self.table.to_dicts(),
        }

    def main_frame(self) -> pl.DataFrame:
        return self.table

    def summary_rows(self) -> list[tuple[str, object]]:
        return [("run", self.root), ("rows", self.table.height), *self.coverage.items()]

    def __repr__(self) -> str:
        return frame_repr("ChainResult", run=self.root, rows=self.table, **_linked(self.coverage))


def _linked(cov: dict[str, Any]) -> dict[str, object]:
    return {"linked_pct": cov["linked_pct"]}


def chains(
    profile: Profile,
    *,
    op: str | None = None,
    step: int | None = None,
    unlinked: bool = False,
    by_op: bool = False,
    limit: int | None = None,
) -> ChainResult:
    """Return the chain of every hardware execution of one run (``profile``) back to its
    framework op.

    ``op``: only this op (a name or a glob such as ``aten::*``). ``step``: only executions
    in ProfilerStep#N. ``unlinked``: only those that reach no op. ``by_op``: one row per op
    (executions and the mean of each hop). ``limit``: the first N rows only.
    """
    chain = chain_table(profile.keyed, profile.edges)
    rows = select(chain, op=op, step=step, unlinked=unlinked)
    rows = group_by_op(rows) if by_op else rows
    return ChainResult(
        root=str(profile.root),
        start_ns=chain["hw_start_ns"].min(),  # type: ignore[arg-type]
        coverage=coverage(chain),
        table=rows.head(limit) if limit else rows,
    )
