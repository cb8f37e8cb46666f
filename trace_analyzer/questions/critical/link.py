"""The linking of a graph's nodes (graph.py): each node's dependencies as node numbers, its
own time, the host's gap before it, its launch lag and the delay no dependency explains, and
the run's launch latency (docs/critical-path.md, "The graph"). Compiled where a compiler built
``_replay`` (``_replay.link``, one pass over the nodes' columns); ``_by_polars`` is its
reference and the fallback, held to the same graph on the corpus.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

import polars as pl

from trace_analyzer.model.pages import zeroed

# The kinds of the nodes that are not device work.
HOST_NODES = ("call", "mark", "return")
NONE = -1
NUL = -(1 << 63)  # a null, as the compiled parts read one (_replay.c's NUL)

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
OWN_CODES = {"compute": 0, "communication": 1, "memory": 2, "call": 3}

# The node table's columns (Graph.table; its links, as columns, from Graph.links).
TABLE = ("node", "event_id", "kind", "name", "lane", "pid", "tid", "start_ns", "end_ns", "step")
# The columns the link reads (_replay.c's I_ order; the kind and the lane as their codes) and
# the arrays it makes (O_ order).
LINK_IN = (
    "event_id", "kind", "pid", "tid", "lane", "start_ns", "end_ns", "tail",
    "launch_event", "wait_event", "call_event", "cross_event",
)  # fmt: skip
LINK_OUT = (
    "event", "start", "dur", "chain", "gap", "launch", "lag", "wait", "cross", "tail",
    "delay", "anchored", "call", "own",
)  # fmt: skip
# A node's chain, the thread or the lane it runs on one piece at a time: 0, pid, tid for a
# host node's thread; 1, the lane, 0 for device work's lane (_replay.c's CK0-CK2).
CHAIN = ("ck0", "ck1", "ck2")
# What linking gives: the launch latency, the graph's arrays (``LINK_OUT``) and its table.
Linked = tuple[int, dict[str, Sequence[int]], pl.DataFrame]


def linked(nodes: pl.DataFrame, *, native: bool = True) -> Linked:
    """``nodes`` (in their order, numbered: ``node``) linked (module doc): by the compiled
    link where it was built, else (or with ``native`` False) by polars."""
    if native and _replay is not None:
        return _compiled(nodes)
    return _by_polars(nodes)


def _compiled(nodes: pl.DataFrame) -> Linked:
    """``nodes`` linked by the compiled link (_replay.c): what ``_by_polars`` gives."""
    assert _replay is not None
    codes = {"kind": pl.col("kind").to_physical(), "lane": pl.col("lane").to_physical()}
    # nulls as _replay.c's NUL, by polars across the columns at once (the link then reads every
    # column where it lies, none copied value by value)
    columns = nodes.select(
        codes.get(c, pl.col(c)).cast(pl.Int64).fill_null(NUL) for c in LINK_IN
    ).rechunk()
    size = 8 * nodes.height
    out = zeroed(len(LINK_OUT) * size)  # every array in one buffer, in huge pages where it can
    latency = _replay.link(columns.__arrow_c_stream__(), out)
    got: dict[str, Sequence[int]] = {
        k: out[i * size : (i + 1) * size].cast("q") for i, k in enumerate(LINK_OUT)
    }
    return latency, got, _table(nodes)


def _table(nodes: pl.DataFrame) -> pl.DataFrame:
    return nodes.select(TABLE).with_columns(pl.col("node").cast(pl.Int64))


def _by_polars(nodes: pl.DataFrame) -> Linked:
    """``nodes`` linked by polars (the compiled link's reference)."""
    device = ~pl.col("kind").is_in(HOST_NODES)
    nodes = nodes.with_columns(
        ck0=device.cast(pl.Int64),
        ck1=pl.when(device).then(pl.col("lane").to_physical().cast(pl.Int64)).otherwise("pid"),
        ck2=pl.when(device).then(0).otherwise("tid"),
    )
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
    return latency, got, _table(nodes)


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
