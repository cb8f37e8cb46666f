"""The dependency graph a run's time is replayed on (docs/critical-path.md, "The graph").

A **node** is a piece of recorded work: a host call (a runtime or driver call, a Neuron
dispatch or runtime event: the outermost one on its thread, calls inside it belong to it),
a piece of device work (``states.on_device``: kernels, executions, collectives, copies,
sets; its kind from ``states.kind_of``), the start and the end of each ``ProfilerStep#N``
(marks on the thread that recorded it), and the **return** of a call that waited for the
device. Each node starts at the latest of its recorded dependencies, plus its own delay:

- ``chain``: the node before it on its thread or its device lane has ended, plus ``gap``
  (on a thread: the host's time between two calls, Python and framework work, which a
  what-if can shorten; on a lane: nothing, the lane runs one piece at a time);
- ``launch``: the call that launched it (its ``device``/``hardware`` link; or, between two
  host threads, the call its link names) has started, plus ``lag`` (on a device: the run's
  launch latency, at most the time this node took from its launch);
- ``wait``: for a return, the device work its call waited for has ended, plus ``tail`` (the
  call's own return): the device work a blocking call (``waits.BLOCKING``: a synchronous
  copy or set, a Neuron runtime wait) launched and that ended inside it, or, for a
  synchronize, the latest work of its process launched before it that ended inside it;
- ``cross``: for device work, the work on another stream that a recorded stream wait held
  it for has ended (``waits.stream_waits``).

``delay`` is what the recorded dependencies leave unexplained: the node's start less the
latest of them, as recorded. With every duration, gap and lag as recorded, the replay gives
every node its recorded times exactly. A dependency that would end after the node started
(clock noise, a lane whose pieces overlap) was not what held it and is dropped.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from trace_analyzer.analyses.states import kind_of, on_device
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.arrow import frame
from trace_analyzer.model.schema import by_row, matching
from trace_analyzer.questions.critical.link import (
    HOST_NODES,
    KINDS,
    LINK_OUT,
    NONE,
    _replay,
    int64s,
    linked,
)
from trace_analyzer.questions.critical.waits import LEVEL, returns, stream_waits

HOST_KINDS = ("runtime", "framework_dispatch", "framework_stream", "transfer")
STEP_MARK = r"^ProfilerStep#\d+$"


@dataclass
class Graph:
    """The nodes of one run, numbered in an order in which every dependency comes first
    (by recorded start, then end, then ``LEVEL``). Per node (int64 arrays, or lists where
    nothing was compiled, for the replay): the event it is (``event``; -1 for marks and
    returns), recorded ``start``, ``dur`` (its own time: a waiting call's is its return,
    ``tail``), the dependencies (``chain`` with ``gap``, ``launch`` with ``lag``, ``wait``
    with ``tail``, ``cross``; -1 where none), ``delay``, ``anchored`` (no dependency: it
    keeps its recorded start), ``call`` (a return's call), ``own`` (the code of its own
    segment on a path: replay.KIND_CODES); ``step`` (a device node's launching step, a
    mark's step; a list, made when first asked for); ``marks``: per step, its start marks'
    and its end marks' nodes (one each per process that recorded it: the ranks of a run);
    ``latency_ns``: the launch latency used as ``lag`` on the device; ``table``: the nodes
    as a table (``link.TABLE``: their kinds, names, lanes, threads, ids; null where none)."""

    event: Sequence[int]
    start: Sequence[int]
    dur: Sequence[int]
    chain: Sequence[int]
    gap: Sequence[int]
    launch: Sequence[int]
    lag: Sequence[int]
    wait: Sequence[int]
    cross: Sequence[int]
    tail: Sequence[int]
    delay: Sequence[int]
    anchored: Sequence[int]
    call: Sequence[int]
    own: Sequence[int]
    marks: dict[int, tuple[list[int], list[int]]]
    latency_ns: int
    table: pl.DataFrame
    _devices: list[int] | None = None
    _by_step: dict[int | None, list[int]] | None = None
    _returns: list[int] | None = None
    _sums: dict[int | None, int] | None = None
    _gaps: pl.DataFrame | None = None
    _step: list[int | None] | None = None
    _groups: tuple[list[int | None], tuple[Sequence[int], ...]] | None = None

    @property
    def n(self) -> int:
        return len(self.start)

    @property
    def step(self) -> list[int | None]:
        """Per node, a device node's launching step, a mark's step (found once)."""
        if self._step is None:
            self._step = self.table["step"].to_list()
        return self._step

    def device_nodes(self) -> list[int]:
        """The nodes that are device work (found once)."""
        if self._devices is None:
            device = self.table.select("node", "kind").filter(~pl.col("kind").is_in(HOST_NODES))
            self._devices = device["node"].to_list()
        return self._devices

    def by_step(self) -> dict[int | None, list[int]]:
        """The device nodes per step they were launched in (found once)."""
        if self._by_step is None:
            nodes = self.table.select("node", "kind", "step")
            device = nodes.filter(~pl.col("kind").is_in(HOST_NODES))
            groups = device.group_by("step", maintain_order=True).agg("node")
            self._by_step = dict(zip(groups["step"].to_list(), groups["node"].to_list(),
                                     strict=True))  # fmt: skip
        return self._by_step

    def window_groups(self) -> tuple[list[int | None], tuple[Sequence[int], ...]]:
        """The windows (their steps, in order; [None] for a run without steps) and, for the
        compiled ``_replay.spans``, three pairs of int64 arrays, each nodes and their
        window's index: the start marks, the end marks and the device work launched in each
        (for a run without steps: every node, and every node again from the last, so that of
        equal ends the last node is found) (found once)."""
        if self._groups is None:
            i64 = pl.Int64
            if not self.marks:
                every = pl.int_range(self.n, dtype=i64, eager=True)
                zeros = pl.zeros(self.n, dtype=i64, eager=True)
                none = pl.Series(dtype=i64)
                keys: list[int | None] = [None]
                series: tuple[pl.Series, ...] = (every, zeros, none, none, every.reverse(), zeros)
            else:
                steps = sorted(self.marks)
                keys = list(steps)
                marks: list[list[int]] = [
                    [],
                    [],
                    [],
                    [],
                ]  # start marks, windows, end marks, windows
                for k, s in enumerate(steps):
                    for side, nodes in enumerate(self.marks[s]):
                        marks[2 * side] += nodes
                        marks[2 * side + 1] += [k] * len(nodes)
                device = self.table.select("node", "kind", "step").filter(
                    ~pl.col("kind").is_in(HOST_NODES)
                )  # in node order: of equal ends, the first is found
                window = pl.col("step").replace_strict(
                    steps, list(range(len(steps))), default=NONE, return_dtype=i64
                )
                device = device.select(pl.col("node").cast(i64), window.fill_null(NONE))
                series = (
                    *(pl.Series(m, dtype=i64) for m in marks),
                    device["node"],
                    device["step"],
                )
            self._groups = keys, tuple(int64s(x) for x in series)
        return self._groups

    def device_sums(self) -> dict[int | None, int]:
        """Per step, the recorded time of the device work launched in it, summed (found
        once)."""
        if self._sums is None:  # a device node's own time is its recorded time
            nodes = self.table.select("kind", "step", dur=pl.col("end_ns") - pl.col("start_ns"))
            sums = (
                nodes.filter(~pl.col("kind").is_in(HOST_NODES))
                .group_by("step")
                .agg(pl.col("dur").sum())
            )
            self._sums = dict(zip(sums["step"].to_list(), sums["dur"].to_list(), strict=True))
        return self._sums

    def returns(self) -> list[int]:
        """The return nodes (found once)."""
        if self._returns is None:
            nodes = self.table.select("node", "kind")
            self._returns = nodes.filter(pl.col("kind") == "return")["node"].to_list()
        return self._returns

    def links(self, *names: str) -> list[pl.Series]:
        """The arrays ``names`` (``chain``, ``launch``, ``wait``, ``call``, ``cross``, ``gap``:
        a node, or a time) as Int64 columns beside the table's rows, -1 a null (by the
        compiled ``_replay.nullable`` where the arrays are its, else by polars)."""
        out = []
        for name in names:
            values = getattr(self, name)
            if _replay is not None and isinstance(values, memoryview):
                column = frame(_replay.nullable(values))["values"]
            else:
                column = pl.Series(values=list(values), dtype=pl.Int64)
                column = pl.select(pl.when(column != NONE).then(column)).to_series()
            out.append(column.alias(name))
        return out

    def host_gaps(self) -> pl.DataFrame:
        """The host nodes with time before them on their thread (``gap``): pid, tid, a (where
        the gap starts), b (the node's start), node; Int64, in node order (found once)."""
        if self._gaps is None:
            self._gaps = (
                self.table.select("pid", "tid", "start_ns", "node", "kind")
                .with_columns(self.links("gap", "chain"))
                .filter(
                    pl.col("kind").is_in(HOST_NODES)
                    & pl.col("chain").is_not_null()
                    & (pl.col("gap") > 0)
                )
                .drop_nulls(["pid", "tid"])
                .select(
                    pl.col("pid", "tid").cast(pl.Int64),
                    a=pl.col("start_ns") - pl.col("gap"),
                    b="start_ns",
                    node=pl.col("node").cast(pl.Int64),
                )
                .rechunk()
            )
        return self._gaps

    def frame(self) -> pl.DataFrame:
        """The nodes as a table (``link.TABLE``)."""
        return self.table


# A node's kind as an Enum (link.KINDS: the codes the compiled link reads).
KIND = pl.Enum(KINDS)

# The events' columns the device work and the host calls are found from (taken before they
# are filtered: a filter copies every column it is given).
DEVICE_COLUMNS = (
    "event_id", "name", "lane", "lane_kind", "source", "category", "pid", "tid", "start_ns",
    "end_ns", "device", "stream",
)  # fmt: skip
# The nodes' order: by start, end and LEVEL, a step's marks by step, the rest (ties of
# another kind) by what each is, so that the order is the same however the nodes came.
ORDER = ("start_ns", "end_ns", "level", "seq", "event_id", "call_event", "pid", "tid")
I64 = pl.Int64


def build(profile: Profile, window: str | None = None, *, native: bool = True) -> Graph:
    """Return the dependency graph of ``profile`` (module doc); its windows are the
    ProfilerSteps, or with ``window`` (a regex) the annotations it names, numbered from 0 in
    start order. ``native``: linked by the compiled link (_replay.c) where it was built, else
    (or with False) by polars (link.py), which gives the same graph."""
    events, edges = profile.keyed, profile.edges
    marks = _marks(events, window)
    device = _device(events, edges, marks)
    host, inner = _host(events, native)
    host, device = _launches([host, device], events, edges, inner, native)
    back = returns(host, device, native=native)
    # one chunk each: a gather from several chunks costs more than the copy that joins them
    nodes = pl.concat([host, marks, device, back], how="diagonal_relaxed", rechunk=True)
    nodes = ordered(nodes).with_row_index("node")
    return _graph(nodes, *linked(nodes, native=native))


def ordered(nodes: pl.DataFrame) -> pl.DataFrame:
    """``nodes`` sorted by ``ORDER`` (nulls first): by start, then only the rows whose start
    another row shares by every key (a sort by eight keys costs twice one by start)."""
    order = nodes["start_ns"].arg_sort()
    start = nodes["start_ns"].gather(order)
    tie = ((start == start.shift(1)) | (start == start.shift(-1))).fill_null(False)
    if tie.any():
        at = order.filter(tie)
        at = at.gather(nodes.select(ORDER)[at].select(pl.arg_sort_by(ORDER)).to_series())
        order = order.scatter(tie.arg_true(), at)
    return nodes[order]


def _device(events: pl.DataFrame, edges: pl.DataFrame, marks: pl.DataFrame) -> pl.DataFrame:
    """The device work: one node each, with its kind and the window it was launched in (the
    window of its process whose span holds its launch call's start, else its own start)."""
    rows = events.select(DEVICE_COLUMNS)
    rows = rows.filter(on_device(rows) & (pl.col("end_ns") > pl.col("start_ns")))
    rows = rows.select(
        "event_id", "name", "lane", "pid", "tid", "start_ns", "end_ns", "device", "stream",
        kind=kind_of(rows).cast(KIND),
    )  # fmt: skip
    launch = edges.filter(pl.col("hop").is_in(["device", "hardware"])).select(
        event_id="dst", launch="src"
    )
    rows = rows.join(launch, on="event_id", how="left")
    rows = (
        rows.with_columns(launched_ns=of_events(events, "start_ns", rows["launch"]))
        .with_columns(launched_ns=pl.coalesce("launched_ns", "start_ns"))
        .drop("launch")
    )
    spans = (
        marks.filter(pl.col("seq") == 2 * pl.col("step"))
        .select("pid", "step", w0="start_ns")
        .join(
            marks.filter(pl.col("seq") != 2 * pl.col("step")).select("pid", "step", w1="start_ns"),
            on=["pid", "step"],
        )
    )
    rows = (
        rows.sort("launched_ns")
        .join_asof(
            spans.sort("w0"),
            left_on="launched_ns",
            right_on="w0",
            by="pid",
            strategy="backward",
            check_sortedness=False,
        )
        .with_columns(step=pl.when(pl.col("launched_ns") <= pl.col("w1")).then(pl.col("step")))
    )
    waits = stream_waits(events, rows)
    return (
        rows.drop("w0", "w1", "device", "stream", "launched_ns")
        .join(waits, on="event_id", how="left")
        .with_columns(
            level=pl.lit(LEVEL["device"]),
            seq=pl.lit(0, pl.Int64),
        )
    )


def _host(events: pl.DataFrame, native: bool = True) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The host calls, the outermost on each thread, and ``inner``: each call (an event id)
    to the outermost call holding it (itself where it is one). On each thread, in order of
    start (the longer first, then by id), a call that starts before the latest end of the
    calls before it is held, and belongs to the last call that was not; by the compiled
    ``_replay.outer`` where it was built (in the events' order, by start: no sort but of
    ties), else by polars, which gives the same."""
    calls = _host_calls(events)
    if native and _replay is not None:
        columns = calls.select(pl.col("pid", "tid", "start_ns", "end_ns", "event_id").cast(I64))
        found = frame(_replay.outer(columns.rechunk().__arrow_c_stream__()))
        calls = calls.with_columns(outer=found["outer"])
    else:
        calls = outer_by_polars(calls)
    inner = calls.select("event_id", "outer")
    outer = calls.filter(pl.col("event_id") == pl.col("outer")).drop("outer")
    return (
        outer.with_columns(
            kind=pl.lit("call", KIND),
            level=pl.lit(LEVEL["call"]),
            seq=pl.lit(0, pl.Int64),
        ),
        inner,
    )


def _host_calls(events: pl.DataFrame) -> pl.DataFrame:
    """Every host call (``HOST_KINDS``, not on a device): its id, name, lane, thread, times."""
    calls = events.select("event_id", "name", "lane", "pid", "tid", "start_ns", "end_ns",
                          "lane_kind", "source")  # fmt: skip
    return calls.filter(pl.col("lane_kind").is_in(HOST_KINDS) & ~on_device(calls)).drop(
        "lane_kind", "source"
    )


def outer_by_polars(calls: pl.DataFrame) -> pl.DataFrame:
    """``calls`` (pid, tid, start_ns, end_ns, event_id) with each one's outermost call on its
    thread (``outer``), by polars: ``_replay.outer``'s reference (``_host``)."""
    order = ("pid", "tid", "start_ns", "end_ns", "event_id")
    calls = calls.sort(order, descending=[False, False, False, True, False])
    cum = pl.col("end_ns").cum_max().shift(1).over("pid", "tid")
    return calls.with_columns(
        outer=pl.when(~(pl.col("start_ns") < cum).fill_null(False)).then(pl.col("event_id"))
    ).with_columns(pl.col("outer").forward_fill().over("pid", "tid"))


def _marks(events: pl.DataFrame, window: str | None) -> pl.DataFrame:
    """Each window's start and end, as marks on the thread that recorded it: the
    ProfilerSteps (numbered as they are), or the annotations ``window`` names (from 0)."""
    named = events.select("event_id", "name", "lane", "lane_kind", "source", "pid", "tid",
                          "start_ns", "end_ns")  # fmt: skip
    named = named.filter(
        pl.col("lane_kind").is_in(["annotation", "framework_op"])  # Kineto until 2021: ops
        & (pl.col("source") == "framework")  # the host's: a GPU's copy is not a step
    )
    named = named.filter(matching(named["name"], window or STEP_MARK)).sort("start_ns", "event_id")
    number = (
        pl.int_range(pl.len(), dtype=pl.Int64).over("pid")
        if window
        else pl.col("name").cast(pl.String).str.extract(r"#(\d+)$").cast(pl.Int64, strict=False)
    )
    steps = named.select("name", "lane", "pid", "tid", "start_ns", "end_ns", step=number)
    steps = steps.drop_nulls("step")  # a step number past int64 is no step (as the readers say)
    common: dict[str, Any] = {
        "event_id": pl.lit(None, pl.Int64),
        "kind": pl.lit("mark", KIND),
        "level": pl.lit(LEVEL["mark"]),
        "lane": "lane",
    }
    first = steps.select(
        "pid", "tid", "step", start_ns="start_ns", end_ns="start_ns", **common,
        name=pl.format("{} start", "name").cast(pl.Categorical), seq=2 * pl.col("step"),
    )  # fmt: skip
    last = steps.select(
        "pid", "tid", "step", start_ns="end_ns", end_ns="end_ns", **common,
        name=pl.format("{} end", "name").cast(pl.Categorical), seq=2 * pl.col("step") + 1,
    )  # fmt: skip
    return pl.concat([first, last])


def _launches(
    parts: list[pl.DataFrame],
    events: pl.DataFrame,
    edges: pl.DataFrame,
    inner: pl.DataFrame,
    native: bool = True,
) -> list[pl.DataFrame]:
    """Each of ``parts`` (nodes) with, per linked event, the outermost call its link names
    (``launch_event``): a device node's launch, or, for a call, the call on another thread
    that its link names. Where each event is its row and has one link at most (every
    profile's table), found by position (by the compiled ``_replay.launched`` where it was
    built, else by polars, which gives the same); else joined."""
    if by_row(events) and edges["dst"].n_unique() == edges.height and native and _replay:
        ids = pl.concat([p.select(pl.col("event_id").cast(I64)) for p in parts]).rechunk()
        found = frame(
            _replay.launched(
                events.height,
                inner.select(pl.col("event_id", "outer").cast(I64)).rechunk().__arrow_c_stream__(),
                edges.select(pl.col("dst", "src").cast(I64)).rechunk().__arrow_c_stream__(),
                ids.__arrow_c_stream__(),
            )
        )["launch_event"]
        bounds = [0, *itertools.accumulate(p.height for p in parts)]
        return [
            p.with_columns(launch_event=found.slice(a, b - a))
            for p, a, b in zip(parts, bounds, bounds[1:], strict=False)
        ]
    if by_row(events) and edges["dst"].n_unique() == edges.height:
        outer = pl.repeat(None, events.height, dtype=pl.Int64, eager=True)
        outer = outer.scatter(inner["event_id"], inner["outer"].cast(pl.Int64))
        src = pl.repeat(None, events.height, dtype=pl.Int64, eager=True)
        src = src.scatter(edges["dst"], edges["src"])
        return [p.with_columns(launch_event=outer.gather(src.gather(p["event_id"]))) for p in parts]
    launch = (
        edges.select(event_id="dst", src="src")
        .join(inner.rename({"event_id": "src"}), on="src", how="inner")
        .select("event_id", launch_event="outer")
    )
    return [p.join(launch, on="event_id", how="left", maintain_order="left") for p in parts]


def of_events(events: pl.DataFrame, column: str, ids: pl.Series) -> pl.Series:
    """``column`` of the events ``ids`` names (null for none): by position where each event
    is its row (every profile's table)."""
    if by_row(events):
        return events[column].gather(ids)
    return ids.replace_strict(events["event_id"], events[column], default=None)


def _graph(
    nodes: pl.DataFrame, latency: int, arrays: Mapping[str, Sequence[int]], table: pl.DataFrame
) -> Graph:
    """The graph of ``nodes`` from its linked ``arrays`` (``LINK_OUT``) and ``table``."""
    found = nodes.select("node", "kind", "step", "seq").filter(pl.col("kind") == "mark")
    first = pl.col("seq") == 2 * pl.col("step")  # _marks: a start's; an end's is one more
    node = pl.col("node").cast(pl.Int64)
    per = found.group_by("step", maintain_order=True).agg(
        a=node.filter(first), b=node.filter(~first)
    )
    marks = zip(per["step"].to_list(), per["a"].to_list(), per["b"].to_list(), strict=True)
    linked: dict[str, Any] = {k: arrays[k] for k in LINK_OUT}
    return Graph(
        **linked,
        marks={s: (a, b) for s, a, b in marks if a and b},
        latency_ns=latency,
        table=table,
    )
