"""Links: which event caused which. Framework op -> dispatch/launch -> runtime -> hardware.

Every event gets at most one parent, found by the most trusted key the input carries
(docs/graph.md). The result is the edges table, one row per linked child:

    src (parent event_id), dst (child event_id), hop, link_method, latency_ns

Hops, each tried key by key in order of trust (METHODS):
- ``device`` Kineto device op (kernel, memcpy, memset, sync) -> its launch (runtime or
  PrivateUse1 dispatch): shared ac2g flow id, then equal ``correlation``.
- ``hardware`` Neuron ``neuron_hw`` event -> the runtime event of its execution: shared
  ``flow_id``, then equal ``exec_id``, then the innermost runtime call with a sequence id
  that contains it on the same logical core (time).
- ``runtime`` Neuron runtime event -> framework Stream event: shared ``flow_id``, then
  equal ``nrt_sequence_id``.
- ``stream`` framework Stream event -> its PrivateUse1 dispatch: shared flow id, then equal
  ``correlation``.
- ``launch`` runtime launch or dispatch -> its framework op: ``External id``, then
  ``correlation`` equal to the op's External id (both only when the op contains the call on
  its thread), then the innermost op containing it on its thread (time).
- ``stream_op`` a Stream event with no dispatch -> its op: shared flow id, then
  ``correlation`` equal to the op's External id.
- ``graph`` a CUDA/HIP graph launch (``cudaGraphLaunch``, ``hipGraphLaunch``) that no op
  contains (a replay called from Python, as vLLM and SGLang do) -> the innermost Python
  function or annotation containing it on its thread (method ``graph``); its kernels then
  belong to ``graph replay (<function>)`` (analyses/chain.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple, TypeAlias

import polars as pl

from trace_analyzer.core.intervals import innermost

# Link methods, most trusted first. A chain is as trustworthy as its weakest hop.
METHODS = ("flow_id", "seq_id", "exec_id", "external_id", "correlation", "time", "graph")
# The runtime calls that replay a captured CUDA/HIP graph.
GRAPH_LAUNCH = r"^(cuda|hip|cu)GraphLaunch"
EDGE_SCHEMA = pl.Schema(
    {
        "src": pl.Int64,
        "dst": pl.Int64,
        "hop": pl.String,
        "link_method": pl.String,
        "latency_ns": pl.Int64,
    }
)

KINETO_DEVICE = ("hardware", "transfer", "sync")
LAUNCH_KINDS = ("runtime", "framework_dispatch")


def link(events: pl.DataFrame) -> pl.DataFrame:
    """Return the edges table of a profile's events table."""
    ev = events.select(
        "event_id",
        "name",
        "lane_kind",
        "source",
        "start_ns",
        "end_ns",
        "pid",
        "tid",
        "device",
        "correlation",
        "external_id",
        "seq_id",
        "exec_id",
        "flow_ids",
    ).with_columns(pl.col("lane_kind").cast(pl.String))
    edges: list[pl.DataFrame] = []
    for h in _hops():
        done = pl.concat(edges)["dst"] if edges else pl.Series("dst", [], pl.Int64)
        edges.append(_hop(ev, done, h).with_columns(hop=pl.lit(h.name)))
    out = pl.concat(edges) if edges else pl.DataFrame(schema=EDGE_SCHEMA)
    starts = ev.select("event_id", "start_ns")
    out = (
        out.join(starts.rename({"event_id": "src", "start_ns": "s0"}), on="src")
        .join(starts.rename({"event_id": "dst", "start_ns": "s1"}), on="dst")
        .with_columns(latency_ns=pl.col("s1") - pl.col("s0"))
    )
    return out.select(list(EDGE_SCHEMA)).cast(EDGE_SCHEMA).sort("dst")


# A key of a hop: "flow_id" (a shared flow id), or (child column, parent column) to match.
Key: TypeAlias = Literal["flow_id"] | tuple[str, str]
# A link by time: (children not linked by a key, candidate parents) -> their edges.
TimeLink: TypeAlias = Callable[[pl.DataFrame, pl.DataFrame], pl.DataFrame]


class Hop(NamedTuple):
    """One hop: which events are children, which their parents, and how they are matched."""

    name: str
    child: pl.Expr
    parent: pl.Expr
    keys: list[Key]
    time: TimeLink | None = None


def _hops() -> list[Hop]:
    """Return the hops in the order they are tried (the module docstring lists them)."""
    kind, src = pl.col("lane_kind"), pl.col("source")
    neuron_hw, neuron_rt = src == "neuron_hw", src == "neuron_rt"
    host_call = kind.is_in(LAUNCH_KINDS) & ~neuron_rt
    return [
        Hop(
            "device",
            kind.is_in(KINETO_DEVICE) & ~neuron_hw & ~neuron_rt,
            host_call,
            ["flow_id", ("correlation", "correlation")],
        ),
        Hop(
            "hardware",
            neuron_hw,
            neuron_rt & pl.col("seq_id").is_not_null(),
            ["flow_id", ("exec_id", "exec_id")],
            time=_within_core,
        ),
        Hop(
            "runtime",
            neuron_rt & pl.col("seq_id").is_not_null(),
            kind == "framework_stream",
            ["flow_id", ("seq_id", "seq_id")],
        ),
        Hop(
            "stream",
            kind == "framework_stream",
            kind == "framework_dispatch",
            ["flow_id", ("correlation", "correlation")],
        ),
        Hop("launch", host_call, kind == "framework_op", [], time=_launch_to_op),
        Hop(
            "stream_op",
            kind == "framework_stream",
            kind == "framework_op",
            ["flow_id", ("correlation", "external_id")],
        ),
        Hop(
            "graph",
            host_call & pl.col("name").str.contains(GRAPH_LAUNCH),
            (kind == "annotation") & (src == "framework"),
            [],
            time=_graph_to_function,
        ),
    ]


