"""Per-device figures read off a run's gaps and chains (``traceana batch``'s row per device).

- ``top_idle_ops(result)``: on each device, the op with the most idle time before it: the
  device gaps (``GapsResult.device_gaps``) summed by the op that ended them, ``(unlinked)``
  for gaps ended by an execution that reaches no op (as ``gaps``' per-op table names them).
- ``linked_pct(chain)``: on each device, link coverage: the % of hardware executions whose
  chain reaches a framework op (docs/graph.md).

Devices are named as ``gaps`` names them (``device_of``): a logical NeuronCore, a GPU.
"""

from __future__ import annotations

import polars as pl

from trace_analyzer.analyses.gaps import UNLINKED, GapsResult, device_of


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

    ``chain`` is the table of ``trace_analyzer.analyses.chain.chains``: one row per hardware
    execution, ``op`` null when it reaches none. A device with no executions has no entry.
    """
    per_device = chain.group_by(device=device_of(pl.col("lane"))).agg(
        n=pl.len(), linked=pl.col("op").is_not_null().sum()
    )
    return {
        device: (round(100 * linked / n, 2) if n else None)
        for device, n, linked in per_device.rows()
    }
