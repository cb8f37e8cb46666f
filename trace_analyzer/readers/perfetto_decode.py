"""A Perfetto trace's packets as TrackEvent records: sequences, interning, tracks and clocks.

Each packet belongs to a sequence (``trusted_packet_sequence_id``) whose incremental state
(interned names and categories, ``trace_packet_defaults``, sequence-scoped clocks) holds from
a packet flagged ``SEQ_INCREMENTAL_STATE_CLEARED`` until the next; a packet that needs that
state (``SEQ_NEEDS_INCREMENTAL_STATE``) where it is lost (``previous_packet_dropped``, or no
clear seen yet) is skipped and counted, as Perfetto's trace processor skips it. Track
descriptors are kept whatever their place in the file; slices are paired in
``perfetto_slices.py`` once every packet is read (docs/formats.md, "Perfetto protobuf").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4  # TrackEvent.Type
CLEARED, NEEDS = 1, 2  # TracePacket.SequenceFlags
REALTIME, BOOTTIME = 1, 6  # BuiltinClock
SEQUENCE_CLOCKS = 64  # clock ids from 64 are the sequence's own (ClockSnapshot)
DEPTH = 8  # how deep a debug annotation's dicts and arrays are read
NOT_EVENTS = {"trace_metadata", "device_properties"}  # Kineto's builder: the trace's metadata
FLOW_FIELDS = ("flow_ids", "flow_ids_old", "terminating_flow_ids", "terminating_flow_ids_old")


@dataclass(slots=True)
class Track:
    """A TrackDescriptor: what a track is, and the process and thread it names."""

    parent: int | None = None
    name: str | None = None
    pid: int | None = None
    tid: int | None = None
    kind: str = "track"  # process, thread, counter, or track


@dataclass(slots=True)
class Clock:
    """A sequence-scoped clock of a ClockSnapshot, as a builtin clock's ``ref`` at ``base``."""

    last: int
    unit: int
    incremental: bool
    ref: int
    ref_ts: int
    base: int


@dataclass
class Sequence:
    """One packet sequence's incremental state."""

    names: dict[int, str] = field(default_factory=dict)
    categories: dict[int, str] = field(default_factory=dict)
    annotation_names: dict[int, str] = field(default_factory=dict)
    annotation_values: dict[int, str] = field(default_factory=dict)
    track_uuid: int | None = None  # trace_packet_defaults.track_event_defaults
    clock_id: int | None = None  # trace_packet_defaults.timestamp_clock_id
    valid: bool = False  # its incremental state is known (a clear seen, nothing lost since)
    clocks: dict[int, Clock] = field(default_factory=dict)
    thread: int | None = None  # the track of a legacy ThreadDescriptor packet


@dataclass(slots=True)
class Record:
    """One TrackEvent of a slice (its begin or end) or an instant, before pairing."""

    ts: int
    clock: int | None
    kind: int
    track: int
    name: str | None
    category: str | None
    args: dict[str, Any] | None
    flows: list[int] | None
    correlation: int | None


def signed(v: int) -> int:
    """Return a uint64 (a flow id, a track uuid) as the int64 of the same bits."""
    return v - (1 << 64) if v >= 1 << 63 else v


