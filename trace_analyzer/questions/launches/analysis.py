"""Launches: the edge from a runtime call to the device work it launched, per lane: how long
the work waited, and how many launches were queued at once (docs/launches.md).

Definitions:
- A **launch** is a link (loading/link.py) from a host call to device work: hop ``device`` on
  Kineto (``cudaLaunchKernel``, ``hipLaunchKernel``, ``cudaMemcpyAsync``, … → the kernel,
  copy or set with its ``correlation``), hop ``hardware`` on Neuron. Which device rows count,
  and their lane, are those of ``work()`` (questions/ranks/analysis.py). On Neuron the linked
  runtime event is the worker's ``kbl_exec_wait``; the **launch call** is the host's
  ``nrta_execute_schedule`` with the same ``nrt_sequence_id`` (the call that enqueued the
  execution), else the linked event itself.
- **Launch latency**: the work's start less the launch call's start. **Launch delay** (HTA's
  ``launch_delay``): the work's start less the launch call's end; negative when the work
  starts before the call returns (HTA clips it to 0; traceana does not).
- The **queue** of a lane at time t: its launches with call start ≤ t and work end > t
  (launched, not finished: the running one counts). ``queue`` holds its change points (one
  per distinct time, the length from there to the next); a lane's **span** is its first
  launch call's start to its last work's end; ``queue_mean`` is the time-weighted mean over
  the span, ``queue_zero_pct`` the share of the span with nothing queued.
- **Blocked** (``blocked_ns``): the time a lane's queue was at its bound or above. CUDA's
  bound is 1024 outstanding launches per stream (HTA's ``CUDA_MAX_LAUNCH_QUEUE_PER_STREAM``,
  ``get_time_spent_blocked_on_full_queue``), applied to CUDA streams. ROCm (HIP) and
  Neuron document no bound: null on their lanes, and a note says so (HTA applies CUDA's
  bound to every stream; a ROCm trace's queue is seen past 1024 with no stall).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.loading.profile import Profile
from trace_analyzer.questions.ranks.analysis import work_in_step

QUEUE_BOUND = 1024  # HTA hta/common/constants.py CUDA_MAX_LAUNCH_QUEUE_PER_STREAM
BOUNDED = ("cuda",)  # the sources whose lanes the bound applies to
NEURON_LAUNCH = "nrta_execute_schedule"
POINTS = 500  # the most queue points a lane keeps in the JSON output (``downsample``)
LANE = ["rank", "pid", "device", "lane"]
QUEUE_SCHEMA = {
    "rank": pl.Int64, "pid": pl.Int64, "device": pl.String, "lane": pl.String,
    "ts_ns": pl.Int64, "length": pl.Int64,
}  # fmt: skip


@dataclass(frozen=True, repr=False)
class LaunchesResult(RunResult):
    """The launches of one run: ``lanes`` (per rank, pid, device and lane: launches, launch
    latency and delay, queue length, time blocked), ``queue`` (per lane, the queue length's
    change points) and ``notes``."""

    root: str
    lanes: pl.DataFrame
    queue: pl.DataFrame
    notes: tuple[str, ...] = ()

    csv_table = "lanes"

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "queue_bound": QUEUE_BOUND,
            "lanes": self.lanes.to_dicts(),
            "queue": downsample(self.queue, POINTS).to_dicts(),
            "queue_points_per_lane": POINTS,
            "notes": list(self.notes),
        }

    def main_frame(self) -> pl.DataFrame:
        return self.lanes

    def summary_rows(self) -> list[tuple[str, object]]:
        return [
            ("run", self.root),
            ("lanes", self.lanes.height),
            ("launches", int(self.lanes["launches"].sum()) if self.lanes.height else 0),
            ("longest queue", self.lanes["queue_max"].max() if self.lanes.height else None),
        ]

    def __repr__(self) -> str:
        return frame_repr("LaunchesResult", run=self.root, lanes=self.lanes)


def launches(profile: Profile, *, step: int | None = None) -> LaunchesResult:
    """Return the launches of one run (``profile``) per lane; ``step``: those launched in
    that ProfilerStep only."""
    lanes, points, unlinked, sources = measured(profile, step)
    return LaunchesResult(
        root=profile.name, lanes=lanes, queue=points, notes=notes_of(unlinked, sources)
    )


def measured(
    profile: Profile, step: int | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, int, set[str]]:
    """What ``launches`` measures of ``profile``: its lanes' rows (sorted), their queue change
    points, how many device rows have no linked launch, and the sources of its launched
    work (what its notes say: ``notes_of``)."""
    events = profile.keyed
    done = work_in_step(events, profile.edges, step)
    unlinked = done.filter(pl.col("launch").is_null()).height
    items = launched(events, done)
    points = queue_points(items)
    table = (
        lane_stats(items)
        .join(queue_stats(points), on=LANE, how="left", nulls_equal=True)
        .with_columns(blocked_ns=pl.when(pl.col("source").is_in(BOUNDED)).then("_full"))
        .drop("_full")
    )
    sources = set(items["source"].cast(pl.String).unique().drop_nulls())
    return table.sort(LANE, nulls_last=True), points, unlinked, sources


def notes_of(unlinked: int, sources: set[str]) -> tuple[str, ...]:
    """The notes of ``launches``: the device rows with no linked launch (``unlinked``), then,
    of the ``sources`` launched, each backend's that documents no queue bound."""
    notes = [f"{unlinked} device rows have no linked launch: not counted"] if unlinked else []
    for source, backend in (("rocm", "ROCm (HIP)"), ("neuron_hw", "Neuron")):
        if source in sources:
            notes.append(f"{backend} documents no launch queue bound: blocked is null on its lanes")
    return tuple(notes)


