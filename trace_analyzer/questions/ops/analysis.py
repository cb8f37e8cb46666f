"""The offline ``key_averages()``: per op name, calls, self CPU time and the device time it caused.

Definitions (docs/graph.md):
- self CPU: an op's duration minus the durations of the ops nested directly in it on its
  thread (runtime and dispatch calls are not ops and are not subtracted);
- device time: the summed duration of the logical executions linked to the op. A logical
  execution is one Neuron execution (the ``nc_exec_running`` events of one ``exec_id``, or
  of one runtime call when they carry none: one per physical core with LNC=2, spanning min
  start to max end) or one device op (a kernel);
- device %: of the device time of every logical execution in the profile, linked or not.
  Executions that reach no op are the row ``(unlinked)``, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import polars as pl

from trace_analyzer.analyses.results import TableResult, frame_repr
from trace_analyzer.loading.link import link
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.device import DeviceRun
from trace_analyzer.model.intervals import enclosing
from trace_analyzer.model.schema import text
from trace_analyzer.questions.chain.analysis import chain_table, coverage
from trace_analyzer.questions.engines.below import with_engines
from trace_analyzer.questions.gaps.causes import UNLINKED


def self_cpu(ops: pl.DataFrame) -> pl.DataFrame:
    """Return ops with ``self_ns``: duration minus the durations of their direct child ops."""
    parent = enclosing(
        ((r["pid"], r["tid"]), r["start_ns"], r["end_ns"], r["event_id"])
        for r in ops.select("pid", "tid", "start_ns", "end_ns", "event_id").iter_rows(named=True)
    )
    links = pl.DataFrame(
        {"event_id": list(parent), "parent": list(parent.values())},
        schema={"event_id": pl.Int64, "parent": pl.Int64},
    )
    child_ns = (
        links.join(ops.select("event_id", "duration_ns"), on="event_id")
        .group_by("parent")
        .agg(child_ns=pl.col("duration_ns").sum())
    )
    return ops.join(child_ns, left_on="event_id", right_on="parent", how="left").with_columns(
        self_ns=pl.col("duration_ns") - pl.col("child_ns").fill_null(0)
    )


def executions(chain: pl.DataFrame, events: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Return one row per logical execution: its op, span, and dispatch→hardware latency.

    ``chain``: the chains of the hardware executions of ``events`` (``chain_table``);
    ``edges``: the events' edges table.

    The physical cores of one Neuron execution share its ``exec_id``; without one, they
    share the runtime call they link to. Any other hardware event is its own execution.
    """
    runtime_call = edges.filter(pl.col("hop") == "hardware").select(hw_event_id="dst", rt="src")
    keyed = (
        chain.join(
            events.select("event_id", "pid", "exec_id"), left_on="hw_event_id", right_on="event_id"
        )
        .join(runtime_call, on="hw_event_id", how="left")
        .with_columns(
            key=pl.when(pl.col("exec_id").is_not_null())
            .then(pl.format("exec:{}:{}", "pid", "exec_id"))
            .when(pl.col("rt").is_not_null())
            .then(pl.format("call:{}", "rt"))
            .otherwise(pl.format("event:{}", "hw_event_id"))
        )
    )
    return (
        keyed.group_by("key")
        .agg(
            op=pl.col("op").drop_nulls().first(),
            op_event_id=pl.col("op_event_id").drop_nulls().first(),
            start_ns=pl.col("hw_start_ns").min(),
            end_ns=pl.col("hw_end_ns").max(),
            dispatch_to_hw_us=pl.col("dispatch_to_hw_us").min(),
        )
        .with_columns(device_ns=pl.col("end_ns") - pl.col("start_ns"))
    )


