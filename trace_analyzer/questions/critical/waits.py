"""What waited for what (docs/critical-path.md, "The graph"): the device work each call that
waited for the device waited for (a blocking call's own work, a synchronize's latest work),
which gives the call a **return** node, and the work on another stream each recorded stream
wait held a piece of device work for. graph.py builds the graph with them.
"""

from __future__ import annotations

import polars as pl

from trace_analyzer.model.arrow import frame
from trace_analyzer.model.schema import matching
from trace_analyzer.questions.critical.link import _replay

SYNC_NAMES = r"(?i)synchroni[sz]e"
# Calls that return when the device work they launched is done: a synchronous copy or set
# (no "Async" in the name), a Neuron runtime wait ("host waiting for NeuronCore execution to
# complete", docs/neuron-formats.md). A launch whose work happens to end inside it did not
# wait for it.
BLOCKING = r"(?i)(^(cuda|hip|cu)(Memcpy|Memset)|_wait$)"
ASYNC = r"(?i)async"
# Where nodes of one start time and one end time go first: marks, calls, device, returns.
LEVEL = {"mark": 0, "call": 1, "device": 2, "return": 3}


def returns(calls: pl.DataFrame, device: pl.DataFrame, *, native: bool = True) -> pl.DataFrame:
    """The return nodes (module doc): one after each of the ``calls`` (the host's call nodes)
    that waited for the ``device`` work (its nodes, with the ``launch_event`` of each), with
    its ``call_event``, its ``wait_event`` (the device work), ``tail`` (the call's end less
    that work's end: the call's own time in the graph). What each waited for is found by the
    compiled ``_replay.waited`` where it was built, else by polars (``_waits``), which gives
    the same. (Columns are selected before rows are filtered, and the returns' own columns
    gathered by row at the end: a filter copies every column it is given.)"""
    rows = calls.select("event_id", "name", "pid", "start_ns", "end_ns").with_row_index("_row")
    work = device.select("event_id", "launch_event", "end_ns", "pid")
    waits = _compiled(rows, work) if native and _replay is not None else _waits(rows, work)
    call = calls.select("name", "lane", "pid", "tid", "end_ns")[waits["_row"]]
    return pl.concat([call, waits.drop("_row")], how="horizontal").select(
        "name", "lane", "pid", "tid",
        event_id=pl.lit(None, pl.Int64), call_event="event_id", wait_event="wait_event",
        start_ns="end_ns", end_ns="end_ns", kind=pl.lit("return", calls["kind"].dtype),
        level=pl.lit(LEVEL["return"]), seq=pl.lit(0, pl.Int64),
        tail=pl.col("end_ns") - pl.col("w_end"),
    )  # fmt: skip


def _compiled(calls: pl.DataFrame, device: pl.DataFrame) -> pl.DataFrame:
    """``_waits``' answer by ``_replay.waited`` (its rows in the calls' order)."""
    assert _replay is not None
    flags = {
        "blocking": matching(calls["name"], BLOCKING) & ~matching(calls["name"], ASYNC),
        "sync": matching(calls["name"], SYNC_NAMES),
    }
    found = frame(
        _replay.waited(
            device.select(pl.col("event_id", "launch_event", "end_ns", "pid").cast(pl.Int64))
            .rechunk()
            .__arrow_c_stream__(),
            calls.select(
                pl.col("event_id", "start_ns", "end_ns", "pid").cast(pl.Int64),
                *(f.fill_null(False).cast(pl.Int64).alias(k) for k, f in flags.items()),
            )
            .rechunk()
            .__arrow_c_stream__(),
        )
    )
    picked = calls.select("_row", "event_id")[found["row"]]
    return pl.concat([picked, found.drop("row")], how="horizontal")


def _waits(calls: pl.DataFrame, device: pl.DataFrame) -> pl.DataFrame:
    """Per call that waited for the device: its ``_row`` and ``event_id``, the work it waited
    for (``wait_event``) and that work's end (``w_end``): a blocking call's own latest-ending
    work (of equal ends, the larger id), else a synchronize's (``_synchronized``)."""
    blocking = calls.filter(matching(calls["name"], BLOCKING) & ~matching(calls["name"], ASYNC))
    own = (
        device.select("launch_event", wait_event="event_id", w_end="end_ns")
        .join(
            blocking.select(launch_event="event_id", c0="start_ns", c1="end_ns"), on="launch_event"
        )  # fmt: skip
        .filter((pl.col("w_end") > pl.col("c0")) & (pl.col("w_end") <= pl.col("c1")))
        .sort("w_end", "wait_event")
        .group_by("launch_event")
        .last()
        .select(event_id="launch_event", wait_event="wait_event", w_end="w_end")
    )
    synced = _synchronized(calls, device).join(own.select("event_id"), on="event_id", how="anti")
    return calls.select("_row", "event_id").join(pl.concat([own, synced]), on="event_id")