def _hop(ev: pl.DataFrame, done: pl.Series, hop: Hop) -> pl.DataFrame:
    """Return the edges of one hop: each child not yet linked (not in ``done``) to its parent,
    by the hop's keys in turn, then by time."""
    kids = ev.filter(hop.child & ~pl.col("event_id").is_in(done.implode()))
    found = _by_keys(kids, ev.filter(hop.parent), hop.keys)
    if hop.time is not None:
        rest = kids.filter(~pl.col("event_id").is_in(found["dst"].implode()))
        found = pl.concat([found, hop.time(rest, ev.filter(hop.parent))])
    return found


def _by_keys(kids: pl.DataFrame, parents: pl.DataFrame, keys: list[Key]) -> pl.DataFrame:
    """Return edges found by each key in turn; a child keeps the first key that finds it."""
    found = pl.DataFrame(schema={"src": pl.Int64, "dst": pl.Int64, "link_method": pl.String})
    for key in keys:
        rest = kids.filter(~pl.col("event_id").is_in(found["dst"].implode()))
        if rest.is_empty():
            break
        if isinstance(key, str):  # "flow_id"
            hits = _shared_flow(rest, parents)
            method = "flow_id"
        else:
            child_col, parent_col = key
            hits = (
                rest.filter(pl.col(child_col).is_not_null())
                .join(
                    parents.filter(pl.col(parent_col).is_not_null()),
                    left_on=["pid", child_col],
                    right_on=["pid", parent_col],
                    suffix="_p",
                )
                .select(src="event_id_p", dst="event_id")
            )
            method = child_col
        hits = _one_parent(hits)
        found = pl.concat([found, hits.with_columns(link_method=pl.lit(method))])
    return found


def _shared_flow(kids: pl.DataFrame, parents: pl.DataFrame) -> pl.DataFrame:
    def flows(df: pl.DataFrame) -> pl.DataFrame:
        return (
            df.select("event_id", "pid", "flow_ids")
            .explode("flow_ids")
            .drop_nulls("flow_ids")
            .rename({"flow_ids": "flow"})
        )

    return (
        flows(kids)
        .join(flows(parents), on=["pid", "flow"], suffix="_p")
        .filter(pl.col("event_id") != pl.col("event_id_p"))
        .select(src="event_id_p", dst="event_id")
    )


def _one_parent(hits: pl.DataFrame) -> pl.DataFrame:
    """Return one parent per child: the earliest-listed (lowest event id, i.e. earliest start)."""
    return hits.sort("dst", "src").unique(subset="dst", keep="first", maintain_order=True)


def _within_core(kids: pl.DataFrame, parents: pl.DataFrame) -> pl.DataFrame:
    """Return hardware events -> the innermost runtime call enclosing them on the same core."""
    found = innermost(
        parents.select("pid", "device", start="start_ns", end="end_ns", id="event_id"),
        kids.select("pid", "device", t="start_ns", id="event_id"),
        ["pid", "device"],
    )
    return _edges(found, "time")


def _launch_to_op(kids: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """Return launches -> their op: the op named by External id or correlation when that op
    encloses the launch on its thread, else the innermost op that does."""
    named = (
        ops.filter(pl.col("external_id").is_not_null())
        .unique(subset=["pid", "external_id"], keep="last", maintain_order=True)
        .select(
            "pid", "external_id", op="event_id", op_tid="tid", op_start="start_ns", op_end="end_ns"
        )
    )
    found, rest = (
        [],
        kids.select("event_id", "pid", "tid", "start_ns", "external_id", "correlation"),
    )
    for col in ("external_id", "correlation"):
        hits = (
            rest.join(named, left_on=["pid", col], right_on=["pid", "external_id"])
            .filter(
                (pl.col("tid") == pl.col("op_tid"))
                & pl.col("start_ns").is_between(pl.col("op_start"), pl.col("op_end"))
            )
            .select(src="op", dst="event_id", link_method=pl.lit(col))
        )
        found.append(hits)
        rest = rest.filter(~pl.col("event_id").is_in(hits["dst"].implode()))
    inner = innermost(
        ops.select("pid", "tid", start="start_ns", end="end_ns", id="event_id"),
        rest.select("pid", "tid", t="start_ns", id="event_id"),
        ["pid", "tid"],
    )
    found.append(_edges(inner, "time"))
    return pl.concat(found).cast({"src": pl.Int64, "dst": pl.Int64, "link_method": pl.String})


def _graph_to_function(kids: pl.DataFrame, functions: pl.DataFrame) -> pl.DataFrame:
    """Return graph launches -> the innermost Python function or annotation containing them
    on their thread."""
    found = innermost(
        functions.select("pid", "tid", start="start_ns", end="end_ns", id="event_id"),
        kids.select("pid", "tid", t="start_ns", id="event_id"),
        ["pid", "tid"],
    )
    return _edges(found, "graph")


def _edges(found: pl.DataFrame, method: str) -> pl.DataFrame:
    return found.select(src="parent", dst="id", link_method=pl.lit(method, pl.String))
