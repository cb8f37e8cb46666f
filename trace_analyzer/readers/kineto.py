"""Kineto (torch.profiler) Chrome traces: ``trace.json``, ``*.pt.trace.json[.gz]`` and friends.

Clock: ``ts``/``dur`` are µs (3 decimals give ns resolution). With ``baseTimeNanoseconds``
they are relative to it, so epoch_ns = base + ts*1000. Older traces have no base and write
epoch µs directly. Anything else stays relative, with a warning.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import cap_for
from trace_analyzer.inputs.capture import capture_backend
from trace_analyzer.inputs.discover import Source
from trace_analyzer.model.schema import COLLECTIVE_ARGS, COLLECTIVES, LATER, Args, conform
from trace_analyzer.readers.common import (
    ReadResult,
    as_i64,
    assign_steps,
    distributed,
    finish,
    json_text,
)
from trace_analyzer.readers.format import Format
from trace_analyzer.readers.kineto_args import ArgsOf
from trace_analyzer.readers.kineto_bytes import NotFast
from trace_analyzer.readers.kineto_kinds import (
    CATEGORIES,
    DEVICE,
    HOST,
    RANGE,
    STREAM,
    kinds,
)
from trace_analyzer.readers.kineto_native import (
    Binding,
    Records,
    native_scan,
    native_with_args,
    scans,
)
from trace_analyzer.readers.kineto_records import (
    LINK_COLUMNS,
    NO_DUR_REASON,
    UNMATCHED_B,
    UNMATCHED_E,
    collect,
    no_dur_words,
    pair_spans,
)
from trace_analyzer.readers.kineto_stream import scan

__all__ = ["FORMAT", "CATEGORIES", "read", "read_fast", "scan"]

# Complete events that describe the profiler itself, not the workload.
NOT_EVENTS = {"Trace", "overhead"}
# Flow categories that link a host launch to a device op (old traces say async_gpu).
DEVICE_FLOWS = {"ac2g", "async_gpu"}
# A device flow's preference for the event it binds to, by lane kind (lower first; others 2).
FLOW_RANK = {"runtime": 0, "framework_dispatch": 0, "hardware": 0, "transfer": 0, "sync": 1}
DEVICE_WORD = {"cuda": "GPU", "rocm": "GPU", "mtia": "MTIA", "privateuse1": "Device"}


# Duration events of which only one half was recorded (a B never closed, an E with nothing
# open): events lost, warned as the malformed events dropped are (loading.profile).
LOST_HALVES = {
    UNMATCHED_B: "a begin (B) record and no end (E)",
    UNMATCHED_E: "an end (E) record and no begin (B)",
}


def sniff(doc: dict[str, Any]) -> bool:
    """Return True for a Kineto trace's top level: it holds ``traceEvents``."""
    return "traceEvents" in doc


def read(src: Source, doc: dict[str, Any]) -> ReadResult:
    """Return the events of one Kineto trace already parsed into ``doc`` (the exact path)."""
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        raise InputError(str(src.path), "traceEvents is not a list")
    raw, non_objects = collect(events)
    held: list[pl.DataFrame | Records] = [raw]
    del raw  # _result holds the records' table alone, and lets it go once split
    return _result(src, doc, held, non_objects)


def read_fast(
    src: Source,
    keep_args: Args = False,
    *,
    max_bytes: int | None = None,
    in_order: bool = False,
) -> ReadResult | None:
    """Return the events of one Kineto trace read by a streaming path, or None.

    The compiled scanner, then the polars path's splitters (kineto_native.scans); None: the
    caller reads it the exact way. ``args_json`` only with ``keep_args``: the scanner's events,
    their args read again by the polars path (kineto_args.py; ``COLLECTIVES``: those it names),
    or where they lie in a plain file (``LATER``, loading/args_at.py). ``.gz``: max_bytes."""
    cap = cap_for(src.path, max_bytes)
    if keep_args and native_with_args():
        try:
            spans = {"table": False, "spans": keep_args in (LATER, COLLECTIVES)}
            meta, records, metadata = native_scan(src.path, False, max_bytes=cap, **spans)
            only = COLLECTIVE_ARGS if keep_args == COLLECTIVES else None
            args = None if records.spans else ArgsOf(src.path, cap, _ns, event_records(), only)
            return _result(src, meta, [records], 0, metadata, args)
        except NotFast:
            pass  # then the polars path reads the whole table with its args
    for scan_with in scans():
        try:
            meta, raw, metadata = scan_with(src.path, keep_args, max_bytes=cap)
        except NotFast:
            continue
        held: list[pl.DataFrame | Records] = [raw]
        del raw  # _result holds the records alone, and lets them go once split
        return _result(src, meta, held, 0, metadata)
    return None


