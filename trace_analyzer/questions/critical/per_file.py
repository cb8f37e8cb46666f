"""What one file of a multi-rank run gives the critical path measured a rank at a time
(per_rank.py): its graph linked with the run's launch latency (``graph_of``), its nodes'
order keys (``node_keys``) and the passes' functions, each a function of one file's
``Profile``: its facts before anything is decided (``facts``), the critical path of the
windows that end in it (``walked``), and every what-if replayed on it (``measured``).

The run's graph read whole is the disjoint union of its files' graphs where no process and
no lane is in two files (every dependency is on a thread, a lane, a process's launches and
waits): one thing differs, the launch latency, the median over the run of the time from a
launch to its work's start on a free lane, which every file's device lags are made of. A
file's graph is linked alone and then given the run's latency (``relinked``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from trace_analyzer.loading.profile import Profile
from trace_analyzer.questions.critical import scenarios as what
from trace_analyzer.questions.critical.analysis import PATH_COLUMNS, _named, _path_table
from trace_analyzer.questions.critical.graph import Graph, build
from trace_analyzer.questions.critical.link import HOST_NODES, NONE, OWN_CODES, int64s
from trace_analyzer.questions.critical.own import labelled, own_time
from trace_analyzer.questions.critical.replay import Change, Times, replay, windows
from trace_analyzer.questions.critical.waits import LEVEL
from trace_analyzer.questions.gaps.hints import REPLAYS
from trace_analyzer.questions.gaps.per_rank import tie_counts

# A node's place in the run's order, as far as another file's nodes are concerned
# (graph.ORDER): by start, end and LEVEL, a mark's seq, then the event (whose run's id is by
# file where the times are equal), a return's call's start (its call's id, likewise), a
# mark's pid and tid (nulls first: the least int64).
NODE_KEY = ("start_ns", "end_ns", "level", "seq", "x1", "x2")
LEAST = -(1 << 63)
# A window's end as a file finds it: the time, the node's order key, the node.
End = tuple[int, tuple[int, ...], int]
# What a what-if is, as it travels: its kind ("host", "sync", "copy", "graphs", "warmup")
# and its argument (a label, a name, the graph API, the first step).
Spec = tuple[str, Any]
# Per file (``file_key``): the windows whose end node is its, as (step, start, node).
Tasks = dict[str, list[tuple[int | None, int, int]]]


def file_key(profile: Profile) -> str:
    """The file ``profile`` read, as the passes name it (its read paths)."""
    return "|".join(sorted(str(r.source.path) for r in profile.reads if r.read))


def _series(values: Sequence[int]) -> pl.Series:
    """One of the graph's int64 arrays (a memoryview, or a list) as an Int64 column."""
    return pl.Series(values=values.tolist() if isinstance(values, memoryview) else values,
                     dtype=pl.Int64)  # fmt: skip


def _like(template: Sequence[int], values: pl.Series) -> Sequence[int]:
    """``values`` as the graph holds its arrays (an int64 memoryview, or a list)."""
    return int64s(values) if isinstance(template, memoryview) else values.to_list()


