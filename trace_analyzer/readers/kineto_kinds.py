"""What each Kineto event is to traceana: its lane kind, its source and where it runs, by its
category, and for MTIA's command-processor events by name (docs/formats.md)."""

from __future__ import annotations

import polars as pl
from polars._typing import PolarsDataType

from trace_analyzer.model.schema import EVENTS_SCHEMA

HOST, STREAM, DEVICE = "host", "stream", "device"
ACCEL = "<accel>"  # replaced per trace: cuda, rocm or privateuse1
RANGE = "cuda_profiler_range"

# Kineto category -> (lane kind, source, where the event runs). Old names from early Kineto
# (Operator, Kernel, Runtime, Memcpy, Memset: PyTorch <= 1.9) map like their new names.
CATEGORIES: dict[str, tuple[str, str, str]] = {
    "cpu_op": ("framework_op", "framework", HOST),
    "Operator": ("framework_op", "framework", HOST),
    "user_annotation": ("annotation", "framework", HOST),
    "python_function": ("annotation", "framework", HOST),
    "privateuse1_runtime": ("framework_dispatch", "framework", HOST),
    "privateuse1_driver": ("framework_stream", "framework", STREAM),
    "cuda_runtime": ("runtime", ACCEL, HOST),
    "cuda_driver": ("runtime", ACCEL, HOST),
    "Runtime": ("runtime", ACCEL, HOST),
    "mtia_runtime": ("runtime", "mtia", HOST),
    "kernel": ("hardware", ACCEL, DEVICE),
    "Kernel": ("hardware", ACCEL, DEVICE),
    "gpu_memset": ("hardware", ACCEL, DEVICE),
    "Memset": ("hardware", ACCEL, DEVICE),
    "gpu_memcpy": ("transfer", ACCEL, DEVICE),
    "Memcpy": ("transfer", ACCEL, DEVICE),
    "cuda_sync": ("sync", ACCEL, DEVICE),
    "gpu_user_annotation": ("annotation", ACCEL, DEVICE),
    "mtia_ccp_events": ("hardware", "mtia", DEVICE),
    # CUPTI range profiler (CuptiRangeProfiler.cpp): one event per range or kernel, written on
    # its GPU's pid, counters in args. Kineto spreads them evenly over the profiled span.
    RANGE: ("hardware", ACCEL, DEVICE),
}
KIND, STRING = EVENTS_SCHEMA["lane_kind"], pl.String()  # the types ``kinds`` gives its columns
# MTIA's command-processor events that are not work: a DMA is a copy, an event's record and
# wait are synchronisation (issue 35). The rest of mtia_ccp_events are executions.
MTIA_KINDS = {"dma_request": "transfer", "event_record": "sync", "event_wait": "sync"}


def kinds(df: pl.DataFrame, accel: str) -> dict[str, pl.Expr]:
    """Return the ``lane_kind``, ``source`` and ``where`` of each event of ``df`` (its
    ``category`` and ``name``); ``accel``: the source of the accelerator's events (cuda, rocm,
    privateuse1)."""
    cat = pl.col("category")

    def of(values: list[str], default: str, dtype: PolarsDataType = STRING) -> pl.Expr:
        # a lookup per column, not a join: a join copies the whole wide table
        return cat.replace_strict(
            dict(zip(CATEGORIES, values, strict=True)), default=default, return_dtype=dtype
        )

    kind = of([k for k, _, _ in CATEGORIES.values()], "other", KIND)
    if df["category"].cast(STRING).is_in(["mtia_ccp_events"]).any():
        name = pl.col("name").cast(STRING)
        mtia = (cat.cast(STRING) == "mtia_ccp_events") & name.is_in(list(MTIA_KINDS))
        named = name.replace_strict(MTIA_KINDS, default=None, return_dtype=KIND)
        kind = pl.when(mtia).then(named).otherwise(kind)
    return {
        "lane_kind": kind,
        "source": of([accel if s == ACCEL else s for _, s, _ in CATEGORIES.values()], "framework"),
        "where": of([w for _, _, w in CATEGORIES.values()], HOST),
    }
