"""Perfetto protobuf traces: ``*.pftrace``, ``*.perfetto-trace`` (gzip-compressed or not).

PyTorch's profiler writes them (``export_chrome_trace("x.pftrace")``; Kineto's
PerfettoTraceBuilder), as do the Perfetto SDK and its tools. What is read (docs/formats.md,
"Perfetto protobuf"): TrackEvent slices (begin and end, nested per track) and instants,
their tracks (process and thread descriptors: pid, tid, lane), flows (``flow_ids``,
``terminating_flow_ids``: the events' ``flow_ids``, linked as Kineto's ``ac2g`` flows are),
names and categories (inline or interned), debug annotations (as Kineto's args: the link
keys ``External id`` and ``correlation``, ``device``, ``stream``). Counters are counted, not
events. Events are labelled as Kineto's (kineto_kinds.py) by their category, which an event
without one is given by its args and name (inferred, and said in a note).

Decoding needs the ``perfetto`` extra (perfetto_wire.py); without it a trace is refused in
one line named, and skipped with a note in a folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import cap_for
from trace_analyzer.inputs.discover import Source
from trace_analyzer.model.schema import EVENTS_SCHEMA, Text, conform
from trace_analyzer.readers import kineto
from trace_analyzer.readers.common import ReadResult, assign_steps, distributed
from trace_analyzer.readers.format import Format
from trace_analyzer.readers.perfetto_decode import Decoder
from trace_analyzer.readers.perfetto_slices import COLUMNS, Lanes, aligned, pair, rows
from trace_analyzer.readers.perfetto_wire import MISSING, Missing, packets, trace_bytes

if TYPE_CHECKING:
    from trace_analyzer.model.schema import Args

NAME = "perfetto-protobuf"
SOURCE_KIND = "perfetto"
RAW: dict[str, Any] = {
    **{c: EVENTS_SCHEMA[c] for c in COLUMNS if c in EVENTS_SCHEMA},
    "category": pl.String,
    "name": pl.String,
    "track_lane": pl.String,
    "instant": pl.Boolean,
}


def read_path(
    src: Source,
    keep_args: Args = False,
    *,
    max_bytes: int | None = None,
    in_order: bool = False,
) -> ReadResult:
    """Return the events of one Perfetto protobuf trace; InputError when it is none (or,
    named, when the perfetto extra is missing). ``in_order`` is not used."""
    cap = cap_for(src.path, max_bytes)
    data = trace_bytes(src.path, cap)
    dec = Decoder()
    try:
        for packet in packets(data, src.path, cap):
            dec.feed(packet)
    except Missing:
        if src.named:
            raise InputError(str(src.path), MISSING) from None
        return ReadResult.skipped(src, NAME, MISSING)
    del data
    return _result(src, dec, bool(keep_args))


def _result(src: Source, dec: Decoder, keep_args: bool) -> ReadResult:
    """Return the ReadResult of a decoded trace: its events labelled as Kineto's."""
    result = ReadResult(source=src, format=NAME)
    records, clock_note, epoch, off_clock = aligned(dec)
    if epoch:
        result.notes.append(clock_note)
    else:
        result.warnings.append(f"{src.path}: {clock_note}")
    if off_clock:
        dec.skipped["TrackEvents on a clock the ClockSnapshots do not relate to REALTIME"] += 1
    spans, lost = pair(records)
    result.dropped.update(lost)
    cols, inferred = rows(spans, Lanes(dec.tracks), keep_args)
    df = pl.DataFrame(cols, schema=RAW)
    if not df.is_empty():
        df = _label(df, dec.metadata, src)
    else:
        df = conform(df.with_columns(file=pl.lit(str(src.path))))
    result.events = df
    distributed(result, dec.metadata)
    result.notes.extend(_notes(dec, inferred))
    return result


def _label(df: pl.DataFrame, meta: dict[str, Any], src: Source) -> pl.DataFrame:
    """Return the raw rows labelled as a Kineto trace's (kineto.py): lane kind and source by
    category, device and stream for device events, a device's pid given to its host process.
    An event whose Kineto lane cannot be made (a track of no process) takes its track's; an
    instant is of kind ``other`` (no work, whatever its category)."""
    df = df.with_columns(pl.col("category", "name").cast(Text))
    neuron = kineto._any_neuron(df)
    accel = "privateuse1" if neuron else kineto._accelerator(meta, df)
    host = src.capture.host if src.capture else None
    df = kineto._label(df, accel, neuron, host, kineto._host_pid(df))
    df = df.with_columns(
        lane=pl.when(pl.col("pid").is_null() | pl.col("lane").is_null())
        .then(pl.col("track_lane"))
        .otherwise(pl.col("lane")),
        lane_kind=pl.when(pl.col("instant")).then(pl.lit("other")).otherwise(pl.col("lane_kind")),
        file=pl.lit(str(src.path)),
    )
    return assign_steps(conform(df))


def _notes(dec: Decoder, inferred: int) -> list[str]:
    """Return the notes of a read: what was not events, the categories inferred."""
    notes = []
    if dec.counter_tracks:
        n = len(dec.counter_tracks)
        notes.append(f"{n} counter track{'s' * (n != 1)}: counter values are not events")
    if dec.skipped:
        detail = ", ".join(f"{n} {k}" for k, n in sorted(dec.skipped.items()))
        notes.append(f"not events: {detail}")
    if inferred:
        notes.append(
            f"{inferred} events without a category: each given the Kineto category its args "
            "and name suggest (inferred; docs/formats.md)"
        )
    return notes


FORMAT = Format(
    NAME,
    "Perfetto protobuf trace (PyTorch's .pftrace, the Perfetto SDK's)",
    SOURCE_KIND,
    read_path=read_path,
)
