"""Links: which event caused which. Framework op -> dispatch/launch -> runtime -> hardware.

Every event gets at most one parent, found by the most trusted key the input carries
(docs/graph.md). The result is the edges table, one row per linked child:

    src (parent event_id), dst (child event_id), hop, link_method, latency_ns

Hops, each tried key by key in order of trust (METHODS):
- ``device`` Kineto device op (kernel, memcpy, memset, sync) -> its launch (runtime or
  PrivateUse1 dispatch): shared ac2g flow id, then equal ``correlation``.
- ``runtime`` Neuron runtime event -> the framework Stream event of its execution: a shared
  framework-side flow id, then equal ``nrt_sequence_id``, then a flow id of one equal to the
  other's ``nrt_sequence_id`` (the framework-side flow id is the sequence id, §3.5).
- ``runtime_op`` the same keys, to a framework op or dispatch, for a runtime event no Stream
  event matches (an export whose framework side is the op rows alone).
- ``hardware`` Neuron ``neuron_hw`` event -> the runtime event of its execution: a shared
  flow id, then equal ``exec_id``, then a flow id of one equal to the other's ``exec_id``,
  then the innermost runtime call that links upward (or has a sequence id) containing it on
  the same logical core (time). Among several runtime events with the key, the one that
  links on to the framework side (the bridging ``kbl_exec_wait``) wins.
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
  belong to ``graph replay (<function>)`` (questions/chain/analysis.py).
- ``python`` any other launch no op contains (a custom or Triton kernel launched from
  Python, outside every aten op) -> the innermost Python function or annotation containing
  it on its thread, built-in frames, Triton's launcher and ``ProfilerStep#N`` skipped
  (method ``python``); its kernels
  belong to ``python launch (<function>)``. Only launches of a device op are linked so.

The Neuron hops are the Dependency Chain Viewer's model (docs/graph.md): events that share
a flow id are connected, whatever their lane and however many flow ids they hold; the keys
stand in where flows are absent. A runtime event's hardware-side flow ids (those a
``neuron_hw`` event also holds) are not used to find its framework parent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple, TypeAlias

import polars as pl

from trace_analyzer.loading.link_time import caller, launch_to_op, within_core
from trace_analyzer.model.schema import Text, by_row, matching

# Link methods, most trusted first. A chain is as trustworthy as its weakest hop.
METHODS = (
    "flow_id",
    "seq_id",
    "exec_id",
    "external_id",
    "correlation",
    "time",
    "graph",
    "python",
)
# Frames that do not name who launched a kernel: Python built-ins (Triton's ``launch``), the
# frames of Triton's own launcher (triton/runtime, triton/backends, triton/compiler: jit.py
# ``run``, driver.py ``__call__``), and the profiler's step (its number differs from step to
# step and from run to run).
NOT_CALLERS = r"^<built-in|^ProfilerStep#\d+$|(^|[/\\])triton[/\\](runtime|backends|compiler)[/\\]"
# The runtime calls that replay a captured CUDA/HIP graph.
GRAPH_LAUNCH = r"^(cuda|hip|cu)GraphLaunch"
EDGE_SCHEMA = pl.Schema(
    {
        "src": pl.Int64(),
        "dst": pl.Int64(),
        "hop": Text,  # few distinct values: 4 bytes an edge (model/schema.py, Text)
        "link_method": Text,
        "latency_ns": pl.Int64(),
    }
)

KINETO_DEVICE = ("hardware", "transfer", "sync")
LAUNCH_KINDS = ("runtime", "framework_dispatch")


def link(events: pl.DataFrame) -> pl.DataFrame:
    """Return the edges table of a profile's events table.

    The hops work on row positions: which events are linked already is a mask over the rows
    (one pass each hop, not a membership test of every row against every edge so far). The
    profile's table is numbered by row (``schema.numbered``); another table's ids are put back
    on the edges at the end."""
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
    )
    ids = ev["event_id"]
    numbered = by_row(ev)
    if not numbered:
        ev = ev.with_columns(event_id=pl.int_range(pl.len(), dtype=pl.Int64))
    done = pl.Series("_done", [False], pl.Boolean).new_from_index(0, ev.height)
    hops = _hops(ev["name"])
    # Each hop's children and parents as masks, all in one pass over the table: a hop with
    # no child left or no parent is skipped without filtering the table.
    masks = ev.select(
        *(h.child.alias(f"child{i}") for i, h in enumerate(hops)),
        *(h.parent.alias(f"parent{i}") for i, h in enumerate(hops)),
    )
    other: dict[str, pl.DataFrame] = {}  # (pid, flow) pairs of each hop's other side, once
    edges: dict[str, pl.DataFrame] = {}
    for i, h in enumerate(hops):
        child = masks[f"child{i}"] & ~done
        if h.parents_of is not None:  # children: the parents of that hop's edges only
            if h.parents_of not in edges:
                continue
            child = child & _mask(ev.height, edges[h.parents_of]["src"])
        parent = masks[f"parent{i}"]
        if not child.any() or not parent.any():
            continue
        found = _hop(ev.with_columns(done), child, parent, h, other)
        edges[h.name] = found.with_columns(hop=pl.lit(h.name))
        done = done | _mask(ev.height, found["dst"])
    out = pl.concat(edges.values()) if edges else pl.DataFrame(schema=EDGE_SCHEMA)
    starts = ev["start_ns"]
    out = out.with_columns(latency_ns=starts.gather(out["dst"]) - starts.gather(out["src"]))
    if not numbered:
        out = out.with_columns(src=ids.gather(out["src"]), dst=ids.gather(out["dst"]))
    return out.select(list(EDGE_SCHEMA)).cast(EDGE_SCHEMA).sort("dst")


def _mask(n: int, rows: pl.Series) -> pl.Series:
    """Return a mask of ``n`` rows, true at the positions ``rows``."""
    return pl.Series("_done", [False], pl.Boolean).new_from_index(0, n).scatter(rows, True)


# A key of a hop: "flow_id" (a shared flow id), or (child column, parent column) to match.
Key: TypeAlias = Literal["flow_id"] | tuple[str, str]
# A link by time: (children not linked by a key, candidate parents) -> their edges.
TimeLink: TypeAlias = Callable[[pl.DataFrame, pl.DataFrame], pl.DataFrame]


# The Neuron keys: a runtime event to its framework event, a hardware event to its runtime
# event. A ``flow_ids`` side matches any of the event's flow ids (docs/graph.md).
TO_FRAMEWORK: list[Key] = [
    "flow_id",
    ("seq_id", "seq_id"),
    ("flow_ids", "seq_id"),
    ("seq_id", "flow_ids"),
]
TO_RUNTIME: list[Key] = [
    "flow_id",
    ("exec_id", "exec_id"),
    ("flow_ids", "exec_id"),
    ("exec_id", "flow_ids"),
]


class Hop(NamedTuple):
    """One hop: which events are children, which their parents, and how they are matched."""

    name: str
    child: pl.Expr
    parent: pl.Expr
    keys: list[Key]
    time: TimeLink | None = None
    # events whose flow ids, held by a child too, are not the child's link to this parent
    other_side: pl.Expr | None = None
    # parents that link on upward (a child of an earlier hop) win over those that do not;
    # the time rule considers only them and runtime calls with a sequence id
    prefer_linked: bool = False
    # only events that are parents in this earlier hop's edges are children here
    parents_of: str | None = None


def _hops(names: pl.Series) -> list[Hop]:
    """Return the hops in the order they are tried (the module docstring lists them), for a
    table whose name column is ``names``."""
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
        Hop("runtime", neuron_rt, kind == "framework_stream", TO_FRAMEWORK, other_side=neuron_hw),
        Hop(
            "runtime_op",
            neuron_rt,
            kind.is_in(["framework_op", "framework_dispatch"]),
            TO_FRAMEWORK,
            other_side=neuron_hw,
        ),
        Hop(
            "hardware",
            neuron_hw,
            neuron_rt,
            TO_RUNTIME,
            time=within_core,
            prefer_linked=True,
        ),
        Hop(
            "stream",
            kind == "framework_stream",
            kind == "framework_dispatch",
            ["flow_id", ("correlation", "correlation")],
        ),
        Hop("launch", host_call, kind == "framework_op", [], time=launch_to_op),
        Hop(
            "stream_op",
            kind == "framework_stream",
            kind == "framework_op",
            ["flow_id", ("correlation", "external_id")],
        ),
        Hop(
            "graph",
            host_call & matching(names, GRAPH_LAUNCH),
            (kind == "annotation") & (src == "framework"),
            [],
            time=caller("graph"),
        ),
        Hop(
            "python",
            host_call,
            (kind == "annotation") & (src == "framework") & ~matching(names, NOT_CALLERS),
            [],
            time=caller("python"),
            parents_of="device",
        ),
    ]


def _hop(
    ev: pl.DataFrame,
    child: pl.Series,
    parent: pl.Series,
    hop: Hop,
    others: dict[str, pl.DataFrame],
) -> pl.DataFrame:
    """Return the edges of one hop: each child (``child``: those not yet linked) to its parent
    (among ``parent``), by the hop's keys in turn, then by time. ``_done``: the events linked
    by earlier hops; ``others``: the other sides' flows found so far, by the expression that
    selects them."""
    kids = ev.filter(child)
    if hop.time is None:  # only a child that holds one of the hop's keys can be linked
        held = {"flow_ids" if k == "flow_id" else k[0] for k in hop.keys}
        kids = kids.filter(pl.any_horizontal(pl.col(c).is_not_null() for c in held))
        if kids.is_empty():
            return pl.DataFrame(schema={"src": pl.Int64, "dst": pl.Int64, "link_method": pl.String})
    parents = ev.filter(parent)
    # (pid, flow) pairs the children's flows may not link by: the other side's
    other = None
    if hop.other_side is not None:
        side = str(hop.other_side)
        if side not in others:
            others[side] = _flows(ev.filter(hop.other_side)).select("pid", "flow").unique()
        other = others[side]
    found = _by_keys(kids, parents, hop.keys, other, hop.prefer_linked)
    if hop.time is not None:
        rest = kids.filter(~pl.col("event_id").is_in(found["dst"].implode()))
        if hop.prefer_linked:
            parents = parents.filter(pl.col("_done") | pl.col("seq_id").is_not_null())
        if not rest.is_empty() and not parents.is_empty():  # nothing left: no time rule
            found = pl.concat([found, hop.time(rest, parents)])
    return found


def _by_keys(
    kids: pl.DataFrame,
    parents: pl.DataFrame,
    keys: list[Key],
    other: pl.DataFrame | None,
    prefer_linked: bool,
) -> pl.DataFrame:
    """Return edges found by each key in turn; a child keeps the first key that finds it.

    A key side named ``flow_ids`` matches any of the event's flow ids; the method is then
    named after the other side's key (the flow stands for it)."""
    found = pl.DataFrame(schema={"src": pl.Int64, "dst": pl.Int64, "link_method": pl.String})
    for key in keys:
        rest = kids.filter(~pl.col("event_id").is_in(found["dst"].implode()))
        if rest.is_empty():
            break
        if isinstance(key, str):  # "flow_id"
            child_col, parent_col = "flow", "flow"
        else:
            child_col, parent_col = (("flow" if c == "flow_ids" else c) for c in key)
        left = (
            _flows(rest, other)
            if child_col == "flow"
            else rest.select("event_id", "pid", child_col)
        )
        right = (
            _flows(parents)
            if parent_col == "flow"
            else parents.select("event_id", "pid", parent_col)
        )
        hits = (
            left.drop_nulls(child_col)
            .join(
                right.drop_nulls(parent_col),
                left_on=["pid", child_col],
                right_on=["pid", parent_col],
                suffix="_p",
            )
            .filter(pl.col("event_id") != pl.col("event_id_p"))
            .select(src="event_id_p", dst="event_id")
        )
        method = (
            "flow_id"
            if child_col == parent_col == "flow"
            else (parent_col if child_col == "flow" else child_col)
        )
        hits = _one_parent(hits, kids, parents) if prefer_linked else _first_parent(hits)
        found = pl.concat([found, hits.with_columns(link_method=pl.lit(method))])
    return found


