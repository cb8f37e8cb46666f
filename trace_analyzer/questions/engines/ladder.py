"""Per NEFF, its bounds ladder (docs/device.md, "The bounds ladder"): how fast its window
could be at each step of the guidance AWS gives for NKI kernels, and the speed-up each
step leaves.

Each rung is a lower bound on the NEFF's window (ns), from its own tables:

- ``dma_ns``: memory-bound at the measured DMA active time (the most of any physical core);
- ``hbm_peak_ns``: memory-bound at peak bandwidth (its HBM bytes at ``hbm_ddr_bandwidth``);
- ``hbm_no_spill_ns``: the same with the spills removed (HBM bytes less the SBUF spill saves
  and reloads);
- ``tensor_ns``: compute-bound at the TensorEngine's measured active time (the most of any
  physical core);
- ``flops_peak_ns``: compute-bound at peak FLOPs (its hardware FLOPs at ``peak_flops``);
- ``flops_no_transpose_ns``: the same without the transposes' FLOPs;
- ``pipeline_ns``: a perfect pipeline, every engine and the DMA overlapped: the most active
  time of any of them on any physical core.

``<rung>_speedup`` is the measured window over the rung: what is left to gain at that step.
"""

from __future__ import annotations

import polars as pl

RUNGS = (
    "dma_ns", "hbm_peak_ns", "hbm_no_spill_ns", "tensor_ns", "flops_peak_ns",
    "flops_no_transpose_ns", "pipeline_ns",
)  # fmt: skip
KEY = ["profile", "neff"]


def ladder(
    neffs: pl.DataFrame, cores: pl.DataFrame, engines: pl.DataFrame, profiles: pl.DataFrame
) -> pl.DataFrame:
    """Return per profile and NEFF its rungs (module doc) and the speed-up each leaves."""
    if not neffs.height:
        return pl.DataFrame()
    dma = cores.group_by(KEY).agg(dma_ns=pl.col("dma_active_ns").max())
    busiest = engines.group_by(KEY).agg(
        tensor_ns=pl.col("active_ns").filter(pl.col("engine") == "tensor").max(),
        engine_ns=pl.col("active_ns").max(),
    )
    peaks = profiles.select("profile", "peak_flops", "hbm_bw")
    at = 1e9  # ns per second
    table = (
        neffs.select(
            *KEY, "window_ns", "hbm_bytes", "spill_bytes", "hardware_flops", "transpose_flops"
        )  # fmt: skip
        .join(dma, on=KEY, how="left")
        .join(busiest, on=KEY, how="left")
        .join(peaks, on="profile", how="left")
        .with_columns(
            measured_ns=pl.col("window_ns"),
            hbm_peak_ns=pl.col("hbm_bytes") / pl.col("hbm_bw") * at,
            hbm_no_spill_ns=(pl.col("hbm_bytes") - pl.col("spill_bytes")).clip(lower_bound=0)
            / pl.col("hbm_bw")
            * at,
            flops_peak_ns=pl.col("hardware_flops") / pl.col("peak_flops") * at,
            flops_no_transpose_ns=(pl.col("hardware_flops") - pl.col("transpose_flops"))
            / pl.col("peak_flops")
            * at,
            pipeline_ns=pl.max_horizontal("engine_ns", "dma_ns"),
        )
    )
    speedups = {
        r.removesuffix("_ns") + "_speedup": pl.when(pl.col(r) > 0).then(
            pl.col("measured_ns") / pl.col(r)
        )
        for r in RUNGS
    }
    return table.select(*KEY, "measured_ns", *RUNGS).with_columns(**speedups).sort(KEY)