class Decoder:
    """Fed the packets in file order; holds the records, tracks, clocks and counts."""

    def __init__(self) -> None:
        self.tracks: dict[int, Track] = {}
        self.sequences: dict[int, Sequence] = {}
        self.records: list[Record] = []
        self.skipped: Counter[str] = Counter()  # what is not an event, by reason
        self.counter_tracks: set[int] = set()
        self.epoch: dict[int, int] | None = None  # builtin clock -> its offset to REALTIME
        self.primary: int | None = None  # ClockSnapshot.primary_trace_clock
        self.metadata: dict[str, Any] = {}  # Kineto's builder's trace_metadata instants
        self.packets = 0

    def feed(self, packet: Any) -> None:
        """Take one TracePacket."""
        self.packets += 1
        seq = self._sequence(packet)
        data = packet.WhichOneof("data")
        if packet.sequence_flags & NEEDS and not seq.valid:
            self.skipped["packets whose incremental state was lost"] += 1
        elif data == "track_event":
            self._track_event(packet, seq)
        elif data == "track_descriptor":
            self._descriptor(packet.track_descriptor)
        elif data == "clock_snapshot":
            self._snapshot(packet.clock_snapshot, seq)
        elif data == "thread_descriptor":  # the legacy default track of its sequence
            td = packet.thread_descriptor
            seq.thread = -(packet.trusted_packet_sequence_id + 1)  # no uuid: its own key
            self.tracks[seq.thread] = Track(None, td.thread_name or None, td.pid, td.tid, "thread")
        elif data is not None:
            self.skipped[f"{data} packets"] += 1

    def _sequence(self, packet: Any) -> Sequence:
        """Return the packet's sequence, its state cleared, lost or updated by the packet."""
        sid = packet.trusted_packet_sequence_id
        seq = self.sequences.get(sid)
        if seq is None or packet.incremental_state_cleared or packet.sequence_flags & CLEARED:
            thread = seq.thread if seq is not None else None
            seq = self.sequences[sid] = Sequence(thread=thread)
            seq.valid = bool(packet.incremental_state_cleared or packet.sequence_flags & CLEARED)
        elif packet.previous_packet_dropped:
            seq.valid = False
        if packet.HasField("trace_packet_defaults"):
            d = packet.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                seq.clock_id = d.timestamp_clock_id
            if d.track_event_defaults.HasField("track_uuid"):
                seq.track_uuid = d.track_event_defaults.track_uuid
        if packet.HasField("interned_data"):
            _intern(packet.interned_data, seq)
        return seq

    def _descriptor(self, td: Any) -> None:
        """Keep a TrackDescriptor: a process's, a thread's, a counter's, or a named track."""
        name = td.name or td.static_name or td.atrace_name or None
        track = Track(td.parent_uuid if td.HasField("parent_uuid") else None, name)
        if td.HasField("thread"):
            track.pid, track.tid, track.kind = td.thread.pid, td.thread.tid, "thread"
            track.name = track.name or td.thread.thread_name or None
        elif td.HasField("process"):
            track.pid, track.kind = td.process.pid, "process"
            track.name = track.name or td.process.process_name or None
        elif td.HasField("counter"):
            track.kind = "counter"
        self.tracks[td.uuid] = track

    def _snapshot(self, snap: Any, seq: Sequence) -> None:
        """Take a ClockSnapshot: builtin clocks against REALTIME (the first snapshot that has
        it), and the sequence's own clocks against a builtin one of the same snapshot."""
        builtin = {c.clock_id: c.timestamp for c in snap.clocks if c.clock_id < SEQUENCE_CLOCKS}
        if snap.HasField("primary_trace_clock"):
            self.primary = snap.primary_trace_clock
        if self.epoch is None and REALTIME in builtin:
            self.epoch = {c: builtin[REALTIME] - ts for c, ts in builtin.items()}
        if not builtin:
            return
        ref = BOOTTIME if BOOTTIME in builtin else next(iter(builtin))
        for c in snap.clocks:
            if c.clock_id >= SEQUENCE_CLOCKS:
                unit = c.unit_multiplier_ns or 1
                seq.clocks[c.clock_id] = Clock(
                    c.timestamp, unit, c.is_incremental, ref, builtin[ref], c.timestamp
                )

    def _time(self, packet: Any, seq: Sequence) -> tuple[int, int | None] | None:
        """Return the packet's time on a builtin clock (None: the trace's default clock), or
        None when its clock is a sequence's own that no snapshot of it defines."""
        clock = packet.timestamp_clock_id if packet.HasField("timestamp_clock_id") else None
        clock = seq.clock_id if clock is None else clock
        ts = packet.timestamp
        if clock is None or clock < SEQUENCE_CLOCKS:
            return ts, clock
        own = seq.clocks.get(clock)
        if own is None:
            return None
        if own.incremental:
            ts = own.last = own.last + ts
        return own.ref_ts + (ts - own.base) * own.unit, own.ref

    def _track_event(self, packet: Any, seq: Sequence) -> None:
        """Keep a TrackEvent of a slice or an instant as a Record; count the rest. The
        event's fields are listed once (``ListFields``: the set ones alone), not probed."""
        f = {d.name: v for d, v in packet.track_event.ListFields()}
        kind = f.get("type", 0)
        if n := len(f.get("extra_counter_values", ())) + len(
            f.get("extra_double_counter_values", ())
        ):
            self.skipped["counter values"] += n
        if kind == COUNTER:
            self.skipped["counter values"] += 1
            self.counter_tracks.add(f.get("track_uuid", -1))
            return
        if kind not in (BEGIN, END, INSTANT):
            legacy = "legacy_event" in f
            self.skipped["legacy (JSON-style) TrackEvents" if legacy else "other TrackEvents"] += 1
            return
        when = self._time(packet, seq)
        if when is None:
            self.skipped["TrackEvents on a clock no snapshot defines"] += 1
            return
        name = (
            f["name"] if "name" in f else seq.names.get(f["name_iid"]) if "name_iid" in f else None
        )
        args = _annotations(f["debug_annotations"], seq) if "debug_annotations" in f else None
        if kind == INSTANT and name in NOT_EVENTS:
            self._metadata(name, args or {})
            return
        flows = [signed(i) for k in FLOW_FIELDS if k in f for i in f[k]] or None
        category = f["categories"][0] if "categories" in f else None
        if category is None and "category_iids" in f:
            category = seq.categories.get(f["category_iids"][0])
        track = f.get("track_uuid", seq.track_uuid)
        track = (seq.thread if seq.thread is not None else 0) if track is None else track
        record = Record(*when, kind, track, name, category, args, flows, f.get("correlation_id"))
        self.records.append(record)

    def _metadata(self, name: str, args: dict[str, Any]) -> None:
        """Keep the trace's metadata that Kineto's builder writes as instants."""
        self.skipped["metadata records"] += 1
        if name == "device_properties" and isinstance(args.get("properties"), str):
            self.metadata["deviceProperties"] = _json(args["properties"])
        else:
            parsed = {k: _json(v) if k == "distributedInfo" else v for k, v in args.items()}
            self.metadata.update(parsed)