# The top-level key of traceana's own export (questions/export/perfetto.py), which names it as such.
OWN_EXPORT = "traceana"


def _result(
    src: Source,
    meta: dict[str, Any],
    held: list[pl.DataFrame | Records],
    non_objects: int,
    metadata: int = 0,
    args: Callable[[pl.DataFrame, int], pl.DataFrame] | None = None,
) -> ReadResult:
    """Return the ReadResult of the records' table, taken out of ``held`` (a one-item list):
    with no other reference to it, it is freed once split (at 5 million records, 0.9 GB).
    The compiled scanner's Records are split in C, their flows bound there, unless B/E records
    need the raw table. ``metadata``: the metadata records counted instead of kept in it."""
    if OWN_EXPORT in meta and not src.named:  # `traceana export P -o P/x.json`, found in P
        return ReadResult.skipped(
            src,
            "traceana-export",
            "traceana's own export (`traceana export`): not read as "
            "another trace of the run; name the file itself to read it",
        )
    result = ReadResult(source=src, format="kineto-json")
    rows, flows, binding, skipped = _events_of(held.pop(), meta, src, result, args)
    for half, why in LOST_HALVES.items():  # an event lost, not a record that is none
        if n := skipped.pop(half, 0):
            result.dropped[why] = n
    if n := skipped.pop(NO_DUR_REASON, 0):  # events all the same, their dur a guess
        result.warnings.append(f"{src.path}: {no_dur_words(n)}")
    counted = {"non-object records": non_objects, "metadata records": metadata}
    skipped.update({k: n for k, n in counted.items() if n})
    neuron = _any_neuron(rows) or (
        src.capture is not None and capture_backend(src.path.parent) in (None, "neuron")
    )
    accel = "privateuse1" if neuron else _accelerator(meta, rows)
    df = finish(rows, src.path)
    if not df.is_empty():
        host_pid = _host_pid(df)
        df = _label(
            df.with_columns(raw_pid=pl.col("pid")),
            accel,
            neuron,
            src.capture.host if src.capture else None,
            host_pid,
        )
        if flows is not None:  # the polars and exact paths bind flows here, the scanner did
            binding = _bind(df, flows)
        df = _set_flows(df, binding, result)
        df = assign_steps(conform(df))
    result.events = df
    distributed(result, meta)
    if skipped:
        detail = ", ".join(f"{n} {k}" for k, n in sorted(skipped.items()))
        result.notes.append(f"not events: {detail}")
    result.notes.extend(_range_note(result.events))
    return result


def _events_of(
    raw: pl.DataFrame | Records,
    meta: dict[str, Any],
    src: Source,
    result: ReadResult,
    args: Callable[[pl.DataFrame, int], pl.DataFrame] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame | None, Binding | None, Counter[str]]:
    """Return the events of the records (not labelled yet), the device flow records to bind
    (None where the scanner bound them: then the binding), and the count of what was skipped;
    the clock's note (or warning) goes on ``result``. The compiled scanner's Records are split
    in C, unless B/E records need the raw table to pair them. ``raw`` is the only reference
    to the records: they go once split."""
    kinds, unmatched = b"", dict[str, int]()
    first: object = None  # the ts of the first X record, for _clock
    if isinstance(raw, Records):
        kinds = _kinds(raw.names())
        paired, first = raw.survey(kinds)
        if paired:
            if args is not None or raw.spans:
                raise NotFast("B/E records: the polars path pairs them with their args")
            raw = raw.table()
    if isinstance(raw, pl.DataFrame):
        raw, unmatched = pair_spans(raw)  # B/E duration events as the X records they make
        first = raw.filter(pl.col("ph") == "X")["ts"].first()
    base, clock_note, aligned = _clock(meta, first)
    if aligned:
        result.notes.append(clock_note)
    else:
        result.warnings.append(f"{src.path}: {clock_note}")
    if isinstance(raw, Records):
        rows, counts, binding, no_dur = raw.split(kinds, base)
        if args is not None:
            rows = args(rows, base)
        skipped = _skipped(counts)
        skipped[NO_DUR_REASON] += no_dur
        return rows, None, binding, skipped
    rows, flows, skipped = _split_records(raw, base)
    skipped.update(unmatched)
    return rows, flows, None, skipped