def relinked(g: Graph, latency: int) -> Graph:
    """``g`` with the launch latency ``latency`` (the run's): each device node's lag from
    its launch call, ``min(its time from the call, latency)``, and its delay made again
    from its dependencies (the node's start less the latest: a launch is always one of
    them). A device node with no launch kept has the latency as its lag (the compiled
    link's; it is read only through a launch)."""
    if latency == g.latency_ns or not g.n:
        return replace(g, latency_ns=latency)
    a = pl.DataFrame(
        [
            _series(getattr(g, k)).alias(k)
            for k in ("start", "dur", "gap", "lag", "delay", "tail", "own")
        ]
        + g.links("chain", "launch", "wait", "cross")
    )
    start, dur = a["start"], a["dur"]

    def end_of(dep: str) -> pl.Expr:  # the end of each node's dependency ``dep`` (null: none)
        return pl.lit(start.gather(a[dep]) + dur.gather(a[dep]))

    device = pl.col("own") < OWN_CODES["call"]
    held = device & pl.col("launch").is_not_null()
    launched = pl.lit(start.gather(a["launch"]))
    lag = (
        pl.when(held)
        .then(pl.min_horizontal(pl.col("start") - launched, pl.lit(latency)))
        .when(device & (pl.col("lag") == g.latency_ns))
        .then(pl.lit(latency))
        .otherwise(pl.col("lag"))
    )
    latest = pl.max_horizontal(
        launched + pl.col("lag"), end_of("chain") + pl.col("gap"), end_of("wait") + pl.col("tail"),
        end_of("cross"),
    )  # fmt: skip
    out = a.with_columns(lag=lag).with_columns(
        delay=pl.when(held).then(pl.col("start") - latest).otherwise(pl.col("delay"))
    )
    return replace(
        g, lag=_like(g.lag, out["lag"]), delay=_like(g.delay, out["delay"]), latency_ns=latency,
    )  # fmt: skip


def graph_of(profile: Profile, latency: int) -> Graph:
    """The graph of one file, linked with the run's launch ``latency``."""
    return relinked(build(profile), latency)


def since_counts(g: Graph) -> pl.DataFrame:
    """The times the launch latency is the median of (link.py's ``_latency``): per device
    node whose launch is kept and whose lane was free when it was launched, its start less
    its launch call's; as distinct values and how often each comes (``value``, ``n``)."""
    launch = g.links("launch")[0]
    nodes = g.table.select("kind", "lane", "start_ns", "end_ns").with_columns(
        launch, at=g.table["start_ns"].gather(launch)
    )  # the launch call's start
    device = nodes.filter(~pl.col("kind").is_in(HOST_NODES)).with_columns(
        prev=pl.col("end_ns").shift(1).over("lane")
    )  # the lane's piece before it (in node order), before any dependency is dropped
    free = device.filter(
        pl.col("launch").is_not_null()
        & (pl.col("prev").is_null() | (pl.col("prev") <= pl.col("at")))
    )
    since = (free["start_ns"] - free["at"]).cast(pl.Int64)
    return since.to_frame("value").group_by("value").agg(n=pl.len())


def node_keys(g: Graph) -> pl.DataFrame:
    """Every node's ``NODE_KEY`` (and its ``node``), in node order."""
    level = pl.col("kind").cast(pl.String).replace_strict(
        {"mark": LEVEL["mark"], "call": LEVEL["call"], "return": LEVEL["return"]},
        default=LEVEL["device"], return_dtype=pl.Int64,
    )  # fmt: skip
    ends = [b for _, bs in g.marks.values() for b in bs]
    mark = pl.col("kind") == "mark"
    calls = _series(g.call)
    call_start = g.table["start_ns"].gather(calls.set(calls == NONE, None))
    return g.table.select(
        pl.col("node").cast(pl.Int64), "start_ns", "end_ns", level=level,
        seq=pl.when(mark).then(2 * pl.col("step") + pl.col("node").is_in(ends).cast(pl.Int64))
        .otherwise(0),
        x1=pl.when(mark).then(pl.col("pid").cast(pl.Int64).fill_null(LEAST))
        .when(pl.col("kind") == "return").then(call_start).otherwise(0),
        x2=pl.when(mark).then(pl.col("tid").cast(pl.Int64).fill_null(LEAST)).otherwise(0),
    )  # fmt: skip


@dataclass(frozen=True)
class FileFacts:
    """What one file tells the run before anything is decided: ``key`` (``file_key``), its
    processes' ``pids`` and its ``lanes`` (no two files may share one), the launch times
    its latency is the median of (``since_counts``), its graph API facts (device work on
    CUDA, ROCm; a graph replayed), and its windows as recorded: per step (None: the whole
    file, where no file has steps) its first start, the end its end marks give and the end
    its device work gives (``End``; None where none)."""

    key: str
    pids: frozenset[int | None]
    lanes: frozenset[str]
    since: pl.DataFrame
    api: tuple[bool, bool, bool]
    marked: bool
    windows: dict[int | None, tuple[int, End | None, End | None]]


