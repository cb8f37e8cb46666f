"""The what-ifs: each a change to the graph, replayed (docs/critical-path.md, "What-ifs").

Each scenario says in words what it assumes. ``touched`` names the nodes it changes, so
that its evidence is the segments of the recorded critical path on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from trace_analyzer.model.arrow import frame
from trace_analyzer.questions.critical.graph import Graph
from trace_analyzer.questions.critical.link import HOST_NODES, NONE, _replay
from trace_analyzer.questions.critical.replay import Change, Sparse
from trace_analyzer.units import glob_regex


@dataclass(frozen=True)
class Scenario:
    """One what-if: ``key`` (how it is asked for: ``host:GLOB`` …), ``fix`` (what to
    change, in words), ``assumption``, the ``change``, the nodes it ``touched`` and the
    ``kinds`` of the critical path's segments on them that it changes (its evidence)."""

    key: str
    fix: str
    assumption: str
    change: Change
    touched: frozenset[int] | Sparse
    kinds: tuple[str, ...] = ()

    def nodes(self) -> pl.Series:
        """The nodes it touched, as an Int64 column."""
        if isinstance(self.touched, Sparse):
            return self.touched.nodes()
        return pl.Series("node", list(self.touched), dtype=pl.Int64)


def host_time(
    g: Graph, ranges: pl.DataFrame, label: str, key: str, *, native: bool = True
) -> Scenario:
    """The host's time between calls spent inside ``ranges`` (pid, tid, start_ns, end_ns: a
    frame's, an annotation's or an op's instances on their threads) taken away (the time of
    each gap they cover by ``_replay.covered`` where it was compiled, else by polars, which
    gives the same)."""
    gaps = g.host_gaps()
    if native and _replay is not None:
        ordered = ranges.drop_nulls(["pid", "tid"]).select(
            pl.col("pid", "tid", "start_ns", "end_ns").cast(pl.Int64)
        )
        ordered = ordered.sort("pid", "tid", "start_ns").rechunk()
        found = _replay.covered(gaps.__arrow_c_stream__(), ordered.__arrow_c_stream__())
        gap: Sparse | dict[int, int] = Sparse(frame(found))
    else:
        threads = ranges.select("pid", "tid").unique()
        on = gaps.join(threads, on=["pid", "tid"], how="semi")  # the threads the ranges are on
        cover = _covered(on, _union(ranges))
        gap = {int(n): g.gap[n] - int(c) for n, c in cover.select("node", "cut").iter_rows()}
    return Scenario(
        key,
        f"remove the host time in {label}",
        f"the thread's time inside {label} between its calls is gone; the calls themselves "
        "and the work they launch are unchanged",
        Change(gap=gap),
        gap if isinstance(gap, Sparse) else frozenset(gap),
        ("host",),
    )


def _union(ranges: pl.DataFrame) -> pl.DataFrame:
    """``ranges`` merged per thread, each with the time covered before it (``before``)."""
    r = ranges.select("pid", "tid", "start_ns", "end_ns").sort("pid", "tid", "start_ns")
    r = r.with_columns(
        new=(pl.col("start_ns") > pl.col("end_ns").cum_max().shift(1).over("pid", "tid"))
        .fill_null(True)
        .cum_sum()
        .over("pid", "tid")
    )
    merged = r.group_by("pid", "tid", "new").agg(pl.col("start_ns").min(), pl.col("end_ns").max())
    return (
        merged.sort("pid", "tid", "start_ns")
        .with_columns(
            before=(pl.col("end_ns") - pl.col("start_ns"))
            .cum_sum()
            .shift(1, fill_value=0)
            .over("pid", "tid")
        )
        .drop("new")
    )


def _covered(nodes: pl.DataFrame, merged: pl.DataFrame) -> pl.DataFrame:
    """``nodes`` (pid, tid, a, b) with ``cut``: the time of [a, b] inside ``merged``."""

    def upto(column: str) -> pl.DataFrame:
        at = nodes.select("node", "pid", "tid", t=column).sort("t")
        found = at.join_asof(
            merged, left_on="t", right_on="start_ns", by=["pid", "tid"], strategy="backward",
            check_sortedness=False,
        )  # fmt: skip
        inside = pl.min_horizontal("t", "end_ns") - pl.col("start_ns")
        return found.select("node", c=(pl.col("before") + inside).fill_null(0))

    cut = upto("a").rename({"c": "ca"}).join(upto("b").rename({"c": "cb"}), on="node")
    out = nodes.join(cut, on="node").with_columns(cut=pl.col("cb") - pl.col("ca"))
    return out.filter(pl.col("cut") > 0)