def _range_note(df: pl.DataFrame) -> list[str]:
    """Return a note when the trace holds CUPTI range profiler events: their times are not
    measured (Kineto splits the profiled span evenly between the ranges), their counters are."""
    if df.is_empty():
        return []
    n = df.select("category").filter(pl.col("category") == RANGE).height
    if not n:
        return []
    return [
        f"{n} {RANGE} events (CUPTI range profiler): device activity with their counters in "
        "args; Kineto splits the profiled span evenly between them, so their times, and the "
        "busy time they make, are not measured"
    ]


def _clock(meta: dict[str, Any], first: object) -> tuple[int, str, bool]:
    """Return the base to add to ts (ns), a note on the clock, and whether it is epoch-aligned;
    ``first``: the ts of the first X record (after pairing), None where none."""
    base = as_i64(meta.get("baseTimeNanoseconds"))
    if base is not None:
        return base, "clock: ts relative to baseTimeNanoseconds, aligned to epoch ns", True
    if isinstance(first, float) and first > 1e15:
        return 0, "clock: no baseTimeNanoseconds; ts read as epoch µs (older Kineto)", True
    return (
        0,
        ("no baseTimeNanoseconds and ts is not epoch µs: times are relative to an unknown origin"),
        False,
    )


def _ns(col: str, base: int = 0) -> pl.Expr:
    """Return µs column ``col`` as int64 ns after ``base``; null when not finite or outside int64.

    Whole µs and the fraction are converted apart, so integer µs (older traces write epoch
    µs as integers) stay exact: a float64 cannot hold epoch ns.
    """
    us = pl.col(col)
    whole = us.floor()
    frac_ns = ((us - whole) * 1000).round(0)
    approx = us * 1000 + base
    ok = us.is_finite() & (approx > -9.2e18) & (approx < 9.2e18)
    return pl.when(ok).then(whole.cast(pl.Int64) * 1000 + frac_ns.cast(pl.Int64) + base)


def event_records() -> pl.Expr:
    """The raw table's records that are events: complete (X) records of an event category."""
    return (pl.col("ph") == "X") & ~pl.col("category").is_in(list(NOT_EVENTS)).fill_null(False)


def _split_records(raw: pl.DataFrame, base: int) -> tuple[pl.DataFrame, pl.DataFrame, Counter[str]]:
    """Return the complete events, the device flow records, and the count of what was skipped."""
    ph, cat = pl.col("ph"), pl.col("category")
    is_event = event_records()
    is_flow = ph.is_in(["s", "f"]) & cat.is_in(list(DEVICE_FLOWS))
    kind = raw.select(is_event.fill_null(False).alias("e"), is_flow.fill_null(False).alias("f"))
    rest = raw.filter(~kind["e"] & ~kind["f"])
    skipped = _skipped(list(rest.group_by("ph", "category").len().iter_rows()))
    events = raw.filter(kind["e"])
    skipped[NO_DUR_REASON] += events.select(pl.col("dur").is_nan().sum()).item()
    events = events.select(
        "name",
        "category",
        start_ns=_ns("ts", base),
        duration_ns=pl.when(pl.col("dur").is_nan()).then(pl.lit(0, pl.Int64)).otherwise(_ns("dur")),
        pid="pid",
        tid="tid",
        device="device",
        stream="stream",
        **{c: c for c in LINK_COLUMNS},
        args_json="args_json",
    )
    flows = raw.filter(kind["f"]).select(
        "flow_id", "ph", fpid="pid", tid="tid", start_ns=_ns("ts", base)
    )
    return events, flows, skipped


def _skipped(counts: list[tuple[str | None, str | None, int]]) -> Counter[str]:
    """Return the count of what was skipped, by reason, from counts by (ph, category)."""
    skipped: Counter[str] = Counter()
    for p, c, n in counts:
        skipped[f"'{c}' spans" if p == "X" else _skip_reason(p, c)] += n
    return skipped


