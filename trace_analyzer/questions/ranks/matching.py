"""Each collective matched across ranks (docs/distributed.md, "Collectives matched across
ranks"): the records of one collective (collectives.py) on every rank brought together, its
skew, latency, each rank's wait, its size and bandwidths, per process group the totals and
the worst, and the point-to-point links.

- **Matching**: records with a process group and a ``seq`` match by (group, its ranks, seq);
  a rank whose records have no group falls back to the rule clocks used before: the n-th
  collective of the same name on each rank (``match_by`` ``name``), and a note says which
  ranks and why.
- **Skew**: the last rank's start less the first's, on the aligned clocks (clocks.py); the
  **last rank** is the one that started last. **Latency**: the shortest duration across the
  ranks (the others waited); a rank's **wait**: its duration less the latency.
- **Size**: elements × the dtype's bytes: the output for an allgather, the input for any
  other kind (a reducescatter's input). **Algorithm bandwidth**: size / latency (GB/s,
  10^9 bytes/s); **bus bandwidth**: that × ``BUS_FACTORS`` (NCCL's PERFORMANCE.md).
- **Overlapped**: a record's time with compute running on its device (``states``' kinds);
  **exposed**: the rest of its duration.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from trace_analyzer.analyses.busy import merge

# NCCL's bus bandwidth factors (nccl-tests doc/PERFORMANCE.md), of n ranks.
BUS_FACTORS: dict[str, Callable[[int], float]] = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send": lambda n: 1.0,
    "recv": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}
P2P = ("send", "recv", "sendrecv")


def keyed(recs: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """Return the records ``recs`` with ``match_by`` (``group`` or ``name``) and ``key``, the
    same for one collective on every rank; a note names the ranks matched by name."""
    n_of_name = pl.int_range(pl.len()).over("pid", "name", order_by="start_ns")
    by_group = pl.col("group").is_not_null() & pl.col("seq").is_not_null()
    out = recs.with_columns(
        match_by=pl.when(by_group).then(pl.lit("group")).otherwise(pl.lit("name")),
        key=pl.when(by_group)
        .then(pl.format("group {} {} #{}", "group", pl.col("group_ranks").fill_null("?"), "seq"))
        .otherwise(pl.format("{} #{}", "name", n_of_name)),
    )
    named = out.filter(pl.col("match_by") == "name")
    if named.height:
        who = sorted({r if r is not None else -1 for r in named["rank"].to_list()})
        shown = ", ".join("?" if r < 0 else str(r) for r in who)
        notes.append(
            f"rank {shown}: {named.height} collectives with no process group (no `Process "
            "Group Name` arg on the kernel or its record_param_comms, no single group in "
            "distributedInfo.pg_config): matched by name, the n-th of each name on each rank"
        )
    return out


def overlapped(recs: pl.DataFrame, done: pl.DataFrame) -> pl.DataFrame:
    """Return ``recs`` with ``overlap_ns`` (its time with compute of ``done`` running on the
    same device, each instant once) and ``exposed_ns`` (the rest of its duration)."""
    key = ["pid", "device"]
    compute = done.filter(pl.col("kind") == "compute").select(
        *key, "event_id", "start_ns", "end_ns"
    )
    if compute.is_empty() or recs.is_empty():
        return recs.with_columns(
            overlap_ns=pl.lit(0, pl.Int64), exposed_ns=pl.col("end_ns") - pl.col("start_ns")
        )
    blocks = (
        merge(compute, key)
        .select(*key, b0="start_ns", b1="end_ns")
        .sort(*key, "b0")
        .with_columns(before=(pl.col("b1") - pl.col("b0")).cum_sum().over(key))
        .with_columns(before=pl.col("before") - (pl.col("b1") - pl.col("b0")))
        .sort("b0")
    )

    def busy_until(t: str) -> pl.DataFrame:  # compute time on the device before instant t
        got = recs.select(*key, "event_id", t=t).sort("t")
        at = got.join_asof(blocks, left_on="t", right_on="b0", by=key, strategy="backward",
                           check_sortedness=False)  # fmt: skip
        done_by = pl.col("before") + pl.min_horizontal(pl.col("t"), "b1") - pl.col("b0")
        return at.select("event_id", pl.coalesce(done_by, 0).alias(t))

    cut = busy_until("start_ns").join(busy_until("end_ns"), on="event_id")
    over = cut.select("event_id", overlap_ns=pl.col("end_ns") - pl.col("start_ns"))
    return recs.join(over, on="event_id", how="left").with_columns(
        exposed_ns=pl.col("end_ns") - pl.col("start_ns") - pl.col("overlap_ns")
    )


def _size() -> pl.Expr:
    """A record's size in bytes (module doc): its output for an allgather, else its input."""
    nelems = (
        pl.when(pl.col("kind") == "allgather")
        .then(pl.coalesce("out_nelems", "in_nelems"))
        .otherwise(pl.coalesce("in_nelems", "out_nelems"))
    )
    return nelems * pl.col("dtype_bytes")


def _factor(kind: str | None, n: int | None) -> float | None:
    rule = BUS_FACTORS.get(kind or "")
    return rule(n) if rule is not None and n else None


