"""Per-device figures read off a run's gaps and chains (``traceana batch``'s row per device).

- ``top_idle_ops(result)``: on each device, the op with the most idle time before it: the
  device gaps (``GapsResult.device_gaps``) summed by the op that ended them, ``(unlinked)``
  for gaps ended by an execution that reaches no op (as ``gaps``' per-op table names them).
- ``linked_pct(chain)``: on each device, link coverage: the % of hardware executions whose
  chain reaches a framework op (docs/graph.md).

- ``device_key(device, rank)``: a device's name that holds across runs (no process id).
- ``rank_figures(ranks)``: per device its rank and exposed communication %, and the run's
  straggler gap and rank (``traceana ranks``, docs/distributed.md).

Devices are named as ``gaps`` names them (``device_of``): a logical NeuronCore, a GPU.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from trace_analyzer.questions.gaps.analysis import UNLINKED, GapsResult, device_of
from trace_analyzer.questions.ranks.analysis import RanksResult


def top_idle_ops(result: GapsResult) -> dict[str, tuple[str, int]]:
    """Return, per device, the op with the most idle before it and that idle (ns).

    A tie goes to the op whose name sorts first. A device with no gaps has no entry.
    """
    device_gaps = result.device_gaps
    if device_gaps.is_empty():
        return {}
    per_op = (
        device_gaps.group_by("device", op=pl.col("next_op").fill_null(UNLINKED))
        .agg(ns=pl.col("duration_ns").sum())
        .sort("ns", "op", descending=[True, False])
    )
    first = per_op.group_by("device", maintain_order=True).first()
    return {device: (op, ns) for device, op, ns in first.rows()}


def linked_pct(chain: pl.DataFrame) -> dict[str, float | None]:
    """Return, per device, the % of hardware executions linked to an op (rounded to 0.01).

    ``chain`` is the table of ``trace_analyzer.questions.chain.analysis.chains``: one row per
    hardware execution, ``op`` null when it reaches none. A device with no executions has no entry.
    """
    per_device = chain.group_by(device=device_of(pl.col("lane"))).agg(
        n=pl.len(), linked=pl.col("op").is_not_null().sum()
    )
    return {
        device: (round(100 * linked / n, 2) if n else None)
        for device, n, linked in per_device.rows()
    }


def device_key(device: str, rank: int | None) -> str:
    """Return a device's key that holds across runs: its label without the process id, and
    with a rank, ``rank<N>/`` in place of the host (an instance id changes from run to run;
    the rank does not). Without one the host stays: it tells two hosts' NC0 apart."""
    label = PID_PART.sub("", device)
    if rank is None:
        return label
    return f"rank{rank}/" + HOST_PART.sub("", label)


PID_PART = re.compile(r"PID:[^/]*/|/?PID:[^/]*$")
HOST_PART = re.compile(r"^[^/]+/(?=neuron_hw/)")


def rank_figures(ranks: RanksResult) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Return per device its rank and exposed communication % (exposed communication over
    the windows of its steps, docs/distributed.md), and the run's straggler figures: the
    median over steps of how far the straggler was behind (``straggler_gap_ns``) and the
    rank that was most often the straggler (``straggler_rank``, the lowest on a tie)."""
    per_device = ranks.steps.group_by("device").agg(
        rank=pl.col("rank").drop_nulls().first(),
        exposed=pl.col("exposed_communication_ns").sum(),
        window=pl.col("window_ns").sum(),
        comm=pl.col("communication_ns").sum(),
    )
    devices = {
        d: {
            "rank": rank,
            "exposed_comm_pct": round(100 * exposed / window, 2) if window and comm else None,
        }
        for d, rank, exposed, window, comm in per_device.rows()
    }
    s = ranks.stragglers
    if s.is_empty():
        return devices, {"straggler_gap_ns": None, "straggler_rank": None}
    often = s.group_by("rank").len().sort("len", "rank", descending=[True, False])
    median = s["behind_ns"].median()
    gap = int(median) if isinstance(median, (int, float)) else None
    return devices, {"straggler_gap_ns": gap, "straggler_rank": often["rank"][0]}
