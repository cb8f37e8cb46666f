"""The rows of the batch table: its ``SCHEMA``, and ``analyse_run``, the per-run function.

``analyse_run(spec)`` is module-level and picklable, so a process pool and a Dask cluster run
the very same code. It returns one row per device; any failure is one row with ``error`` set
and the identity columns filled. The numbers are those of ``traceana gaps``; the top idle op
and link coverage per device come from ``trace_analyzer.questions.batch.devices``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from trace_analyzer._version import __version__
from trace_analyzer.batch.runs import RunSpec
from trace_analyzer.errors import InputError, TraceanaError
from trace_analyzer.inputs.discover import Run

if TYPE_CHECKING:
    from trace_analyzer.loading.profile import Profile

Row = dict[str, Any]

SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),  # the run's root: a folder, or archive!/member; #part for a part
    "part": pl.String(),  # a part of a folder of traces recorded far apart; null for a whole run
    "path": pl.String(),  # the folder, or the archive file
    "member": pl.String(),  # the run's root inside the archive (null for folders)
    "fingerprint": pl.String(),  # stat:<digest of the files' stat> or sha256:<digest>
    "device": pl.String(),  # one row per device; null when nothing ran on hardware
    "rank": pl.Int64(),  # the device's rank (distributedInfo, file name, Neuron worker id)
    "device_key": pl.String(),  # the device as named across runs: no pid (devices.device_key)
    "capture_time": pl.Datetime("us", "UTC"),  # capture.json started_at
    "recorded_time": pl.Datetime("us", "UTC"),  # the trace's first event, on an epoch clock
    "modified_time": pl.Datetime("us", "UTC"),  # newest file of the run (archive: the archive)
    "backend": pl.String(),
    "variant": pl.String(),
    "workload": pl.String(),
    "format": pl.String(),  # the formats read, comma-separated
    "events": pl.Int64(),  # events of the run
    "executions": pl.Int64(),
    "busy_ns": pl.Int64(),  # device time
    "idle_ns": pl.Int64(),
    "window_ns": pl.Int64(),
    "idle_pct": pl.Float64(),
    "exposed_communication_ns": pl.Int64(),  # a collective and no compute (docs/gaps.md)
    "memory_ns": pl.Int64(),  # copies and sets alone
    "gap_count": pl.Int64(),
    "gap_p50_ns": pl.Int64(),
    "gap_p90_ns": pl.Int64(),
    "gap_max_ns": pl.Int64(),
    "top_idle_op": pl.String(),  # the op with the most idle before it, on this device
    "top_idle_op_ns": pl.Int64(),
    "linked_pct": pl.Float64(),  # link coverage: % of hardware executions reaching an op
    "exposed_comm_pct": pl.Float64(),  # communication beside no compute, % of the step windows
    "straggler_rank": pl.Int64(),  # the run's most frequent straggler (traceana ranks)
    "straggler_gap_ns": pl.Int64(),  # median over steps of how far the straggler was behind
    "traceana_version": pl.String(),
    "analysed_at": pl.Datetime("us", "UTC"),
    "analysis_s": pl.Float64(),
    "error": pl.String(),  # null when the run was analysed
}

# The columns that are a device's row of `traceana gaps` (or its summary, with no device).
GAPS_COLUMNS = (
    "executions",
    "busy_ns",
    "idle_ns",
    "window_ns",
    "idle_pct",
    "exposed_communication_ns",
    "memory_ns",
    "gap_count",
    "gap_p50_ns",
    "gap_p90_ns",
    "gap_max_ns",
)


def timestamp(ns: int | None) -> datetime | None:
    """Return ns since the epoch as a UTC datetime (None for None)."""
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, tz=UTC)


def one_line(e: BaseException) -> str:
    """Return an error as the one line the ``error`` column holds."""
    text = str(e) if isinstance(e, TraceanaError) else f"{type(e).__name__}: {e}"
    lines = text.strip().splitlines()
    return lines[0] if lines else type(e).__name__


def base_row(spec: RunSpec) -> Row:
    """Return the identity columns of a run's rows."""
    return {
        "run_id": spec.run_id,
        "path": spec.path,
        "member": spec.member,
        "fingerprint": spec.fingerprint,
        "modified_time": timestamp(spec.modified_ns),
        "traceana_version": __version__,
    }


def guarded(spec: RunSpec, body: Callable[[], Row]) -> list[Row]:
    """One row for the file of ``spec`` (a rank's, ``ranks``/``gaps --jobs``): its identity
    and ``body()``'s fields; a failure is a row with ``error`` set (and, for traceana's own
    errors, its ``template`` and ``param``). It never raises."""
    row = base_row(spec)
    try:
        return [{**row, **body()}]
    except TraceanaError as e:
        return [{**row, "error": one_line(e), "template": e.template, "param": e.param}]
    except Exception as e:  # a bug: its one line, as a batch row says it
        return [{**row, "error": one_line(e)}]


