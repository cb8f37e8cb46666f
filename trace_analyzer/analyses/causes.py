"""Why the hardware was idle: each gap's neighbours, its next op, and one cause.

Every gap's cause comes from ``cause()``, the one place the rules live (docs/gaps.md).
"""

from __future__ import annotations

import polars as pl

from trace_analyzer.analyses.busy import merge

CAUSES = ("host_dispatch", "transfer", "sync", "runtime", "uncorrelated", "other")
# A transfer or sync explains a gap when it covers at least this share of it.
COVER_SHARE = 0.5
SYNC_NAMES = r"(?i)synchroni[sz]e"
UNLINKED = "(unlinked)"


def cause() -> pl.Expr:
    """Return the cause of each gap; every rule is here, in order of precedence.

    Columns used: transfer_ns and sync_ns (how much of the gap a host<->device transfer or a
    synchronisation covers), next_op (the framework op the next execution links to) and
    next_dispatch_ns (when the host dispatched it: the PrivateUse1 dispatch or runtime launch,
    else the op's start).
    """
    gap = pl.col("duration_ns")
    return (
        pl.when(pl.col("transfer_ns") >= COVER_SHARE * gap)
        .then(pl.lit("transfer"))
        .when(pl.col("sync_ns") >= COVER_SHARE * gap)
        .then(pl.lit("sync"))
        .when(pl.col("next_op").is_null())
        .then(pl.lit("uncorrelated"))
        .when(pl.col("next_dispatch_ns") >= pl.col("start_ns"))
        .then(pl.lit("host_dispatch"))
        .when(pl.col("next_dispatch_ns") < pl.col("start_ns"))
        .then(pl.lit("runtime"))
        .otherwise(pl.lit("other"))
    )


def covered(gaps: pl.DataFrame, marks: pl.DataFrame, name: str) -> pl.DataFrame:
    """Return ``gaps`` with ``<name>_ns``: how much of each gap the intervals of ``marks``
    cover (per pid), and ``<name>_event``: the name of the last mark that starts before the
    gap ends."""
    if marks.is_empty():
        return gaps.with_columns(
            pl.lit(0, pl.Int64).alias(f"{name}_ns"), pl.lit(None, pl.String).alias(f"{name}_event")
        )
    m = (
        merge(marks, "pid")
        .sort("pid", "start_ns")
        .with_columns(length=pl.col("end_ns") - pl.col("start_ns"))
    )
    m = m.with_columns(before=(pl.col("length").cum_sum() - pl.col("length")).over("pid"))

    def upto(t: str) -> pl.DataFrame:  # covered time from the pid's first mark up to t
        probe = gaps.with_row_index("_g").select("_g", "pid", t=pl.col(t)).sort("t")
        hit = probe.join_asof(
            m.sort("start_ns"), left_on="t", right_on="start_ns", by="pid", check_sortedness=False
        )
        value = pl.col("before") + (pl.col("t") - pl.col("start_ns")).clip(0, pl.col("length"))
        return hit.select("_g", value.fill_null(0).alias("c")).sort("_g")

    cover = (upto("end_ns")["c"] - upto("start_ns")["c"]).alias(f"{name}_ns")
    last = (
        gaps.with_row_index("_g")
        .sort("end_ns")
        .join_asof(
            marks.select("pid", "start_ns", "end_ns", "name").sort("start_ns"),
            left_on="end_ns",
            right_on="start_ns",
            by="pid",
            suffix="_m",
            check_sortedness=False,
        )
        .sort("_g")
        .select(
            pl.when(pl.col("end_ns_m") > pl.col("start_ns"))
            .then(pl.col("name"))
            .alias(f"{name}_event")
        )
    )
    return gaps.with_columns(cover, last.to_series())


def attribute(gaps: pl.DataFrame, events: pl.DataFrame, chain: pl.DataFrame) -> pl.DataFrame:
    """Return ``gaps`` with the executions around them, the next op, its dispatch, and a
    cause; ``events``: the run's events, ``chain``: their chains (``chain.chain_table``)."""
    names = events.select("event_id", "name")
    nxt = chain.select(
        next_event="hw_event_id",
        next_op="op",
        next_runtime="runtime",
        link_method="link_method",
        next_dispatch_ns=pl.coalesce("dispatch_start_ns", "op_start_ns"),
    )
    kind = pl.col("lane_kind")
    transfers = events.filter(kind == "transfer")
    syncs = events.filter(
        (kind == "sync")
        | (
            kind.is_in(["runtime", "framework_op", "framework_dispatch"])
            & pl.col("name").str.contains(SYNC_NAMES)
        )
    )
    out = (
        gaps.join(
            names.rename({"event_id": "prev_event", "name": "prev_name"}),
            on="prev_event",
            how="left",
        )
        .join(
            names.rename({"event_id": "next_event", "name": "next_name"}),
            on="next_event",
            how="left",
        )
        .join(nxt, on="next_event", how="left")
        .join(chain.select(prev_event="hw_event_id", prev_op="op"), on="prev_event", how="left")
    )
    out = covered(out, transfers, "transfer")
    out = covered(out, syncs, "sync")
    return out.with_columns(cause=cause())


def by_op(device_gaps: pl.DataFrame) -> pl.DataFrame:
    """Return per op the idle time before its executions (``device_gaps``, attributed), in
    all and by cause."""
    if device_gaps.is_empty():
        return pl.DataFrame(
            schema={
                "op": pl.String,
                "idle_before_ns": pl.Int64,
                "gaps": pl.UInt32,
                **{f"{c}_ns": pl.Int64 for c in CAUSES},
            }
        )
    per_cause = [
        pl.col("duration_ns").filter(pl.col("cause") == c).sum().alias(f"{c}_ns") for c in CAUSES
    ]
    evidence = (
        pl.col("transfer_event")
        .filter(pl.col("cause") == "transfer")
        .drop_nulls()
        .unique()
        .sort()
        .str.join(", ")
        .alias("transfers")
    )
    return (
        device_gaps.group_by(op=pl.col("next_op").fill_null(UNLINKED))
        .agg(
            pl.col("duration_ns").sum().alias("idle_before_ns"),
            pl.len().alias("gaps"),
            *per_cause,
            evidence,
        )
        .sort("idle_before_ns", "op", descending=[True, False])
    )
