"""Neuron Explorer's lanes and event kinds, shared by the Parquet and legacy JSON readers.

Lanes follow Explorer's default grouping since Neuron 2.31 (docs/neuron-formats.md §3.1):
``<instance>/PID:<pid>/framework/TID:<tid>``, ``.../framework/Stream:<n>``,
``.../neuron_rt/NC:<lnc>``, ``.../neuron_hw/NC<lnc>:<pcore>``.
"""

from __future__ import annotations

import polars as pl

from trace_analyzer.model.intervals import enclosing
from trace_analyzer.model.schema import text

# Runtime events that move data between host and device (docs/neuron-formats.md §3.3, §2.1).
TRANSFERS = ("dmem_buf_copyin", "dmem_buf_copyout", "nrt_tensor_write", "nrt_tensor_read")
# Hardware-lane events that keep a NeuronCore busy (§3.4): executions and collectives.
EXECUTIONS = ("nc_exec_running", "cc_running")
HW_SYNC = ("cc_exec_barrier",)
FRAMEWORK_SUFFIX = r" \[trace\.json\]$"
# Keys of extra_attributes_json (or top-level JSON keys) that become columns. The last two
# are the Kineto args of Explorer's copies of trace.json events (§3.2), which link a Stream
# event to its dispatch and op where no flow does.
EXTRA_COLUMNS = {
    "exec_id": "exec_id",
    "nrt_sequence_id": "seq_id",
    "correlation": "correlation",
    "External id": "external_id",
}


# What ReadResult.rank_origin says of ranks taken from Explorer's worker id.
WORKER_GID = "worker_gid"


def worker_ranks(df: pl.DataFrame) -> pl.DataFrame:
    """Return df with ``rank`` from the Neuron worker id in its ``rank`` column (Explorer's
    ``worker_gid``, "global worker id, unique across processes and instances"; -1 or absent
    means unknown, docs/neuron-formats.md §2.1, §6): a row's own where it is >= 0, else its
    process's (host, pid) when all that process's rows with one agree (Explorer leaves it
    null on most framework rows), else null."""
    own = pl.when(pl.col("rank") >= 0).then(pl.col("rank"))
    proc = [pl.col("host").cast(pl.String), pl.col("pid")]
    lo, hi = own.min().over(proc), own.max().over(proc)
    return df.with_columns(rank=pl.coalesce(own, pl.when(lo == hi).then(lo)).cast(pl.Int64))


def label(df: pl.DataFrame) -> pl.DataFrame:
    """Return df with lane_kind and lane set from source, name, cores and stream.

    Expects columns source, name, host, pid, tid, device (nc_idx), core (pcore_idx) and
    ``stream`` (framework_stream_id, for framework events).
    """
    src, name = pl.col("source"), text("name").str.replace(FRAMEWORK_SUFFIX, "")
    kind = (
        pl.when(src == "neuron_hw")
        .then(
            pl.when(name.is_in(EXECUTIONS))
            .then(pl.lit("hardware"))
            .when(name.is_in(HW_SYNC))
            .then(pl.lit("sync"))
            .otherwise(pl.lit("other"))
        )
        .when(src == "neuron_rt")
        .then(pl.when(name.is_in(TRANSFERS)).then(pl.lit("transfer")).otherwise(pl.lit("runtime")))
        .when(name.str.contains(r"^ProfilerStep#\d+$"))
        .then(pl.lit("annotation"))
        .when(pl.col("stream").is_not_null())
        .then(pl.lit("framework_stream"))
        .otherwise(pl.lit("framework_op"))
    )
    proc = pl.format("{}/PID:{}", pl.col("host").fill_null("unknown"), "pid")
    lane = (
        pl.when(src == "neuron_hw")
        .then(
            pl.format(
                "{}/neuron_hw/NC{}:{}",
                proc,
                pl.col("device").fill_null(0),
                pl.col("core").fill_null(pl.col("device")).fill_null(0),
            )
        )
        .when(src == "neuron_rt")
        .then(pl.format("{}/neuron_rt/NC:{}", proc, pl.col("device").fill_null(0)))
        .when(pl.col("stream").is_not_null())
        .then(pl.format("{}/framework/Stream:{}", proc, "stream"))
        .otherwise(pl.format("{}/framework/TID:{}", proc, "tid"))
    )
    return df.with_columns(
        lane_kind=kind,
        lane=lane,
        name=name,
        category=src,
    )


def mark_dispatch(df: pl.DataFrame) -> pl.DataFrame:
    """Return df with framework dispatch events told apart from the ops that hold them.

    Explorer's copy of trace.json drops the Kineto category, so a PrivateUse1 dispatch event
    and its aten op look alike on a TID lane. The dispatch is named after its op and nested
    in it (docs/neuron-formats.md §4.4): a framework_op directly inside a framework_op of the
    same name is a framework_dispatch.
    """
    ops = df.with_row_index("_row").filter(pl.col("lane_kind") == "framework_op")
    if ops.is_empty():
        return df
    parent = enclosing(
        ((r["pid"], r["tid"]), r["start_ns"], r["end_ns"], r["_row"])
        for r in ops.select("pid", "tid", "start_ns", "end_ns", "_row").iter_rows(named=True)
    )
    names = dict(zip(ops["_row"].to_list(), ops["name"].to_list(), strict=True))
    dispatch = [row for row, up in parent.items() if names[row] == names[up]]
    return (
        df.with_row_index("_row")
        .with_columns(
            lane_kind=pl.when(pl.col("_row").is_in(dispatch))
            .then(pl.lit("framework_dispatch"))
            .otherwise(pl.col("lane_kind"))
        )
        .drop("_row")
    )