def launched(events: pl.DataFrame, done: pl.DataFrame) -> pl.DataFrame:
    """Return the linked work of ``done`` with its lane key, source, and launch call's start
    and end (``call_start_ns``, ``call_end_ns``)."""
    calls = events.select(
        launch="event_id", rank="rank", seq_id="seq_id", call_start_ns="start_ns",
        call_end_ns="end_ns",
    )  # fmt: skip
    # Neuron: the host's nrta_execute_schedule of the same sequence id, where there is one.
    schedule = (
        events.filter(pl.col("name") == NEURON_LAUNCH)
        .filter(pl.col("seq_id").is_not_null())
        .group_by("pid", "seq_id")
        .agg(s0=pl.col("start_ns").min(), s1=pl.col("end_ns").min())
    )
    return (
        done.filter(pl.col("launch").is_not_null())
        .join(calls, on="launch", how="left")
        .join(schedule, on=["pid", "seq_id"], how="left")
        .select(
            *LANE,
            "source",
            "start_ns",
            "end_ns",
            call_start_ns=pl.coalesce("s0", "call_start_ns"),
            call_end_ns=pl.coalesce("s1", "call_end_ns"),
        )
    )


def lane_stats(items: pl.DataFrame) -> pl.DataFrame:
    """Return per lane: launches, and the launch latency and delay's p50, p95, max, mean."""
    latency = pl.col("start_ns") - pl.col("call_start_ns")
    delay = pl.col("start_ns") - pl.col("call_end_ns")
    aggs = [pl.first("source"), pl.len().alias("launches")]
    for name, x in (("latency", latency), ("delay", delay)):
        aggs += [
            x.quantile(0.5, "linear").round(0).cast(pl.Int64).alias(f"{name}_p50_ns"),
            x.quantile(0.95, "linear").round(0).cast(pl.Int64).alias(f"{name}_p95_ns"),
            x.max().alias(f"{name}_max_ns"),
            x.mean().round(0).cast(pl.Int64).alias(f"{name}_mean_ns"),
        ]
    return items.group_by(LANE).agg(*aggs)


def queue_points(items: pl.DataFrame) -> pl.DataFrame:
    """Return per lane the queue length's change points: at each distinct time, the launches
    called by then less the work ended by then (module doc)."""
    live = items.filter(pl.col("end_ns") > pl.col("call_start_ns"))  # else never queued
    steps = pl.concat(
        [
            live.select(*LANE, ts_ns="call_start_ns", d=pl.lit(1, pl.Int64)),
            live.select(*LANE, ts_ns="end_ns", d=pl.lit(-1, pl.Int64)),
        ]
    )
    return (
        steps.group_by(*LANE, "ts_ns")
        .agg(pl.col("d").sum())
        .sort(*LANE, "ts_ns", nulls_last=True)
        .with_columns(length=pl.col("d").cum_sum().over(LANE))
        .select(*QUEUE_SCHEMA)
        .cast(QUEUE_SCHEMA)  # type: ignore[arg-type]
    )


def queue_stats(points: pl.DataFrame) -> pl.DataFrame:
    """Return per lane from its queue's change points: span, time-weighted mean, max, the
    share of the span with nothing queued, and the time at the bound (bounded lanes)."""
    held = points.with_columns(dt=(pl.col("ts_ns").shift(-1).over(LANE) - pl.col("ts_ns")))
    held = held.with_columns(pl.col("dt").fill_null(0))
    weighted = (pl.col("length") * pl.col("dt")).sum().cast(pl.Float64)
    span = pl.col("span_ns").cast(pl.Float64)
    out = held.group_by(LANE).agg(
        span_ns=pl.col("dt").sum(),
        _w=weighted,
        queue_max=pl.col("length").max(),
        _zero=pl.col("dt").filter(pl.col("length") == 0).sum(),
        _full=pl.col("dt").filter(pl.col("length") >= QUEUE_BOUND).sum(),
    )
    return out.select(
        *LANE,
        "span_ns",
        queue_mean=pl.when(span > 0).then((pl.col("_w") / span).round(3)),
        queue_max="queue_max",
        queue_zero_pct=pl.when(span > 0).then((100 * pl.col("_zero") / span).round(2)),
        _full="_full",
    )


def downsample(points: pl.DataFrame, most: int) -> pl.DataFrame:
    """Return at most ``most`` change points per lane: the lane's span cut into ``most``
    equal time buckets, in each the point of the longest queue (the first of equals), so
    peaks survive. A lane with ``most`` points or fewer is kept whole."""
    if points.is_empty():
        return points
    t0, t1 = pl.col("ts_ns").min().over(LANE), pl.col("ts_ns").max().over(LANE)
    width = ((t1 - t0) // most + 1).cast(pl.Int64)
    many = pl.len().over(LANE) > most
    bucketed = points.with_columns(
        _b=pl.when(many).then((pl.col("ts_ns") - t0) // width).otherwise(pl.int_range(pl.len()))
    )
    return (
        bucketed.sort(
            *LANE, "_b", "length", "ts_ns", descending=[False] * 5 + [True, False], nulls_last=True
        )
        .unique(subset=[*LANE, "_b"], keep="first", maintain_order=True)
        .sort(*LANE, "ts_ns", nulls_last=True)
        .drop("_b")
    )