def _end(keys: pl.DataFrame, t: int, node: int) -> End:
    return t, tuple(keys.row(node)[1:]), node


def facts(profile: Profile) -> FileFacts:
    """The ``FileFacts`` of one file."""
    events = profile.keyed
    g = build(profile)
    times = replay(g)  # every node's recorded times
    keys = node_keys(g)
    ends = _series(times.end)
    out: dict[int | None, tuple[int, End | None, End | None]] = {}
    if not g.marks and g.n:
        last = pl.DataFrame({"end": ends, "node": keys["node"]}).sort("end", "node").row(-1)
        out[None] = (int(min(times.start)), None, _end(keys, last[0], last[1]))
    by = g.by_step()
    for s, (starts, marks) in sorted(g.marks.items()):
        t, b = max((times.start[b], b) for b in marks)
        work = by.get(s, [])
        dev = None
        if work:
            e = ends.gather(work)
            i = work[int(e.arg_max())]  # type: ignore[arg-type]  # the first of equal ends
            dev = _end(keys, times.end[i], i)
        out[s] = (min(times.start[a] for a in starts), _end(keys, t, b), dev)
    hardware = events.filter(pl.col("lane_kind") == "hardware")["source"].cast(pl.String)
    return FileFacts(
        key=file_key(profile),
        pids=frozenset(events["pid"].unique().to_list()),
        lanes=frozenset(events["lane"].cast(pl.String).unique().to_list()),
        since=since_counts(g),
        api=(bool((hardware == "cuda").any()), bool((hardware == "rocm").any()),
             bool(events["name"].unique().cast(pl.String).str.contains(REPLAYS).any())),
        marked=bool(g.marks),
        windows=out,
    )  # fmt: skip


def _base(g: Graph) -> Times:
    """``g`` replayed as recorded through every node (analysis.critical's base)."""
    return replay(g, Change(dur={0: g.dur[0]})) if g.n else replay(g)


def _path(g: Graph, base: Times, mine: list[tuple[int | None, int, int]]) -> pl.DataFrame:
    """The critical path of the windows ``mine`` (step, start, end node), unlabelled."""
    if not mine:
        return pl.DataFrame(schema=PATH_COLUMNS)
    return _path_table(g, base, {s: (w0, 0, node) for s, w0, node in mine})


@dataclass(frozen=True)
class Walked:
    """What one file gives of the run's critical path: the ``segments`` of the windows that
    end in it (analysis.PATH_COLUMNS, labelled; ``event_id`` and ``node`` its own), the
    events they name (``refs``: id, start_ns, end_ns) and their nodes' keys (``nodes``:
    node, ``NODE_KEY``), and whether its replay as recorded gave every node its recorded
    times (``exact``: what the what-ifs' replays, each from its first changed node, take)."""

    segments: pl.DataFrame
    refs: pl.DataFrame
    nodes: pl.DataFrame
    exact: bool


def walked(profile: Profile, *, latency: int, tasks: Tasks) -> Walked:
    """The ``Walked`` of one file, linked with the run's ``latency``; its windows to walk are
    ``tasks[file_key(profile)]``."""
    g = graph_of(profile, latency)
    base = _base(g)
    recorded = replay(g)
    exact = _series(base.start).equals(_series(recorded.start)) and _series(base.end).equals(
        _series(recorded.end)
    )
    segs = _path(g, base, tasks.get(file_key(profile), []))
    segs = labelled(segs, own_time(profile.keyed, None, None))
    nodes = segs["node"].unique().sort()
    refs = g.table[nodes].select(id="event_id", start_ns="start_ns", end_ns="end_ns")
    return Walked(segs, refs.drop_nulls("id"), node_keys(g)[nodes], exact)