def graphs(g: Graph, api: str) -> Scenario:
    """Every step's device work launched as one CUDA/HIP graph (``api``), per process: each
    piece waits for the first launch of its process's step (the earliest call, in node
    order), not its own. Its changes are frames (``Sparse``): a run's device work is most of
    its nodes, and a Python int per node would hold more than the graph."""
    device = g.table.select("node", "kind", "pid", "step").with_columns(g.links("launch"))
    device = device.filter(~pl.col("kind").is_in(HOST_NODES) & pl.col("launch").is_not_null())
    device = device.select(
        pl.col("node").cast(pl.Int64), "launch", head=pl.col("launch").min().over("pid", "step")
    )
    relinked = device.filter(pl.col("launch") != pl.col("head"))
    returns = g.table.select("kind").with_columns(g.links("call"))
    waiting = returns.filter(pl.col("kind") == "return")["call"]
    calls = device["launch"].unique()
    free = calls.filter(~calls.is_in(waiting.implode()) & ~calls.is_in(device["head"].implode()))
    launch = Sparse(relinked.select("node", value="head"))
    lag = Sparse(relinked.select("node", value=pl.lit(g.latency_ns, pl.Int64)))
    dur = Sparse(pl.DataFrame({"node": free, "value": pl.zeros(free.len(), pl.Int64, eager=True)}))
    touched = pl.concat([launch.frame, dur.frame]).unique("node", maintain_order=True)
    return Scenario(
        "graphs",
        f"capture each step as a {api} graph",
        "each step's device work starts when its lane is free once the step's first launch "
        "is made, no longer waiting for its own launch call, which costs the host nothing; "
        "the Python and framework time between calls is unchanged (a graph replay removes "
        "it too, so the saving is a lower bound); the work's own times are unchanged",
        Change(dur=dur, launch=launch, lag=lag),
        Sparse(touched),
        ("launch", "call"),
    )


def asynchronous(g: Graph, calls: set[int], name: str, key: str) -> Scenario:
    """The returns of ``calls`` (waiting calls named ``name``) no longer wait for the device."""
    wait = {i: NONE for i in g.returns() if g.call[i] in calls}
    return Scenario(
        key,
        f"make {name} asynchronous",
        f"{name} returns without waiting for the device work it waited for (non_blocking=True, "
        "a synchronize removed or moved after the step's work); what it launches still runs",
        Change(wait=wait),
        frozenset(wait),
        ("sync",),
    )


def no_copy(g: Graph, copies: set[int], name: str, key: str) -> Scenario:
    """The device copies ``copies`` (named ``name``) take no time."""
    return Scenario(
        key,
        f"remove the copies {name}",
        f"every {name} takes no device time (the data stays where it is used, or the copy is "
        "not needed); its launch call stays",
        Change(dur=dict.fromkeys(copies, 0)),
        frozenset(copies),
        ("memory",),
    )


def fuse(g: Graph, ops: dict[int, str], glob: str, factor: float) -> Scenario:
    """Each run of consecutive device work on one lane whose op matches ``glob`` made one
    piece of work of ``factor`` × their summed time, launched once."""
    wanted, label = re.compile(glob_regex(glob)), f"`{glob}`"
    dur: dict[int, int] = {}
    launch: dict[int, int] = {}
    delay: dict[int, int] = {}
    head, total, last = NONE, 0, NONE
    runs: list[tuple[int, int]] = []
    device = g.table.select("node", "kind", "lane")
    device = device.filter(~pl.col("kind").is_in(HOST_NODES)).sort("lane", "node")
    for i in device["node"].to_list():
        joined = wanted.search(ops.get(i, "")) is not None
        if joined and head != NONE and g.chain[i] == last:
            total += g.dur[i]
            dur[i], launch[i], delay[i] = 0, NONE, 0
        else:
            if head != NONE:
                runs.append((head, total))
            head, total = (i, g.dur[i]) if joined else (NONE, 0)
        last = i
    if head != NONE:
        runs.append((head, total))
    for h, t in runs:
        dur[h] = round(factor * t)
    calls = {g.launch[i] for i in launch if g.launch[i] != NONE}
    waiting = {g.call[i] for i in g.returns()}
    dur.update(dict.fromkeys(calls - waiting, 0))
    times = "their summed time" if factor == 1 else f"{factor:g} × their summed time"
    return Scenario(
        f"fuse:{glob}" + ("" if factor == 1 else f"×{factor:g}"),
        f"fuse {label} into one launch per run",
        f"each run of consecutive device work of {label} on one lane becomes one piece of work "
        f"of {times}, started as the first was, launched once (the other launch calls cost "
        "the host nothing); a fused kernel's real time is not known from this trace",
        Change(dur=dur, launch=launch, delay=delay),
        frozenset(dur),
        ("compute", "communication", "memory", "launch", "call", "unexplained"),
    )


def warmup(first: int) -> Scenario:
    """The first step left out of the mean."""
    return Scenario(
        "warmup",
        f"exclude ProfilerStep#{first} (warm-up) from the measured steps",
        "the first step's one-time work (allocation, autotuning, compilation, cache fills) "
        "does not recur; profile with a schedule whose warmup skips it",
        Change(skip=frozenset({first})),
        frozenset(),
    )
