"""The ops of a run, a rank at a time (docs/distributed.md, "ops a rank at a time").

Each file gives its ``OpsPart`` (``ops_part``): per op name its calls, self CPU and CPU
totals, and per op (``(unlinked)`` for the executions that reach none) its executions'
device time, count and the sum and count of their dispatch→hardware latencies; its logical
executions' device time and count, and its hardware executions' coverage counts. Every
figure of ``ops`` is a sum or a count of these, or a ratio of two (the mean latency, the
device %), so one pass gives the run's ``OpsResult`` (``combine_ops``): the same table in
the same order (by device time, self CPU, then the name, which is unique), and no event id.

A file's ops nest, link and execute within the file (``profile.keyed`` keeps files that
share a pid apart), so a part needs no other file's events. Read whole, one Neuron
execution (``exec_id``) of two files that share a pid and were not kept apart
(``keep_files_apart``: their lanes never overlap in time) would count once; a file at a
time, twice.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from trace_analyzer.analyses.passes import Pass
from trace_analyzer.loading.link import METHODS
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import text
from trace_analyzer.questions.chain.analysis import chain_table
from trace_analyzer.questions.gaps.causes import UNLINKED
from trace_analyzer.questions.ops.analysis import OpsResult, executions, ops_rows, self_cpu

HOST = {"name": pl.String, "calls": pl.UInt32, "self_ns": pl.Int64, "cpu_ns": pl.Int64}
DEVICE = {
    "name": pl.String, "device_ns": pl.Int64, "executions": pl.UInt32,
    "dispatch_us": pl.Float64, "dispatched": pl.UInt32,
}  # fmt: skip


@dataclass(frozen=True, repr=False)
class OpsPart:
    """What one file gives ``ops``: ``host`` (per op name: ``calls``, ``self_ns``,
    ``cpu_ns``), ``device`` (per op its logical executions: ``device_ns``, ``executions``,
    and ``dispatch_us``, the sum of the ``dispatched`` latencies known), the ``device_ns``
    and count of all its ``executions``, and ``linked``: how many of its ``hardware``
    executions reach an op, in all (``"linked"``) and per link method."""

    host: pl.DataFrame
    device: pl.DataFrame
    device_ns: int
    executions: int
    hardware: int
    linked: dict[str, int] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"OpsPart({self.host.height} ops, {self.executions} executions)"


def ops_part(profile: Profile) -> OpsPart:
    """Return the ``OpsPart`` of ``profile`` (one file of a run)."""
    edges, events = profile.edges, profile.keyed
    chain = chain_table(events, edges)
    execs = executions(chain, events, edges)
    framework = self_cpu(events.filter(pl.col("lane_kind") == "framework_op"))
    host = framework.group_by(name=text("name")).agg(
        calls=pl.len(), self_ns=pl.col("self_ns").sum(), cpu_ns=pl.col("duration_ns").sum()
    )
    device = execs.group_by(name=pl.col("op").fill_null(UNLINKED)).agg(
        device_ns=pl.col("device_ns").sum(),
        executions=pl.len(),
        dispatch_us=pl.col("dispatch_to_hw_us").sum(),
        dispatched=pl.col("dispatch_to_hw_us").count(),
    )
    linked = chain.filter(pl.col("op").is_not_null())
    methods = {str(m): int(n) for m, n in linked.group_by("link_method").len().rows()}
    return OpsPart(
        host=host.cast(HOST),  # type: ignore[arg-type]
        device=device.cast(DEVICE),  # type: ignore[arg-type]
        device_ns=int(execs["device_ns"].sum()),
        executions=execs.height,
        hardware=chain.height,
        linked={"linked": linked.height, **methods},
    )


def _summed(frames: list[pl.DataFrame], schema: dict[str, Any]) -> pl.DataFrame:
    """The rows of ``frames`` (one per file) summed per name."""
    both = pl.concat([f.cast(schema) for f in frames], how="vertical")  # type: ignore[arg-type]
    return both.group_by("name").agg(pl.exclude("name").sum())


def combine_ops(parts: list[OpsPart], *, root: str) -> OpsResult:
    """Return the ops of the run ``root`` from its files' ``parts`` (``ops_part``): the
    ``OpsResult`` of the run read whole (``ops`` with no limit nor device profiles)."""
    device_ns = sum(p.device_ns for p in parts)
    total_ns = float(device_ns)  # ops_table's float sum of the executions' device times
    host = _summed([p.host for p in parts], HOST)
    device = _summed([p.device for p in parts], DEVICE).select(
        "name",
        "device_ns",
        "executions",
        mean_dispatch_to_hw_us=pl.when(pl.col("dispatched") > 0).then(
            (pl.col("dispatch_us") / pl.col("dispatched")).round(3)
        ),
    )
    table = ops_rows(host, device, total_ns)
    return OpsResult(
        root=root,
        total_device_us=round(device_ns / 1000, 3),
        executions=sum(p.executions for p in parts),
        coverage=_coverage(parts),
        table=table,
    )


def _coverage(parts: list[OpsPart]) -> dict[str, Any]:
    """``chain.coverage`` of the run's hardware executions, from its files' counts."""
    total = sum(p.hardware for p in parts)
    counts: dict[str, int] = {}
    for p in parts:
        for k, n in p.linked.items():
            counts[k] = counts.get(k, 0) + n
    linked = counts.pop("linked", 0)
    return {
        "hardware_executions": total,
        "linked": linked,
        "linked_pct": round(100 * linked / total, 2) if total else None,
        "by_method": {m: counts[m] for m in METHODS if m in counts},
        "unlinked": total - linked,
    }


def ops_passes(root: str) -> Generator[Pass, list[Any], OpsResult]:
    """The ops of the run ``root`` measured a file at a time: one pass (``ops_part``)."""
    parts: list[OpsPart] = yield ops_part
    return combine_ops(parts, root=root)