def _synchronized(calls: pl.DataFrame, device: pl.DataFrame) -> pl.DataFrame:
    """Per synchronize call, the latest-ending device work of its process launched before
    it (by its launch call's start), where that work ended inside the call."""
    syncs = calls.filter(matching(calls["name"], SYNC_NAMES))
    if not syncs.height:
        return pl.DataFrame(schema={"event_id": pl.Int64, "wait_event": pl.Int64,
                                    "w_end": pl.Int64})  # fmt: skip
    starts = calls.select(launch_event="event_id", launched_ns="start_ns")
    work = (
        device.join(starts, on="launch_event", how="inner")
        .sort("launched_ns", "event_id")
        .with_columns(latest=pl.col("end_ns").cum_max().over("pid"))
        .with_columns(
            last_id=pl.when(pl.col("end_ns") == pl.col("latest")).then(pl.col("event_id"))
        )
        .with_columns(pl.col("last_id").forward_fill().over("pid"))
        .select("pid", "launched_ns", "latest", "last_id")
    )
    found = syncs.sort("start_ns").join_asof(
        work, left_on="start_ns", right_on="launched_ns", by="pid", strategy="backward",
        check_sortedness=False,
    )  # fmt: skip
    return found.filter(
        (pl.col("latest") > pl.col("start_ns")) & (pl.col("latest") <= pl.col("end_ns"))
    ).select("event_id", wait_event="last_id", w_end="latest")


def stream_waits(events: pl.DataFrame, work: pl.DataFrame) -> pl.DataFrame:
    """Per piece of device work that a recorded stream wait held, the work it waited for
    (``cross_event``): a stream wait (Kineto's ``cuda_sync`` "Stream Wait Event") holds the
    first work launched on its stream after its ``cudaStreamWaitEvent`` call until the event
    recorded on ``wait_stream`` (by the call ``wait_record`` names) is reached: the end of
    the last work launched on that stream before the recording call. Of several, the one
    that ends last."""
    columns = ("pid", "device", "stream", "wait_stream", "wait_record", "correlation")
    waits = events.select(columns).filter(
        pl.col("wait_record").is_not_null() & pl.col("stream").is_not_null()
    )
    if not waits.height:
        return pl.DataFrame(schema={"event_id": pl.Int64, "cross_event": pl.Int64})
    calls = events.select("lane_kind", "pid", "correlation", "start_ns")
    calls = calls.filter(pl.col("lane_kind") == "runtime").drop("lane_kind")
    waits = (
        waits.select("pid", "device", "stream", "wait_stream", "wait_record", "correlation")
        .join(calls.rename({"start_ns": "waited_ns"}), on=["pid", "correlation"])
        .join(
            calls.rename({"correlation": "wait_record", "start_ns": "recorded_ns"}),
            on=["pid", "wait_record"],
        )  # fmt: skip
    )
    on = work.select("pid", "device", "stream", "event_id", "end_ns", "launched_ns").sort(
        "launched_ns"
    )
    awaited = waits.sort("recorded_ns").join_asof(
        on.rename({"stream": "wait_stream", "event_id": "cross_event", "end_ns": "cross_end"}),
        left_on="recorded_ns", right_on="launched_ns", by=["pid", "device", "wait_stream"],
        strategy="backward", check_sortedness=False,
    )  # fmt: skip
    held = awaited.drop("launched_ns").sort("waited_ns").join_asof(
        on.select("pid", "device", "stream", "event_id", "launched_ns"),
        left_on="waited_ns", right_on="launched_ns", by=["pid", "device", "stream"],
        strategy="forward", check_sortedness=False,
    )  # fmt: skip
    return (
        held.drop_nulls(["event_id", "cross_event"])
        .sort("cross_end")
        .group_by("event_id")
        .last()
        .select("event_id", "cross_event")
    )