def analyse_run(spec: RunSpec) -> list[Row]:
    """Return the rows of one run, one per device; a failure is one row with ``error`` set.

    This is what the process pool and the Dask workers run: it never raises.
    """
    start = time.perf_counter()
    base = base_row(spec)
    try:
        if spec.error is not None:
            raise InputError(spec.path, spec.error.removeprefix(f"{spec.path}: "))
        rows = _analyse(spec, base)
    except Exception as e:  # a bad run is recorded, and the batch goes on
        rows = [{**base, "error": one_line(e)}]
    elapsed = round(time.perf_counter() - start, 4)
    now = datetime.now(UTC)
    for r in rows:
        r["analysis_s"] = elapsed
        r["analysed_at"] = now
    return rows


def _analyse(spec: RunSpec, base: Row) -> list[Row]:
    """The rows of every run the spec's run is read as: itself, or its parts (each with its
    own ``run_id``: the spec's and ``#part``)."""
    from trace_analyzer.inputs.discover import PART_SEP
    from trace_analyzer.loading.profile import load_parts

    if spec.run is None:
        raise InputError(spec.path, "no run found")
    rows = []
    for profile in load_parts(spec.run, max_bytes=spec.max_bytes):
        part = profile.run.part
        named = base if part is None else {**base, "run_id": base["run_id"] + PART_SEP + part}
        rows += _rows(profile, {**named, "part": part})
    return rows


def _rows(profile: Profile, base: Row) -> list[Row]:
    """The rows of one loaded run: one per device (one with no device when none ran)."""
    from trace_analyzer.questions.batch.devices import (
        device_key,
        linked_pct,
        rank_figures,
        top_idle_ops,
    )
    from trace_analyzer.questions.chain.analysis import chain_table
    from trace_analyzer.questions.gaps.analysis import gaps
    from trace_analyzer.questions.ranks.analysis import ranks

    g = gaps(profile)
    common = {
        **base,
        **_capture_info(profile.run),
        "recorded_time": recorded_time(profile.events),
        "events": profile.events.height,
        "error": None,
        "format": ",".join(sorted({r.format for r in profile.reads if r.read})) or None,
    }
    if g.devices.is_empty():
        return [{**common, "device": None, **{k: g.summary[k] for k in GAPS_COLUMNS}}]
    chain = g.chain if g.chain is not None else chain_table(profile.keyed, profile.links())
    linked = linked_pct(chain)
    top = top_idle_ops(g)
    per_device, run_wide = rank_figures(ranks(profile))
    rows = []
    for d in g.devices.to_dicts():
        op, ns = top.get(d["device"], (None, None))
        figures = per_device.get(d["device"], {})
        rows.append(
            {
                **common,
                **run_wide,
                **figures,
                "device": d["device"],
                "device_key": device_key(d["device"], figures.get("rank")),
                **{k: d[k] for k in GAPS_COLUMNS},
                "top_idle_op": op,
                "top_idle_op_ns": ns,
                "linked_pct": linked.get(d["device"]),
            }
        )
    return rows


# Event times on the epoch clock lie after this (2001-09-09, 1e18 ns) and before now: a
# trace whose ts start from 0 (no baseTimeNanoseconds) tells no time of day.
EPOCH_FROM_NS = 10**18


def recorded_time(events: pl.DataFrame) -> datetime | None:
    """Return when a run was recorded, by its own clock: its first event's start, when its
    times are epoch times (Kineto with baseTimeNanoseconds or epoch µs, Neuron's host clock);
    None when they are not (times from 0) or it has none."""
    first = events["start_ns"].min() if events.height else None
    if not isinstance(first, int) or first < EPOCH_FROM_NS:
        return None
    if first > time.time_ns() + 86_400 * 10**9:  # a day ahead of now: not a clock to trust
        return None
    return timestamp(first)


def _capture_info(run: Run) -> Row:
    """Return capture.json's time, backend, variant and workload (empty without one)."""
    from trace_analyzer.inputs.capture import read_capture_json

    for path in sorted(run.captures, key=str):
        doc = read_capture_json(path)
        if doc:
            return {
                "capture_time": _utc(doc.get("started_at")),
                "backend": doc.get("backend"),
                "variant": doc.get("variant"),
                "workload": doc.get("workload"),
            }
    return {}


def _utc(text: object) -> datetime | None:
    """Return an ISO time as UTC (a naive one taken as UTC); None when it is not one."""
    try:
        when = datetime.fromisoformat(str(text))
    except (TypeError, ValueError):
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def to_frame(rows: list[Row]) -> pl.DataFrame:
    """Return rows as a table with the batch schema (missing columns null)."""
    if not rows:
        return pl.DataFrame(schema=SCHEMA)
    return pl.DataFrame([{c: r.get(c) for c in SCHEMA} for r in rows], schema=SCHEMA, strict=False)


def fault_row(spec: RunSpec, error: str, elapsed: float) -> Row:
    """The row of a run whose analysis never finished (its worker died or ran past --timeout).

    Its fingerprint is left null, so the next batch analyses the run again.
    """
    return {
        **base_row(spec),
        "fingerprint": None,
        "error": error,
        "analysis_s": round(elapsed, 4),
        "analysed_at": datetime.now(UTC),
    }
