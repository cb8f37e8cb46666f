"""From an op down to its engines: the device profile of the NEFF each op's executions ran,
so that the chain reads op → dispatch → runtime → execution → engines (docs/device.md).

An op's hardware executions are its chains' (``chain.chains``); an execution's NEFF is the
``model_name`` of its ``nc_exec_running`` event (the file's name); a device profile names the
NEFF of its instructions from ``ExecutionInfo.neff_name``. The two meet by the NEFF's file
name. Each (op, NEFF) pair gets the NEFF's figures of ``traceana engines``: every engine's
share of the NEFF's window (summed over its physical cores), the busiest engine, MFU, MBU,
intensity and the roofline verdict and headroom.
"""

from __future__ import annotations

from typing import TypeVar

import polars as pl

from trace_analyzer.analyses.results import replaced
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.device import DeviceRun
from trace_analyzer.questions.chain.analysis import chains
from trace_analyzer.questions.engines.analysis import EnginesResult, engines
from trace_analyzer.questions.kernels.analysis import EXECUTION

R = TypeVar("R")
COLUMNS: dict[str, type[pl.DataType]] = {
    "op": pl.String,
    "neff": pl.String,
    "executions": pl.Int64,
    "busiest": pl.String,
    "busiest_pct": pl.Float64,
    "engines": pl.String,
    "mfu_pct": pl.Float64,
    "mbu_pct": pl.Float64,
    "intensity": pl.Float64,
    "verdict": pl.String,
    "headroom": pl.Float64,
}


def _file_name(col: pl.Expr) -> pl.Expr:
    return col.str.replace_all(r"\\", "/").str.split("/").list.last()


def op_neffs(profile: Profile, chain: pl.DataFrame | None = None) -> pl.DataFrame:
    """Return per op (``(unlinked)`` for an execution reaching none) and NEFF file name the
    number of its hardware executions (the executions' args name the NEFF); ``chain``: the
    run's chain table when the caller has it (``GapsResult.chain``), else computed."""
    ev = profile.events
    hw = ev.filter(
        (pl.col("lane_kind").cast(pl.String) == "hardware")
        & (pl.col("name").cast(pl.String) == EXECUTION)
    ).select(
        hw_event_id="event_id",
        neff=_file_name(pl.col("args_json").str.json_path_match("$.model_name")),
    )
    if hw.is_empty():
        return pl.DataFrame(schema={"op": pl.String, "neff": pl.String, "executions": pl.Int64})
    table = chains(profile).table if chain is None else chain
    ops = table.select("hw_event_id", op=pl.col("op").cast(pl.String))
    return (
        hw.join(ops, on="hw_event_id", how="left")
        .drop_nulls("neff")
        .group_by(op=pl.col("op").fill_null("(unlinked)"), neff="neff")
        .agg(executions=pl.len().cast(pl.Int64))
        .sort("op", "neff")
    )


def op_engines(
    profile: Profile, result: EnginesResult, chain: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Return, per op and NEFF whose device profile ``result`` holds, the NEFF's engines and
    roofline (``COLUMNS``); no rows when no op's NEFF has one. ``chain``: as ``op_neffs``."""
    pairs = op_neffs(profile, chain)
    if pairs.is_empty() or result.neffs.is_empty():
        return pl.DataFrame(schema=COLUMNS)
    name = _file_name(pl.col("neff"))
    per = (
        result.engines.filter(pl.col("active_ns").is_not_null())
        .group_by(neff=name, engine="engine")
        .agg(active_ns=pl.col("active_ns").sum())
    )
    windows = result.cores.group_by(neff=name).agg(window_ns=pl.col("window_ns").sum())
    shares = (
        per.join(windows, on="neff")
        .with_columns(pct=100 * pl.col("active_ns") / pl.col("window_ns"))
        .sort("neff", "pct", "engine", descending=[False, True, False])
        .group_by("neff", maintain_order=True)
        .agg(
            busiest=pl.col("engine").first(),
            busiest_pct=pl.col("pct").first(),
            engines=pl.format("{} {} %", "engine", pl.col("pct").round(1)).str.join(", "),
        )
    )
    figures = result.neffs.select(
        name.alias("neff"), "mfu_pct", "mbu_pct", "intensity", "verdict", "headroom"
    ).unique("neff", keep="first")
    return (
        pairs.join(figures, on="neff", how="inner")
        .join(shares, on="neff", how="left")
        .select(list(COLUMNS))
        .cast(COLUMNS)  # type: ignore[arg-type]
        .sort("op", "neff")
    )


def below_the_ops(
    profile: Profile, result: EnginesResult, chain: pl.DataFrame | None = None
) -> pl.DataFrame | None:
    """Return ``op_engines`` for a run with Neuron executions, None for one without (a GPU
    run has no NEFF to meet a device profile). ``chain``: as ``op_neffs``."""
    hardware = profile.events.filter(pl.col("source").cast(pl.String) == "neuron_hw")
    return None if hardware.is_empty() else op_engines(profile, result, chain)


def with_engines(
    result: R, profile: Profile, device: DeviceRun | None, chain: pl.DataFrame | None = None
) -> R:
    """Return ``result`` (a gaps or ops result of ``profile``) with ``engines``, the table
    below its ops, set from ``device`` (the run's device profiles, ``load_device``); as it is
    without device profiles or Neuron executions. ``chain``: as ``op_neffs``."""
    if device is None or not device.profiles:
        return result
    found = below_the_ops(profile, engines(device), chain)
    return result if found is None else replaced(result, engines=found)  # tables unmade kept