def _kinds(names: list[str]) -> bytes:
    """Return what the scanner's split() reads of each of its names, a byte each, then one for
    a null: as a phase (X; s or f; B or E), as a category (NOT_EVENTS, DEVICE_FLOWS), and the
    rank of the preference of a device flow for an event of that category (FLOW_RANK; a null
    category is an "other" lane's, as _label makes it)."""
    out = bytearray(len(names) + 1)
    for i, name in enumerate([*names, None]):
        kind = CATEGORIES[name][0] if name in CATEGORIES else "other"
        rank = FLOW_RANK.get(kind, 2)
        out[i] = (
            (name == "X")
            | (name in ("s", "f")) << 1
            | (name in ("B", "E")) << 2
            | (name in NOT_EVENTS) << 3
            | (name in DEVICE_FLOWS) << 4
            | rank << 5
        )
    return bytes(out)


def _skip_reason(ph: object, cat: object) -> str:
    if ph == "M":
        return "metadata records"
    if ph in ("s", "f", "t"):
        return f"'{cat}' flow records"
    if ph in ("i", "I"):
        return "instant events"
    return f"records of phase {ph!r}"


def _any_neuron(rows: pl.DataFrame) -> bool:
    return rows["seq_id"].is_not_null().any() or (rows["category"] == "privateuse1_driver").any()


def _accelerator(meta: dict[str, Any], rows: pl.DataFrame) -> str:
    """Return cuda or rocm: ROCm traces reuse CUDA's categories with hip* runtime names."""
    props = (json_text(meta.get("deviceProperties") or []) or "").lower()
    if "amd" in props or "instinct" in props or "gfx" in props:
        return "rocm"
    first = (
        rows.select("name", "category")
        .filter(
            pl.col("category").is_in(["cuda_runtime", "Runtime"]) & pl.col("name").is_not_null()
        )["name"]
        .first()
    )
    if isinstance(first, str):  # a name: a str, or null
        return "rocm" if first.startswith("hip") else "cuda"
    return "cuda"


def _host_pid(df: pl.DataFrame) -> int | None:
    """Return the pid of the process that owns the trace: the one that runs most cpu_ops and
    such (of two as busy, the lower: a tie must not be decided by group_by's hash order)."""
    cats = ["cpu_op", "user_annotation", "cuda_runtime", "Runtime", "mtia_runtime"]
    host = df.select("pid", "category").filter(  # two columns: no copy of the wide table
        pl.col("category").is_in([*cats, "privateuse1_runtime"])
    )
    if host.is_empty():
        return None
    pid = host.group_by("pid").len().sort(["len", "pid"], descending=[True, False])["pid"][0]
    return pid if isinstance(pid, int) else None  # an int64, or null


def _label(
    df: pl.DataFrame, accel: str, neuron: bool, host: str | None, host_pid: int | None
) -> pl.DataFrame:
    """Return df with lane_kind, source, lane, and device/stream filled for device events."""
    df = df.with_columns(
        **kinds(df, accel),
        end_ns=pl.col("start_ns") + pl.col("duration_ns"),
        host=pl.lit(host, dtype=pl.String),
    )
    device_side = pl.col("where") == DEVICE
    df = df.with_columns(
        device=pl.when(device_side)
        .then(pl.col("device").fill_null(pl.col("pid")))
        .otherwise(pl.col("device")),
        stream=pl.when(device_side | (pl.col("where") == STREAM))
        .then(pl.col("stream").fill_null(pl.col("tid")))
        .otherwise(pl.col("stream")),
        pid=pl.when(_on_device_pid(df) & pl.lit(host_pid is not None))
        .then(pl.lit(host_pid))
        .otherwise(pl.col("pid")),
    )
    prefix = (f"{host}/" if host else "") + "PID:"
    fw = "/framework" if neuron else ""
    word = pl.col("source").replace_strict(DEVICE_WORD, default="Device")
    lane = (
        pl.when(device_side)
        .then(pl.format(prefix + "{}/{}:{}/stream:{}", "pid", word, "device", "stream"))
        .when(pl.col("where") == STREAM)
        .then(pl.format(prefix + "{}" + fw + "/Stream:{}", "pid", "stream"))
        .otherwise(pl.format(prefix + "{}" + fw + "/TID:{}", "pid", "tid"))
    )
    # Each distinct lane is written once, from what it is made of (the rest nulled), and set
    # on its events by a join of those keys alone: a trace has a few hundred lanes, and three
    # formats of every event cost more than the join.
    keys = df.select(
        "where",
        "pid",
        source=pl.when(device_side).then("source"),
        device=pl.when(device_side).then("device"),
        stream=pl.when(pl.col("where") != HOST).then("stream"),
        tid=pl.when(pl.col("where") == HOST).then("tid"),
    )
    lanes = keys.unique().with_columns(lane=lane)
    on = keys.columns
    lane_of = keys.join(lanes, on=on, how="left", nulls_equal=True, maintain_order="left")
    return df.with_columns(lane=lane_of["lane"]).drop("where")