def _intern(data: Any, seq: Sequence) -> None:
    """Add a packet's interned data to its sequence's tables."""
    seq.names.update((e.iid, e.name) for e in data.event_names)
    seq.categories.update((e.iid, e.name) for e in data.event_categories)
    seq.annotation_names.update((e.iid, e.name) for e in data.debug_annotation_names)
    seq.annotation_values.update(
        (e.iid, e.str.decode("utf-8", "replace")) for e in data.debug_annotation_string_values
    )


def _annotations(annotations: Any, seq: Sequence) -> dict[str, Any]:
    """Return a TrackEvent's debug annotations as args (name -> value). Kineto's builder
    writes an activity's args as one ``metadata`` annotation of JSON text: its keys are read
    as args themselves."""
    args: dict[str, Any] = {}
    for a in annotations:
        name = a.name if a.HasField("name") else seq.annotation_names.get(a.name_iid)
        if name is None:
            continue
        value = _value(a, seq, 0)
        if name == "metadata" and isinstance(value, str):
            inner = _json(value if value.lstrip().startswith("{") else "{" + value + "}")
            if isinstance(inner, dict):
                for k, v in inner.items():
                    args.setdefault(str(k), v)
                continue
        args[name] = value
    return args


def _value(a: Any, seq: Sequence, depth: int) -> Any:
    """Return a DebugAnnotation's value as JSON would hold it."""
    which = a.WhichOneof("value")
    if which is None:
        if depth >= DEPTH:
            return None
        if a.dict_entries:
            return {e.name: _value(e, seq, depth + 1) for e in a.dict_entries}
        if a.array_values:
            return [_value(v, seq, depth + 1) for v in a.array_values]
        return None
    if which == "string_value_iid":
        return seq.annotation_values.get(a.string_value_iid)
    if which == "legacy_json_value":
        return _json(a.legacy_json_value)
    if which == "pointer_value":
        return hex(a.pointer_value)
    if which == "nested_value":  # the old NestedValue: not read
        return None
    return getattr(a, which)


def _json(text: object) -> Any:
    """Return JSON text parsed, or the text itself where it is not JSON."""
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
