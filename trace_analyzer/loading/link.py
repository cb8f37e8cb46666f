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

from trace_analyzer.loading.link_time import (
    caller,
    launch_to_op,
    least,
    matches,
    one_each,
    one_key,
    take,
    within_core,
)
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

# The columns the hops read.
COLUMNS = (
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
KINETO_DEVICE = ("hardware", "transfer", "sync")
LAUNCH_KINDS = ("runtime", "framework_dispatch")


def link(events: pl.DataFrame) -> pl.DataFrame:
    """Return the edges table of a profile's events table.

    The hops work on row positions: each hop's children and parents are the rows its masks
    select, and a key or a time rule takes the few columns it compares at those rows only
    (not the table's rows filtered whole, hop by hop). Which events are linked already is a
    mask over the rows. The flow ids are exploded once for the table. The profile's table is
    numbered by row (``schema.numbered``); another table's ids are put back on the edges at
    the end."""
    ev = events.select(COLUMNS)
    ids = ev["event_id"]
    numbered = by_row(ev)
    if not numbered:
        ev = ev.with_columns(event_id=pl.int_range(pl.len(), dtype=pl.Int64))
    hops = _hops(ev["name"])
    # Each hop's children, parents and other side as masks, all in one pass over the table: a
    # hop with no child left or no parent is skipped without looking at its rows.
    sides = {str(h.other_side): h.other_side for h in hops if h.other_side is not None}
    masks = ev.select(
        *(_child(h).alias(f"child{i}") for i, h in enumerate(hops)),
        *(h.parent.alias(f"parent{i}") for i, h in enumerate(hops)),
        *(side.alias(name) for name, side in sides.items()),  # named by the expression
    )
    rows = _Rows(ev)
    edges: dict[str, pl.DataFrame] = {}
    for i, h in enumerate(hops):
        child = masks[f"child{i}"] & ~rows.done
        if h.parents_of is not None:  # children: the parents of that hop's edges only
            if h.parents_of not in edges:
                continue
            child = child & rows.mask(edges[h.parents_of]["src"])
        parent = masks[f"parent{i}"]
        if not child.any() or not parent.any():
            continue
        other = masks[str(h.other_side)] if h.other_side is not None else None
        found, left = _hop(rows, child, parent, h, other)
        edges[h.name] = found.with_columns(hop=pl.lit(h.name, Text))
        rows.done = rows.done | (child & ~left)  # the children it linked
    del masks
    out = _in_child_order(list(edges.values()), ev, rows.done)
    del rows
    starts = ev["start_ns"]
    out = out.with_columns(latency_ns=starts.gather(out["dst"]) - starts.gather(out["src"]))
    if not numbered:
        out = out.with_columns(src=ids.gather(out["src"]), dst=ids.gather(out["dst"]))
    return out.select(list(EDGE_SCHEMA)).cast(EDGE_SCHEMA)


def _in_child_order(edges: list[pl.DataFrame], ev: pl.DataFrame, done: pl.Series) -> pl.DataFrame:
    """Return the hops' edges in their children's order (``done``: the children, a mask).

    Each event is the child of one edge at most: the edges in the children's order are the
    rows their children hold, taken in row order (no sort of the edges)."""
    if not edges:
        return pl.DataFrame(schema=EDGE_SCHEMA).drop("latency_ns")
    out = pl.concat(edges)
    order = (
        pl.Series("_at", [0], pl.UInt32)
        .new_from_index(0, ev.height)
        .scatter(out["dst"], pl.int_range(out.height, dtype=pl.UInt32, eager=True))
        .filter(done)
    )
    return out.rechunk().select(pl.all().gather(order))  # one chunk: a faster gather


def _child(hop: Hop) -> pl.Expr:
    """Return the mask of a hop's children; with no time rule, only those that hold one of
    the hop's keys (no other can be linked)."""
    if hop.time is not None:
        return hop.child
    held = {"flow_ids" if k == "flow_id" else k[0] for k in hop.keys}
    return hop.child & pl.any_horizontal(pl.col(c).is_not_null() for c in held)


def _mask(n: int, rows: pl.Series) -> pl.Series:
    """Return a mask of ``n`` rows, true at the positions ``rows``."""
    return pl.Series("_done", [False], pl.Boolean).new_from_index(0, n).scatter(rows, True)


class _Rows:
    """The linker's table (``event_id`` is the row), which rows are linked so far (``done``),
    and its flow ids, one row per (event, flow id), exploded on first use and kept for every
    hop."""

    def __init__(self, ev: pl.DataFrame) -> None:
        self.ev = ev
        self.done = _mask(ev.height, pl.Series([], dtype=pl.Int64))
        self._flows: pl.DataFrame | None = None

    def mask(self, rows: pl.Series) -> pl.Series:
        """Return a mask over the table, true at ``rows``."""
        return _mask(self.ev.height, rows)

    def flows(self, mask: pl.Series) -> pl.DataFrame:
        """Return (row, pid, key): one row per flow id of each event ``mask`` selects."""
        if self._flows is None:
            self._flows = (
                self.ev.select(row="event_id", pid="pid", key="flow_ids")
                .explode("key", keep_nulls=False)  # an event without flows: no row
                .drop_nulls()  # a null flow id, or pid: matches nothing
            )
        return self._flows.filter(mask.gather(self._flows["row"]))


# A key of a hop: "flow_id" (a shared flow id), or (child column, parent column) to match.
Key: TypeAlias = Literal["flow_id"] | tuple[str, str]
# A link by time: (the table, a mask of the children no key linked, a mask of the candidate
# parents) -> their edges.
TimeLink: TypeAlias = Callable[[pl.DataFrame, pl.Series, pl.Series], pl.DataFrame]


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
    rows: _Rows, child: pl.Series, parent: pl.Series, hop: Hop, other: pl.Series | None
) -> tuple[pl.DataFrame, pl.Series]:
    """Return the edges of one hop, and the children it left unlinked (a mask): each child
    (``child``: those not yet linked) to its parent (among ``parent``), by the hop's keys in
    turn, then by time. ``other``: the events whose flow ids, held by a child too, are not
    the child's link (the hop's other side)."""
    found, kids = _by_keys(rows, child, parent, hop, other)
    if hop.time is not None:
        if hop.prefer_linked:
            parent = parent & (rows.done | rows.ev["seq_id"].is_not_null())
        if kids.any() and parent.any():  # nothing left: no time rule
            timed = hop.time(rows.ev, kids, parent)
            found = pl.concat([found, timed])
            kids = kids & ~rows.mask(timed["dst"])
    return found, kids


