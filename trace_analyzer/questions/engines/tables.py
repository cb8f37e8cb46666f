"""The tables of `traceana engines` (questions/engines/analysis.py), per NEFF and physical core
of one device profile: the windows, each engine's figures, the DMA, throttling, FLOPs and bytes,
and the top opcodes, HLO ops and NKI source lines (docs/device.md has every definition).

Every frame here has ``neff`` filled (``UNKNOWN`` for a null NEFF) and ``pcore``; ``work`` is
the instructions without the ``EVENT_SEMAPHORE`` waits.
"""

from __future__ import annotations

import polars as pl

UNKNOWN = "(unknown NEFF)"
CORE = ["neff", "pcore"]
SMALL_DMA_BYTES = 4096  # a DMA transfer below this is small (the hint's threshold)
RAMP_NS = 3_000  # the TensorEngine's throttle ramp on Trn2: a gap below it is a short gap
TOP_KINDS = {"opcode": "opcode", "hlo": "hlo_name", "nki": "nki_source_location"}


def covered(iv: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Return per ``keys`` the length of the union of the intervals ``iv`` (``start_ns`` to
    ``end_ns``; overlapping or touching ones merged): ``keys`` and ``covered_ns``."""
    if iv.is_empty():
        return iv.select(*keys).with_columns(covered_ns=pl.lit(0, pl.Int64)).clear()
    reach = pl.col("end_ns").cum_max().shift(1).over(keys)
    block = (pl.col("start_ns") > reach).fill_null(True).cast(pl.Int32).cum_sum().over(keys)
    return (
        iv.select(*keys, "start_ns", "end_ns")
        .sort(*keys, "start_ns", "end_ns", nulls_last=True)
        .with_columns(block=block)
        .group_by(*keys, "block")
        .agg(s=pl.col("start_ns").min(), e=pl.col("end_ns").max())
        .group_by(keys)
        .agg(covered_ns=(pl.col("e") - pl.col("s")).sum())
    )


def short_gaps(work: pl.DataFrame, engine: str = "tensor", under: int = RAMP_NS) -> pl.DataFrame:
    """Return per NEFF and core how many idle gaps between consecutive instructions of
    ``engine`` are shorter than ``under`` ns (and longer than 0): ``short_gaps``."""
    rows = work.filter(pl.col("engine") == engine).sort(*CORE, "start_ns", "end_ns")
    reach = pl.col("end_ns").cum_max().shift(1).over(CORE)
    gap = pl.col("start_ns") - reach
    return rows.group_by(CORE).agg(
        short_gaps=((gap > 0) & (gap < under)).sum().cast(pl.Int64),
    )


def windows(ins: pl.DataFrame, execs: pl.DataFrame) -> pl.DataFrame:
    """Return per NEFF and core its window: the summed time of the NEFF's executions
    (``ExecutionInfo``), else its instructions' span on that core (first start to last
    end): ``neff``, ``pcore``, ``window_ns``, ``executions`` (null without ExecutionInfo)."""
    spans = ins.group_by(CORE).agg(first=pl.col("start_ns").min(), last=pl.col("end_ns").max())
    ran = execs.group_by("neff").agg(
        exec_ns=(pl.col("end_ns") - pl.col("start_ns")).sum(), executions=pl.len().cast(pl.Int64)
    )
    return spans.join(ran, on="neff", how="left").select(
        *CORE,
        window_ns=pl.coalesce("exec_ns", pl.col("last") - pl.col("first")),
        executions="executions",
    )


def placed(
    points: pl.DataFrame, t: str, ins: pl.DataFrame, execs: pl.DataFrame, every: bool = False
) -> pl.DataFrame:
    """Return ``points`` (ActiveTime or Throttle rows) with the NEFF each ran in: the one whose
    execution holds the time ``t``, else the one whose instructions' span on its core does
    (a NEFF without executions); ``every``: with no ExecutionInfo and one NEFF, all of them
    (ActiveTime's rule). Rows in no NEFF are left out."""
    names = ins["neff"].unique().to_list()
    if every and execs.is_empty() and len(names) == 1:
        return points.with_columns(neff=pl.lit(names[0], pl.String))
    pts = points.with_row_index("_row").with_columns(_t=pl.col(t)).sort("_t")
    hits = []
    if not execs.is_empty():
        ranges = execs.select("neff", _s="start_ns", _e="end_ns").sort("_s")
        hits.append(_within(pts, ranges, None))
        pts = pts.filter(~pl.col("_row").is_in(hits[0]["_row"].implode()))
    alone = ins.filter(~pl.col("neff").is_in(execs["neff"].implode()))
    spans = alone.group_by(CORE).agg(_s=pl.col("start_ns").min(), _e=pl.col("end_ns").max())
    hits.append(_within(pts, spans.sort("_s"), "pcore"))
    return pl.concat(hits).sort("_row").drop("_row", "_t", "_s", "_e")


def _within(pts: pl.DataFrame, ranges: pl.DataFrame, by: str | None) -> pl.DataFrame:
    """The points whose ``_t`` lies in a range (``_s`` ≤ t < ``_e``), with its ``neff``."""
    hit = pts.join_asof(  # both sorted by time: so within each group too
        ranges, left_on="_t", right_on="_s", by=by, strategy="backward", check_sortedness=False
    )
    return hit.filter((pl.col("_t") < pl.col("_e")).fill_null(False))


def engine_rows(ins: pl.DataFrame, active: pl.DataFrame | None, win: pl.DataFrame) -> pl.DataFrame:
    """Return per NEFF, core and engine: active ns and % of the window (``active``: the placed
    ActiveTime; None when the export has none: null), instruction ns and count, idle ns
    between the instructions (the window less their union), waits ns and count."""
    keys = [*CORE, "engine"]
    work = ins.filter(~pl.col("wait"))
    done = work.group_by(keys).agg(
        instruction_ns=pl.col("duration_ns").sum(), instructions=pl.len().cast(pl.Int64)
    )
    waits = (
        ins.filter(pl.col("wait"))
        .group_by(keys)
        .agg(wait_ns=pl.col("duration_ns").sum(), waits=pl.len().cast(pl.Int64))
    )
    parts = [done, covered(work, keys), waits]
    if active is not None:
        parts.append(active.group_by(keys).agg(active_ns=pl.col("duration_ns").sum()))
    table = pl.concat([p.select(keys) for p in parts]).unique()
    for p in parts:
        table = table.join(p, on=keys, how="left")
    zero = ["instruction_ns", "instructions", "covered_ns", "wait_ns", "waits"]
    table = table.with_columns(pl.col(zero).fill_null(0))
    if active is None:
        table = table.with_columns(active_ns=pl.lit(None, pl.Int64))
    else:
        table = table.with_columns(pl.col("active_ns").fill_null(0))
    w = pl.col("window_ns")
    return (
        table.join(win.select(*CORE, "window_ns"), on=CORE, how="left")
        .with_columns(
            active_pct=pl.when(w > 0).then(100 * pl.col("active_ns") / w),
            idle_ns=w - pl.col("covered_ns"),
        )
        .select(
            *keys,
            "active_ns",
            "active_pct",
            "instruction_ns",
            "instructions",
            "idle_ns",
            "wait_ns",
            "waits",
        )  # fmt: skip
        .sort(*keys)
    )


def sums(frame: pl.DataFrame, keys: list[str], absent: set[str]) -> pl.DataFrame:
    """Return per ``keys`` the FLOPs and bytes of the instructions ``frame``: model, hardware
    and transpose FLOPs, HBM and spill bytes; a figure whose columns the export lacks
    (``absent``) is null."""

    def total(*cols: str) -> pl.Expr:
        there = [c for c in cols if c not in absent]
        if not there:
            return pl.lit(None, pl.Int64)
        return pl.sum_horizontal(pl.col(c).fill_null(0).sum() for c in there).cast(pl.Int64)

    return frame.group_by(keys).agg(
        model_flops=total("raw_flops"),
        hardware_flops=total("adjusted_flops"),
        transpose_flops=total("flops_transpose"),
        hbm_bytes=total("hbm_read_bytes", "hbm_write_bytes"),
        spill_bytes=total("spill_save_bytes", "spill_reload_bytes"),
    )


def dma_rows(dma: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Return per ``keys`` the DMA: active ns (the union of its transfers), transfers, bytes,
    mean bytes per transfer and the % of transfers below ``SMALL_DMA_BYTES``."""
    b = pl.col("transfer_bytes")
    per = dma.group_by(keys).agg(
        dma_count=pl.len().cast(pl.Int64),
        dma_bytes=b.sum(),
        dma_mean_bytes=b.mean(),
        dma_small_pct=100 * (b < SMALL_DMA_BYTES).sum() / b.is_not_null().sum(),
    )
    busy = covered(dma, keys).rename({"covered_ns": "dma_active_ns"})
    return per.join(busy, on=keys, how="left")


def first(top: int | None, frame: pl.DataFrame) -> int:
    """The rows a ``head`` of each group of ``frame`` keeps for ``top``: all for None."""
    return max(frame.height, 1) if top is None else top


def tops(work: pl.DataFrame, top: int | None) -> pl.DataFrame:
    """Return per NEFF and core the ``top`` (None: all) opcodes (with their engine), HLO ops and NKI
    source locations by summed instruction time: ``kind``, ``engine``, ``name``, ``count``,
    ``ns`` (nulls left out)."""
    out = []
    for kind, col in TOP_KINDS.items():
        engine = ["engine"] if kind == "opcode" else []
        rows = (
            work.filter(pl.col(col).is_not_null())
            .group_by(*CORE, *engine, col)
            .agg(count=pl.len().cast(pl.Int64), ns=pl.col("duration_ns").sum())
            .sort("ns", col, *engine, descending=[True, False, *[False] * len(engine)])
            .group_by(CORE, maintain_order=True)
            .head(first(top, work))
            .select(
                *CORE,
                kind=pl.lit(kind),
                engine=pl.col("engine") if engine else pl.lit(None, pl.String),
                name=pl.col(col),
                count="count",
                ns="ns",
            )
        )
        out.append(rows)
    return pl.concat(out).sort(  # an opcode on two engines in as long: by engine
        *CORE, "kind", "ns", "name", "engine", descending=[False, False, False, True, False, False]
    )
