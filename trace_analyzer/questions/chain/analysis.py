"""Dependency chains: for every hardware execution, the op, dispatch, runtime and hardware times.

This is Neuron Explorer's dependency chain view as a table, for every execution at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from trace_analyzer.analyses.results import TableResult, frame_repr
from trace_analyzer.loading.link import METHODS, link
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import by_row as numbered
from trace_analyzer.model.schema import text
from trace_analyzer.questions.chain.paths import CALLERS, nearest, positions, walk
from trace_analyzer.units import glob_regex

GRAPH_REPLAY = CALLERS["graph"]  # the op of kernels replayed from a graph no op launched
PYTHON_LAUNCH = CALLERS["python"]  # the op of kernels launched from Python outside every op
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

    ``edges``: the events' edges table (``loading.link.link``), linked here when not given.
    ``link_method`` is the least trusted method on the path to the op; it and ``op`` are
    null for an execution that reaches no op (unlinked, still listed).
    """
    edges = link(events) if edges is None else edges
    by_row = positions(events, edges)[1]  # the edges by row (the ids: the events' own)
    # the columns a chain shows, not the whole width (at 1 million executions, 0.3 GB)
    hw = (
        events.lazy()
        .with_row_index("_row")
        .filter(pl.col("lane_kind") == "hardware")
        .select(
            "step",
            "lane",
            hw_event_id="event_id",
            hw_name="name",
            hw_start_ns="start_ns",
            hw_end_ns="end_ns",
            _row=pl.col("_row").cast(pl.Int64),
        )
        .collect()
    )
    out = hw.hstack(nearest(walk(events, hw["_row"], by_row), events).drop("hw"))
    # Without a dispatch on the path (an Explorer export alone), the op's own dispatch call.
    launched = _dispatches(events, edges.filter(pl.col("hop") == "launch"))
    out = (
        out.join(_runtime_starts(events, edges, out["rt_event_id"]), on="rt_event_id", how="left")
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


def _dispatches(events: pl.DataFrame, launch: pl.DataFrame) -> pl.DataFrame:
    """Return per op (``op_event_id``) the first start of its dispatch calls
    (``op_dispatch_ns``); ``launch``: the op-to-call edges. The calls' starts are found by row
    where the events are numbered by row (a gather, not a join against every event)."""
    if numbered(events):  # an edge naming an event the table lacks links nothing, as in a join
        launch = launch.filter(pl.col("dst").is_between(0, events.height - 1))
        calls = launch.select("src", start_ns=events["start_ns"].gather(launch["dst"]))
    else:
        calls = launch.join(
            events.select("event_id", "start_ns"), left_on="dst", right_on="event_id"
        )
    return calls.group_by(op_event_id="src").agg(op_dispatch_ns=pl.col("start_ns").min())


def us(start: str, end: str) -> pl.Expr:
    """Return the time from column ``start`` to column ``end`` in µs (ns resolution)."""
    return ((pl.col(end) - pl.col(start)) / 1000).round(3)


def _runtime_starts(events: pl.DataFrame, edges: pl.DataFrame, wanted: pl.Series) -> pl.DataFrame:
    """Return per Neuron runtime event of ``wanted`` (the ids the chains reach) when the runtime
    scheduled and submitted its execution.

    The runtime events of one execution are those that link to the same framework event, or,
    where none links (a capture without the framework side), share an ``nrt_sequence_id``.
    """
    up = (
        edges.lazy()
        .filter(pl.col("hop").is_in(["runtime", "runtime_op"]))
        .select(event_id="dst", framework="src")
        .collect()
    )
    calls, asked = pl.col("name").is_in([SCHEDULE, SUBMIT]), pl.col("_asked")
    rt = _left_join(_counted(events, wanted), up, "event_id").lazy()
    start = pl.col("start_ns")
    firsts = [  # per execution, each call's first start
        start.filter(pl.col("name") == name).min().alias(col)
        for col, name in (("schedule_start_ns", SCHEDULE), ("submit_start_ns", SUBMIT))
    ]

    # the execution a runtime event belongs to: its framework event, else (pid, sequence id)
    # (two passes, each keyed by integers: one key per row, not three with nulls); each
    # execution's firsts found once (a group of its calls), then given to its events that
    # the chains reach (a join)
    def by(part: pl.LazyFrame, execution: list[str]) -> pl.LazyFrame:
        found = part.filter(calls).group_by(execution).agg(firsts)
        return (
            part.filter(asked).select("event_id", *execution).join(found, on=execution, how="left")
        )

    linked = by(rt.filter(pl.col("framework").is_not_null()), ["framework"])
    alone = by(
        rt.filter(
            pl.col("framework").is_null()
            & pl.col("seq_id").is_not_null()
            & pl.col("pid").is_not_null()
        ),
        ["pid", "seq_id"],
    )
    return pl.concat(
        [
            part.select("schedule_start_ns", "submit_start_ns", rt_event_id="event_id")
            for part in (linked, alone)
        ]
    ).collect()


def _left_join(left: pl.DataFrame, right: pl.DataFrame, on: str) -> pl.DataFrame:
    """Return ``left`` joined with ``right`` on ``on`` (left rows kept, in their order). Where
    both sides are in ascending order of ``on`` (the events by row, the edges in their
    children's order: checked here), polars is told so and merges them rather than hashing
    (at 10 million events, 2.5 million rows against 4.2 million: 0.07 s against 0.37 s)."""
    if left[on].is_sorted() and right[on].is_sorted():
        left = left.with_columns(pl.col(on).set_sorted())
        right = right.with_columns(pl.col(on).set_sorted())
    return left.join(right, on=on, how="left")


def _counted(events: pl.DataFrame, wanted: pl.Series) -> pl.DataFrame:
    """Return the Neuron runtime events that count (``event_id``, ``pid``, ``seq_id``, ``name``,
    ``start_ns``, and ``_asked``: whether ``wanted`` names it): the calls whose starts are
    asked for, and the events the chains reach (at 3 million events, 0.4 of 1.2 million: the
    rest belong to an execution but neither start it nor are asked about). Where the events
    are numbered by row, the asked ones are marked by row, not looked up for every event."""
    columns = ("event_id", "pid", "seq_id", "name", "start_ns")
    runtime = pl.col("source") == "neuron_rt"
    calls = pl.col("name").is_in([SCHEDULE, SUBMIT])
    if not numbered(events):
        asked = pl.col("event_id").is_in(wanted.implode())
        return (
            events.lazy().filter(runtime & (calls | asked)).select(*columns, _asked=asked).collect()
        )
    n = events.height
    ids = wanted.drop_nulls()
    ids = ids.filter(ids.is_between(0, n - 1))  # an id the table lacks names nothing
    marked = pl.Series("_asked", [False]).new_from_index(0, n).scatter(ids, True)
    flags = events.select(runtime=runtime, call=runtime & calls)
    named = marked & flags["runtime"]
    rows = (flags["call"] | named).arg_true()
    del marked, flags
    return events.select(pl.col(*columns).gather(rows)).with_columns(named.gather(rows))


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
class ChainResult(TableResult):
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
        root=profile.name,
        start_ns=chain["hw_start_ns"].min(),  # type: ignore[arg-type]
        coverage=coverage(chain),
        table=rows.head(limit) if limit else rows,
    )