def _by_keys(
    rows: _Rows, child: pl.Series, parent: pl.Series, hop: Hop, other: pl.Series | None
) -> tuple[pl.DataFrame, pl.Series]:
    """Return edges found by each key in turn (a child keeps the first key that finds it),
    and the children none found (a mask).

    A key side named ``flow_ids`` matches any of the event's flow ids; the method is then
    named after the other side's key (the flow stands for it). Each side's flows are taken
    once for the hop, the children's less those of ``other`` (its (pid, flow) pairs)."""
    found: list[pl.DataFrame] = []
    kid_flows = parent_flows = None
    kids, taken = child, None  # taken: the children the last key found
    for key in hop.keys:
        if taken is not None:
            kids, taken = kids & ~taken, None
            if not kids.any():
                break
        child_col, parent_col = ("flow", "flow") if isinstance(key, str) else key
        child_col, parent_col = ("flow" if c == "flow_ids" else c for c in (child_col, parent_col))
        if child_col == "flow":
            if kid_flows is None:
                kid_flows = rows.flows(child)
                if other is not None:
                    kid_flows = _less(kid_flows, rows.flows(other))
            if found:  # the flows of the children still unlinked
                kid_flows = kid_flows.filter(kids.gather(kid_flows["row"]))
            left = kid_flows
        else:
            left = take(rows.ev, kids, "pid", row="event_id", key=child_col)
        if parent_col == "flow":
            if parent_flows is None:
                parent_flows = rows.flows(parent)
            right = parent_flows
        else:
            right = take(rows.ev, parent, "pid", row="event_id", key=parent_col)
        hits = matches(left, right)
        method = (
            "flow_id"
            if child_col == parent_col == "flow"
            else (parent_col if child_col == "flow" else child_col)
        )
        hits = _one_parent(hits, rows) if hop.prefer_linked else _first_parent(hits, rows.ev.height)
        found.append(hits.with_columns(link_method=pl.lit(method, Text)))
        taken = rows.mask(hits["dst"])  # of the children still unlinked: this key's alone
    if taken is not None:
        kids = kids & ~taken
    if not found:
        return pl.DataFrame(schema={"src": pl.Int64, "dst": pl.Int64, "link_method": Text}), kids
    return pl.concat(found), kids


def _less(flows: pl.DataFrame, other: pl.DataFrame) -> pl.DataFrame:
    """Return the rows of ``flows`` whose (pid, key) pair ``other`` does not hold."""
    one = one_key(flows, other)
    if one is None:
        return flows.join(other, on=["pid", "key"], how="anti")
    theirs = other.select(_k=one)
    return flows.with_columns(_k=one).join(theirs, on="_k", how="anti").drop("_k")


def _first_parent(hits: pl.DataFrame, n: int) -> pl.DataFrame:
    """Return one parent per child: the earliest-listed (lowest event id, i.e. earliest start)."""
    return least(hits, pl.col("src"), n)


def _one_parent(hits: pl.DataFrame, rows: _Rows) -> pl.DataFrame:
    """Return one parent per child: first one that links on upward (``done``), then one whose
    span holds the child's start (the runtime call that waits for a hardware execution), then
    the earliest-listed.

    The three criteria are one number, ``rank * n + src`` (rank 0 to 3, n rows): the parent
    sought holds the least."""
    if one_each(hits):
        return hits
    n, ev = rows.ev.height, rows.ev
    src = hits["src"]
    t = ev["start_ns"].gather(hits["dst"])
    loose = ~rows.done.gather(src)
    outside = ~t.is_between(ev["start_ns"].gather(src), ev["end_ns"].gather(src))
    rank = loose.cast(pl.Int64) * 2 + outside.cast(pl.Int64)
    return least(hits, rank * n + src, 4 * n)