def ops_table(
    events: pl.DataFrame, edges: pl.DataFrame | None = None, execs: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Return the ops table of ``events``, sorted by device time, then self CPU time.

    ``execs``: their logical executions (``executions``), else computed from ``edges``
    (linked here when not given either).
    """
    if execs is None:
        edges = link(events) if edges is None else edges
        execs = executions(chain_table(events, edges), events, edges)
    framework = self_cpu(events.filter(pl.col("lane_kind") == "framework_op"))
    total_ns = float(execs["device_ns"].cast(pl.Float64).sum())  # a share: floats never overflow
    host = framework.group_by(name=text("name")).agg(
        calls=pl.len(), self_ns=pl.col("self_ns").sum(), cpu_ns=pl.col("duration_ns").sum()
    )
    device = execs.group_by(name=pl.col("op").fill_null(UNLINKED)).agg(
        device_ns=pl.col("device_ns").sum(),
        executions=pl.len(),
        mean_dispatch_to_hw_us=pl.col("dispatch_to_hw_us").mean().round(3),
    )
    return ops_rows(host, device, total_ns)


def ops_rows(host: pl.DataFrame, device: pl.DataFrame, total_ns: float) -> pl.DataFrame:
    """The ops table from its ``host`` figures per op name (``calls``, ``self_ns``, ``cpu_ns``)
    and its ``device`` ones (``device_ns``, ``executions``, ``mean_dispatch_to_hw_us``), the
    device shares of ``total_ns``, sorted by device time, then self CPU time, then name."""
    table = host.join(device, on="name", how="full", coalesce=True).with_columns(
        pl.col("calls", "self_ns", "cpu_ns", "device_ns", "executions").fill_null(0)
    )
    return table.select(
        "name",
        "calls",
        self_cpu_us=(pl.col("self_ns") / 1000).round(3),
        cpu_total_us=(pl.col("cpu_ns") / 1000).round(3),
        device_us=(pl.col("device_ns") / 1000).round(3),
        device_pct=(100 * pl.col("device_ns").cast(pl.Float64) / total_ns).round(2)
        if total_ns
        else pl.lit(None, pl.Float64),
        executions="executions",
        executions_per_call=pl.when(pl.col("calls") > 0).then(
            (pl.col("executions") / pl.col("calls")).round(3)
        ),
        mean_dispatch_to_hw_us="mean_dispatch_to_hw_us",
    ).sort(["device_us", "self_cpu_us", "name"], descending=[True, True, False])


@dataclass(frozen=True, repr=False)
class OpsResult(TableResult):
    """The offline ``key_averages()`` of one run.

    ``table``: per op name, calls, self CPU, CPU total, device time and %, executions and the
    mean dispatch→hardware latency, sorted by device time (docs/graph.md). ``coverage``: how
    many hardware executions reach an op. ``total_device_us`` and ``executions``: of every
    logical execution, linked or not. ``engines``: where the run has device-profile exports,
    per op and NEFF the NEFF's engines and roofline (``device_ops.op_engines``; the CLI sets
    it), else None.
    """

    root: str
    total_device_us: float
    executions: int
    coverage: dict[str, Any]
    table: pl.DataFrame
    engines: pl.DataFrame | None = None  # per op and NEFF, its device profile (device_ops.py)

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "total_device_us": self.total_device_us,
            "executions": self.executions,
            "coverage": self.coverage,
            "rows": self.table.to_dicts(),
            **({} if self.engines is None else {"engines": self.engines.to_dicts()}),
        }

    def summary_rows(self) -> list[tuple[str, object]]:
        return [
            ("run", self.root),
            ("device time (µs)", self.total_device_us),
            ("executions", self.executions),
            ("ops", self.table.height),
            *self.coverage.items(),
        ]

    def __repr__(self) -> str:
        return frame_repr(
            "OpsResult", run=self.root, total_device_us=self.total_device_us, ops=self.table
        )


def ops(
    profile: Profile, *, limit: int | None = None, device: DeviceRun | None = None
) -> OpsResult:
    """Return the ops table of one run (``profile``); ``limit``: only the first N ops (by
    device time); ``device``: the run's device profiles (``ta.load_device(path)``): a Neuron
    run's result then holds, below its ops, the engines of each op's NEFF (``engines``)."""
    edges, events = profile.edges, profile.keyed  # ops nest per thread, files apart
    chain = chain_table(events, edges)
    execs = executions(chain, events, edges)
    table = ops_table(events, execs=execs)
    result = OpsResult(
        root=profile.name,
        total_device_us=round(cast(int, execs["device_ns"].sum()) / 1000, 3),
        executions=execs.height,
        coverage=coverage(chain),
        table=table.head(limit) if limit else table,
    )
    return with_engines(result, profile, device, chain)