def _flows(df: pl.DataFrame, other: pl.DataFrame | None = None) -> pl.DataFrame:
    """Return (event_id, pid, flow): one row per flow id of each event, less ``other``'s."""
    out = (
        df.select("event_id", "pid", "flow_ids")
        .explode("flow_ids")
        .drop_nulls("flow_ids")
        .rename({"flow_ids": "flow"})
    )
    return out if other is None else out.join(other, on=["pid", "flow"], how="anti")


def _first_parent(hits: pl.DataFrame) -> pl.DataFrame:
    """Return one parent per child: the earliest-listed (lowest event id, i.e. earliest start)."""
    return hits.sort("dst", "src").unique(subset="dst", keep="first", maintain_order=True)


def _one_parent(hits: pl.DataFrame, kids: pl.DataFrame, parents: pl.DataFrame) -> pl.DataFrame:
    """Return one parent per child: first one that links on upward (``_done``), then one whose
    span holds the child's start (the runtime call that waits for a hardware execution), then
    the earliest-listed."""
    t = kids.select(dst="event_id", t="start_ns")
    span = parents.select(src="event_id", s0="start_ns", s1="end_ns", _linked="_done")
    return (
        hits.join(t, on="dst")
        .join(span, on="src")
        .with_columns(
            _loose=~pl.col("_linked"),
            _outside=~pl.col("t").is_between(pl.col("s0"), pl.col("s1")),
        )
        .sort("dst", "_loose", "_outside", "src")
        .unique(subset="dst", keep="first", maintain_order=True)
        .select("src", "dst")
    )