def matched(recs: pl.DataFrame, shift: pl.DataFrame) -> pl.DataFrame:
    """Return one row per collective matched across ranks (``recs``: ``keyed`` and
    ``overlapped``; ``shift``: per pid the clock offset taken off, ``shift_ns``): its ranks,
    skew, last rank, latency, waits, size, bandwidths, exposed and overlapped time, and each
    rank's ``waits``."""
    at = recs.join(shift, on="pid", how="left").with_columns(
        t0=pl.col("start_ns") - pl.col("shift_ns").fill_null(0),
        dur=pl.col("end_ns") - pl.col("start_ns"),
        size=_size(),
    )
    at = at.with_columns(wait_ns=pl.col("dur") - pl.col("dur").min().over("key"))
    last = pl.col("rank").sort_by("t0", "rank", nulls_last=True).last()
    out = at.group_by("key").agg(
        pl.col("match_by", "group", "group_ranks", "seq", "name").first(),
        kind=pl.col("kind").drop_nulls().first(),
        step=pl.col("step").min(),
        ranks=pl.len(),
        group_size=pl.col("group_size").drop_nulls().first(),
        start_ns=pl.col("t0").min(),
        skew_ns=pl.col("t0").max() - pl.col("t0").min(),
        last_rank=last,
        latency_ns=pl.col("dur").min(),
        wait_ns=pl.col("wait_ns").sum(),
        max_wait_ns=pl.col("wait_ns").max(),
        most_waiting_rank=pl.col("rank").sort_by("wait_ns", "rank").last(),
        size_bytes=pl.col("size").sort_by("rank", nulls_last=True).drop_nulls().first(),
        exposed_ns=pl.col("exposed_ns").sum(),
        overlap_ns=pl.col("overlap_ns").sum(),
        waits=pl.struct("rank", "pid", wait_ns="wait_ns", duration_ns="dur").sort_by("rank"),
    )
    n = pl.coalesce("group_size", "ranks")
    algbw = pl.col("size_bytes") / pl.col("latency_ns")  # bytes per ns: GB/s
    factor = pl.struct("kind", n.alias("n")).map_elements(
        lambda s: _factor(s["kind"], s["n"]), return_dtype=pl.Float64
    )
    return (
        out.with_columns(algbw_gbps=algbw.round(3), busbw_gbps=(algbw * factor).round(3))
        .sort("start_ns", "key")
        .with_columns(collective=pl.int_range(pl.len(), dtype=pl.Int64))
    )


def group_totals(coll: pl.DataFrame) -> pl.DataFrame:
    """Return per process group (``match_by`` ``name``: one row, group null) of the matched
    collectives ``coll``: how many, the totals of latency, wait, skew, size and exposed time,
    the collective of the longest skew and of the longest wait, and its late rank (the one
    that started last most often where some started later than others; ties: the longer
    skew in all)."""
    key = ["match_by", "group", "group_ranks"]
    late = (
        coll.filter((pl.col("ranks") > 1) & (pl.col("skew_ns") > 0))
        .group_by(*key, "last_rank")
        .agg(n=pl.len(), s=pl.col("skew_ns").sum())
        .sort("n", "s", "last_rank", descending=[True, True, False], nulls_last=True)
        .group_by(key, maintain_order=True)
        .agg(late_rank=pl.col("last_rank").first(), late_count=pl.col("n").first())
    )
    worst = {
        "skew": pl.col("key").sort_by("skew_ns", "start_ns", descending=[True, False]).first(),
        "wait": pl.col("key").sort_by("max_wait_ns", "start_ns", descending=[True, False]).first(),
    }
    return (
        coll.group_by(key)
        .agg(
            collectives=pl.len(),
            ranks=pl.col("ranks").max(),
            kinds=pl.col("kind").drop_nulls().unique().sort().str.join(", "),
            latency_ns=pl.col("latency_ns").sum(),
            wait_ns=pl.col("wait_ns").sum(),
            skew_ns=pl.col("skew_ns").sum(),
            size_bytes=pl.when(pl.col("size_bytes").count() > 0).then(pl.col("size_bytes").sum()),
            exposed_ns=pl.col("exposed_ns").sum(),
            overlap_ns=pl.col("overlap_ns").sum(),
            worst_skew=worst["skew"],
            worst_skew_ns=pl.col("skew_ns").max(),
            worst_wait=worst["wait"],
            worst_wait_ns=pl.col("max_wait_ns").max(),
        )
        .join(late, on=key, how="left", nulls_equal=True)
        .sort("wait_ns", *key, descending=[True, False, False, False], nulls_last=True)
    )  # (the groups in one order however the ranks' records came: a run read a rank at a time)


def links(coll: pl.DataFrame, recs: pl.DataFrame) -> pl.DataFrame:
    """Return per pair of ranks that sent to each other (point-to-point collectives matched on
    two ranks: ``P2P``) the transfers, bytes, latency and bandwidth (bytes / latency, GB/s),
    slowest first: from the rank of the send (else the lower rank) to the other."""
    p2p = coll.filter(pl.col("kind").is_in(P2P) & (pl.col("ranks") == 2))
    if p2p.is_empty():
        return pl.DataFrame(
            schema={"group": pl.String, "src": pl.Int64, "dst": pl.Int64, "transfers": pl.UInt32,
                    "size_bytes": pl.Int64, "latency_ns": pl.Int64, "bandwidth_gbps": pl.Float64}
        )  # fmt: skip
    ends = recs.join(p2p.select("key"), on="key").select(
        "key", "rank", send=pl.col("kind") == "send"
    )
    src = ends.sort("send", "rank", descending=[True, False]).group_by("key").agg(
        src=pl.col("rank").first(), dst=pl.col("rank").last()
    )  # fmt: skip
    return (
        p2p.join(src, on="key")
        .group_by("group", "src", "dst")
        .agg(
            transfers=pl.len(),
            size_bytes=pl.col("size_bytes").sum(),
            latency_ns=pl.col("latency_ns").sum(),
        )
        .with_columns(bandwidth_gbps=(pl.col("size_bytes") / pl.col("latency_ns")).round(3))
        .sort(
            "bandwidth_gbps",
            "latency_ns",
            "group",
            "src",
            "dst",
            descending=[False, True, False, False, False],
            nulls_last=True,
        )  # fmt: skip
    )
