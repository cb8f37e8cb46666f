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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import polars as pl

from trace_analyzer.analyses.states import kind_of, on_device
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.arrow import frame
from trace_analyzer.model.schema import by_row, matching
from trace_analyzer.questions.critical.waits import LEVEL, returns, stream_waits

HOST_KINDS = ("runtime", "framework_dispatch", "framework_stream", "transfer")
STEP_MARK = r"^ProfilerStep#\d+$"
# The kinds of the nodes that are not device work.
HOST_NODES = ("call", "mark", "return")
NONE = -1


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
    mark's step; a list, made when first asked for); ``marks``: per step, its start marks' and its end marks' nodes
    (one each per process that recorded it: the ranks of a run); ``latency_ns``: the launch
    latency used as ``lag`` on the device; ``table``: the nodes as a table (``TABLE``: their
    kinds, names, lanes, threads, ids; null where none)."""

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
            parts: list[list[int]] = [[], [], [], [], [], []]
            if not self.marks:
                every, zeros = list(range(self.n)), [0] * self.n
                keys: list[int | None] = [None]
                parts = [every, zeros, [], [], every[::-1], zeros]
            else:
                steps = sorted(self.marks)
                keys = list(steps)
                index: dict[int | None, int] = {s: k for k, s in enumerate(steps)}
                for s in steps:
                    for side, nodes in enumerate(self.marks[s]):
                        parts[2 * side] += nodes
                        parts[2 * side + 1] += [index[s]] * len(nodes)
                for key, nodes in self.by_step().items():
                    parts[4] += nodes
                    parts[5] += [index.get(key, NONE)] * len(nodes)
            arrays = tuple(int64s(pl.Series(p, dtype=pl.Int64)) for p in parts)
            self._groups = keys, arrays
        return self._groups

    def device_sums(self) -> dict[int | None, int]:
        """Per step, the recorded time of the device work launched in it, summed (found
        once)."""
        if self._sums is None:
            dur = self.dur
            self._sums = {s: sum(dur[i] for i in nodes) for s, nodes in self.by_step().items()}
        return self._sums

    def returns(self) -> list[int]:
        """The return nodes (found once)."""
        if self._returns is None:
            nodes = self.table.select("node", "kind")
            self._returns = nodes.filter(pl.col("kind") == "return")["node"].to_list()
        return self._returns

    def host_gaps(self) -> pl.DataFrame:
        """The host nodes with time before them on their thread (``gap``): pid, tid, a (where
        the gap starts), b (the node's start), node; Int64, in node order (found once)."""
        if self._gaps is None:
            self._gaps = (
                self.table.select("pid", "tid", "start_ns", "gap", "node", "kind", "chain")
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
        """The nodes as a table (``TABLE``)."""
        return self.table


_replay: ModuleType | None
try:  # the compiled replay, where a compiler built it (setup.py: optional)
    import trace_analyzer.questions.critical._replay as _replay  # type: ignore[import-not-found,no-redef]
except ImportError:  # pragma: no cover - a machine without a compiler
    _replay = None


def int64s(column: pl.Series) -> Sequence[int]:
    """The values of an Int64 ``column`` without nulls, as the replay reads them: an int64
    memoryview over its bytes, copied once from polars' Arrow stream by the compiled
    ``_replay.ints`` (no Python int per value), else a list."""
    if _replay is None:
        return column.to_list()
    return memoryview(_replay.ints(column.rechunk().__arrow_c_stream__())).cast("q")


# A node's kind: its device work's (states.kind_of), or a call, a mark, a return. The codes
# (the Enum's order) are what the compiled link reads; the first four are a node's own
# segment's code on a path (replay.KIND_CODES: marks and returns are a call's).
KINDS = ("compute", "communication", "memory", "call", "mark", "return")
KIND = pl.Enum(KINDS)
OWN_CODES = {"compute": 0, "communication": 1, "memory": 2, "call": 3}

# The node table's columns (Graph.table).
TABLE = (
    "node", "event_id", "kind", "name", "lane", "pid", "tid", "start_ns", "end_ns", "chain",
    "gap", "launch", "wait", "call", "step",
)  # fmt: skip
# The columns the link reads (_replay.c's I_ order; a node's chain is the thread or the lane
# its ``ck0``-``ck2`` name: 0, pid, tid for a thread; 1, the lane, 0 for a device's lane) and
# the arrays it makes (O_ order).
LINK_IN = (
    "event_id", "ck0", "ck1", "ck2", "kind", "start_ns", "end_ns", "tail",
    "launch_event", "wait_event", "call_event", "cross_event",
)  # fmt: skip
LINK_OUT = (
    "event", "start", "dur", "chain", "gap", "launch", "lag", "wait", "cross", "tail",
    "delay", "anchored", "call", "own",
)  # fmt: skip
CHAIN = ("ck0", "ck1", "ck2")
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
    (or with False) by polars (``_linked``), which gives the same graph."""
    events, edges = profile.keyed, profile.edges
    marks = _marks(events, window)
    device = _device(events, edges, marks)
    host, inner = _host(events, native)
    nodes = pl.concat([host, marks, device], how="diagonal_relaxed")
    nodes = _launches(nodes, events, edges, inner)
    nodes = returns(nodes)
    nodes = nodes.sort(ORDER).with_row_index("node")
    if native and _replay is not None:
        return _compiled(nodes)
    return _linked(nodes)


def _compiled(nodes: pl.DataFrame) -> Graph:
    """The graph of ``nodes`` linked by the compiled link (_replay.c): what ``_linked`` gives."""
    assert _replay is not None
    codes = {"kind": pl.col("kind").to_physical()}
    columns = nodes.select(codes.get(c, pl.col(c)).cast(pl.Int64) for c in LINK_IN).rechunk()
    latency, arrays, linked = _replay.link(columns.__arrow_c_stream__())
    got = dict(zip(LINK_OUT, (memoryview(a).cast("q") for a in arrays), strict=True))
    table = pl.concat(
        [nodes.select(TABLE[:9]), frame(linked), nodes.select("step")],
        how="horizontal",
    ).with_columns(pl.col("node").cast(pl.Int64))
    return _graph(nodes, latency, got, table)


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
        rows.with_columns(launched_ns=_at(events, "start_ns", rows["launch"]))
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
            ck0=pl.lit(1, pl.Int64),
            ck1=pl.col("lane").to_physical().cast(pl.Int64),
            ck2=pl.lit(0, pl.Int64),
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
    calls = events.select(DEVICE_COLUMNS)
    calls = calls.filter(pl.col("lane_kind").is_in(HOST_KINDS) & ~on_device(calls)).select(
        "event_id", "name", "lane", "pid", "tid", "start_ns", "end_ns"
    )
    if native and _replay is not None:
        columns = calls.select(pl.col("pid", "tid", "start_ns", "end_ns", "event_id").cast(I64))
        found = frame(_replay.outer(columns.rechunk().__arrow_c_stream__()))
        calls = calls.with_columns(outer=found["outer"])
    else:
        order = ("pid", "tid", "start_ns", "end_ns", "event_id")
        calls = calls.sort(order, descending=[False, False, False, True, False])
        cum = pl.col("end_ns").cum_max().shift(1).over("pid", "tid")
        calls = calls.with_columns(
            outer=pl.when(~(pl.col("start_ns") < cum).fill_null(False)).then(pl.col("event_id"))
        ).with_columns(pl.col("outer").forward_fill().over("pid", "tid"))
    inner = calls.select("event_id", "outer")
    outer = calls.filter(pl.col("event_id") == pl.col("outer")).drop("outer")
    return (
        outer.with_columns(
            kind=pl.lit("call", KIND),
            level=pl.lit(LEVEL["call"]),
            ck0=pl.lit(0, pl.Int64),
            ck1="pid",
            ck2="tid",
            seq=pl.lit(0, pl.Int64),
        ),
        inner,
    )


def _marks(events: pl.DataFrame, window: str | None) -> pl.DataFrame:
    """Each window's start and end, as marks on the thread that recorded it: the
    ProfilerSteps (numbered as they are), or the annotations ``window`` names (from 0)."""
    named = events.select("event_id", "name", "lane", "lane_kind", "source", "pid", "tid",
                          "start_ns", "end_ns")  # fmt: skip
    named = named.filter(
        pl.col("lane_kind").is_in(["annotation", "framework_op"])  # Kineto until 2021: ops
        & (pl.col("source") == "framework")  # the host's: a GPU's copy is not a step
        & matching(events["name"], window or STEP_MARK)
    ).sort("start_ns", "event_id")
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
        "ck0": pl.lit(0, pl.Int64),
        "ck1": "pid",
        "ck2": "tid",
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
    nodes: pl.DataFrame, events: pl.DataFrame, edges: pl.DataFrame, inner: pl.DataFrame
) -> pl.DataFrame:
    """``nodes`` with, per linked event, the outermost call its link names (``launch_event``):
    a device node's launch, or, for a call, the call on another thread that its link names.
    Where each event is its row and has one link at most (every profile's table), found by
    position; else joined."""
    if by_row(events) and edges["dst"].n_unique() == edges.height:
        outer = pl.repeat(None, events.height, dtype=pl.Int64, eager=True)
        outer = outer.scatter(inner["event_id"], inner["outer"].cast(pl.Int64))
        src = pl.repeat(None, events.height, dtype=pl.Int64, eager=True)
        src = src.scatter(edges["dst"], edges["src"])
        return nodes.with_columns(launch_event=outer.gather(src.gather(nodes["event_id"])))
    launch = (
        edges.select(event_id="dst", src="src")
        .join(inner.rename({"event_id": "src"}), on="src", how="inner")
        .select("event_id", launch_event="outer")
    )
    return nodes.join(launch, on="event_id", how="left")


def _at(events: pl.DataFrame, column: str, ids: pl.Series) -> pl.Series:
    """``column`` of the events ``ids`` names (null for none): by position where each event
    is its row (every profile's table)."""
    if by_row(events):
        return events[column].gather(ids)
    return ids.replace_strict(events["event_id"], events[column], default=None)


def _linked(nodes: pl.DataFrame) -> Graph:
    """The graph of ``nodes`` (numbered in order, ``node``): each dependency as a node
    number, the gaps, lags and delays that give every node its recorded start (by polars:
    the compiled link's reference)."""
    nodes = nodes.with_columns(
        dur=pl.col("end_ns") - pl.col("start_ns"),
        chain=pl.col("node").cast(pl.Int64).shift(1).over(CHAIN),
    )
    nodes = _with_preds(nodes)
    host = pl.col("kind").is_in(HOST_NODES)
    other = pl.any_horizontal(pl.col(f"l_{k}").ne_missing(pl.col(k)) for k in CHAIN)
    nodes = nodes.with_columns(
        launch=pl.when((pl.col("launch") < pl.col("node")) & other).then(pl.col("launch")),
        gap=pl.when(host & (pl.col("kind") != "return"))
        .then(pl.col("start_ns") - pl.col("c_p0") - pl.col("c_pdur"))
        .otherwise(0),
        tail=pl.col("tail").fill_null(0),
    )
    latency = _latency(nodes)
    since = pl.col("start_ns") - pl.col("l_p0")
    nodes = nodes.with_columns(
        lag=pl.when(host).then(0).otherwise(pl.min_horizontal(since, pl.lit(latency)))
    )
    found = {
        "chain": pl.col("c_p0") + pl.col("c_pdur") + pl.col("gap"),
        "launch": pl.col("l_p0") + pl.col("lag"),
        "wait": pl.col("w_p0") + pl.col("w_pdur") + pl.col("tail"),
        "cross": pl.col("x_p0") + pl.col("x_pdur"),
    }
    held = {k: pl.col(k).is_not_null() & (v <= pl.col("start_ns")) for k, v in found.items()}
    nodes = nodes.with_columns(**{k: pl.when(held[k]).then(pl.col(k)) for k in found})
    latest = pl.max_horizontal(*(pl.when(held[k]).then(v) for k, v in found.items()))
    nodes = nodes.with_columns(
        delay=(pl.col("start_ns") - latest).fill_null(0), anchored=latest.is_null()
    )

    def ints(column: str, fill: int = NONE) -> Sequence[int]:
        return int64s(nodes[column].fill_null(fill).cast(pl.Int64))

    own_code = pl.col("kind").to_physical().clip(upper_bound=OWN_CODES["call"])
    got = {k: ints(k, 0) for k in ("start_ns", "dur", "gap", "lag", "tail", "delay", "anchored")}
    got |= {k: ints(k) for k in ("event_id", "chain", "launch", "wait", "cross", "call")}
    got |= {"start": got.pop("start_ns"), "event": got.pop("event_id")}
    got["own"] = int64s(nodes.select(own_code.cast(pl.Int64)).to_series())
    table = nodes.select(*TABLE[:9], *(pl.col(c).cast(pl.Int64) for c in TABLE[9:14]), "step")
    return _graph(nodes, latency, got, table.with_columns(pl.col("node").cast(pl.Int64)))


def _with_preds(nodes: pl.DataFrame) -> pl.DataFrame:
    """``nodes`` (in node order: a node is its row) with each dependency's node number
    (``launch``, ``wait``, ``call``, ``cross``, from the event each names), the recorded
    start and own time of each (``c_``, ``l_``, ``w_``, ``x_``: chain, launch, wait, cross)
    and the launch's chain (``l_ck0``…), gathered by row, not joined."""
    ids = nodes["event_id"]
    known = ids.is_not_null()
    size = 0 if not known.any() else int(ids.max()) + 1  # type: ignore[arg-type]
    node_of = pl.repeat(None, size, dtype=pl.Int64, eager=True).scatter(
        ids.filter(known), nodes["node"].filter(known).cast(pl.Int64)
    )

    def node(key: str) -> pl.Series:
        event = nodes[f"{key}_event"].cast(pl.Int64)
        return node_of.gather(event.set(event >= size, None)).alias(key)

    nodes = nodes.with_columns(node(k) for k in ("launch", "wait", "call", "cross"))
    # a waiting call's own time is its return's tail (its end less the work's it waited for)
    back = nodes.select("call", "tail").drop_nulls()
    nodes = nodes.with_columns(nodes["dur"].scatter(back["call"], back["tail"]))
    at = {"start_ns": "p0", "dur": "pdur"}
    return nodes.with_columns(
        *(
            pl.col(column).gather(pl.col(key)).alias(f"{prefix}{name}")
            for key, prefix in (("chain", "c_"), ("launch", "l_"), ("wait", "w_"), ("cross", "x_"))
            for column, name in at.items()
        ),
        *(pl.col(k).gather(pl.col("launch")).alias(f"l_{k}") for k in CHAIN),
    )


def _latency(nodes: pl.DataFrame) -> int:
    """The launch latency: the median time from a launch call's start to its work's start,
    over the work whose lane was free when it was launched; 0 where none was."""
    free = nodes.filter(
        pl.col("launch").is_not_null()
        & ~pl.col("kind").is_in(HOST_NODES)
        & (pl.col("chain").is_null() | (pl.col("c_p0") + pl.col("c_pdur") <= pl.col("l_p0")))
    )
    median = (free["start_ns"] - free["l_p0"]).median()
    return 0 if median is None else max(0, int(median))  # type: ignore[arg-type]


def _graph(
    nodes: pl.DataFrame, latency: int, arrays: Mapping[str, Sequence[int]], table: pl.DataFrame
) -> Graph:
    """The graph of ``nodes`` from its linked ``arrays`` (``LINK_OUT``) and ``table``."""
    marks: dict[int, tuple[list[int], list[int]]] = {}
    found = nodes.filter(pl.col("kind") == "mark")
    first = pl.col("seq") == 2 * pl.col("step")  # _marks: a start's; an end's is one more
    for node, step, is_start in found.select("node", "step", first).iter_rows():
        starts, ends = marks.setdefault(int(step), ([], []))
        (starts if is_start else ends).append(int(node))
    linked: dict[str, Any] = {k: arrays[k] for k in LINK_OUT}
    return Graph(
        **linked,
        marks={s: (a, b) for s, (a, b) in marks.items() if a and b},
        latency_ns=latency,
        table=table,
    )