def _on_device_pid(df: pl.DataFrame) -> pl.Expr:
    """Return a mask of the rows that Kineto wrote under a device's pid.

    Device events use the device index as pid; some runtimes (MTIA) also log host-side calls
    under it. Neither is a process: both belong to the host process that owns the trace.
    """

    def pids(where: pl.Expr) -> set[int]:  # of one column: no copy of the wide table
        return set(df.select(pl.col("pid").filter(where).drop_nulls().unique())["pid"])

    device_pids = pids(pl.col("where") == DEVICE)
    host_pids = pids(pl.col("category") == "cpu_op")
    return (pl.col("where") == DEVICE) | pl.col("pid").is_in(list(device_pids - host_pids))


def _bind(df: pl.DataFrame, fl: pl.DataFrame) -> Binding | None:
    """Return the ac2g flows bound to events at the flow's (pid, tid, ts): each event's flow
    ids (sorted, unique; null where none), and the count of (flow id, phase) keys bound to
    none; None without flows.

    Kineto writes a flow start at its launch event's ts and a flow end at its device event's
    ts, on the same pid/tid. Where several events share that point, the launch (runtime or
    dispatch) takes the start and the device-side event takes the end (FLOW_RANK, then the
    first in the file). The compiled scanner binds them the same way (_kscan.c, split).
    """
    if fl.is_empty():
        return None
    # Flows carry the pid Kineto wrote (a device index for device events), so match on that.
    ev = df.lazy().with_row_index("_row").select("_row", "tid", "start_ns", "lane_kind", "raw_pid")
    # one lazy query: polars keeps only what each step needs (at 2 million flow records,
    # 0.5 GB less at the peak than these steps made eagerly)
    bound = (
        fl.lazy()
        .join(ev, left_on=["fpid", "tid", "start_ns"], right_on=["raw_pid", "tid", "start_ns"])
        .with_columns(
            rank=pl.col("lane_kind")
            .cast(pl.String)
            .replace_strict(FLOW_RANK, default=2, return_dtype=pl.Int64)
        )
        .sort("rank", "_row")
        .unique(subset=["flow_id", "ph"], keep="first", maintain_order=True)
        .select("_row", "flow_id")
        .collect()
    )
    unbound = len(fl.unique(subset=["flow_id", "ph"])) - len(bound)
    per_event = (
        bound.unique()
        .sort("_row", "flow_id")
        .group_by("_row", maintain_order=True)
        .agg(flow_ids="flow_id")
    )
    # the new column is built on the row numbers alone, then set: no copy of the wide table
    ids = pl.DataFrame({"_row": pl.int_range(df.height, dtype=pl.UInt32, eager=True)}).join(
        per_event, on="_row", how="left", maintain_order="left"
    )["flow_ids"]
    return ids.cast(pl.List(pl.Int64)), unbound


def _set_flows(df: pl.DataFrame, binding: Binding | None, result: ReadResult) -> pl.DataFrame:
    """Return df with ``flow_ids``, each event's bound flows (``binding``: _bind's, or the
    compiled scanner's), and a note of the flow endpoints bound to no event."""
    if binding is None:
        return df
    ids, unbound = binding
    if unbound:
        result.notes.append(f"{unbound} flow endpoints matched no event")
    return df.with_columns(flow_ids=ids)


FORMAT = Format(
    "kineto-json",
    "PyTorch profiler (Kineto) Chrome trace",
    "json",
    sniff=sniff,
    read=read,
    read_path=read_fast,
)