def scenario(g: Graph, own: pl.DataFrame | None, spec: Spec) -> what.Scenario:
    """The what-if ``spec`` on one file's graph (as analysis._candidates makes it)."""
    import re

    kind, arg = spec
    if kind == "host":
        assert own is not None
        mine = own.filter(pl.col("label") == arg)
        return what.host_time(g, mine, f"`{arg}` (its own time)", f"host:{arg}")
    if kind == "sync":
        calls = set(_named(g, "return", f"^{re.escape(arg)}$")["call"].to_list())
        return what.asynchronous(g, calls, f"`{arg}`", f"sync:{arg}")
    if kind == "copy":
        copies = set(_named(g, "memory", f"^{re.escape(arg)}$")["node"].to_list())
        return what.no_copy(g, copies, f"`{arg}`", f"copy:{arg}")
    if kind == "graphs":
        return what.graphs(g, arg)
    return what.warmup(arg)


def device_parts(g: Graph, change: Change) -> dict[int | None, int]:
    """Per step, the recorded time of the device work launched in it, summed, less what
    ``change`` takes off each node (analysis._device_time's terms, before the mean)."""
    out = dict(g.device_sums())
    if change.dur:
        step, dur, own, call = g.step, g.dur, g.own, OWN_CODES["call"]
        for i, v in change.dur.items():
            if own[i] < call:
                out[step[i]] = out.get(step[i], 0) - (dur[i] - v)
    return out


@dataclass(frozen=True)
class Measured:
    """What one file gives of each what-if: per step its window replayed (``spans``: start,
    end), the device time per step (``device_parts``), the nodes of its own path segments
    the what-if changes (``touched``); and the tie counts of the run's event ids
    (``events``) and node ids (``nodes``) its queries ask (``tie_counts``)."""

    spans: list[dict[int | None, tuple[int, int]]]
    device: list[dict[int | None, int]]
    touched: list[list[int]]
    about: list[tuple[str, str, str, tuple[str, ...], frozenset[int]]]
    events: tuple[pl.Series, pl.DataFrame] | None
    nodes: tuple[pl.Series, pl.DataFrame] | None


def measured(
    profile: Profile,
    *,
    latency: int,
    tasks: Tasks,
    specs: list[Spec],
    pins: list[int | None],
    events: pl.DataFrame,
    nodes: pl.DataFrame,
) -> Measured:
    """The ``Measured`` of one file: each of ``specs`` replayed with the start marks of the
    step ``pins`` names for it kept as recorded; the tie counts of the queries ``events``
    (start_ns, end_ns) and ``nodes`` (``NODE_KEY``), where asked."""
    g = graph_of(profile, latency)
    own = own_time(profile.keyed, None, None) if any(k == "host" for k, _ in specs) else None
    path = _path(g, _base(g), tasks.get(file_key(profile), []))["node"].unique()
    g.host_gaps()
    spans, device, touched, about = [], [], [], []
    for spec, pin in zip(specs, pins, strict=True):
        sc = scenario(g, own, spec)
        kept = frozenset(g.marks[pin][0]) if pin in g.marks else frozenset()
        times = replay(g, sc.change, kept)
        spans.append({s: (a, b) for s, (a, b, _) in windows(g, times).items()})
        device.append(device_parts(g, sc.change))
        hit = sc.nodes()  # (a warm-up's: none)
        touched.append(sorted(hit.filter(hit.is_in(path.implode())).to_list()))
        about.append((sc.fix, sc.key, sc.assumption, sc.kinds, sc.change.skip))
    return Measured(
        spans, device, touched, about,
        tie_counts(profile.events, events) if events.height else None,
        tie_counts(node_keys(g), nodes, NODE_KEY) if nodes.height else None,
    )  # fmt: skip
