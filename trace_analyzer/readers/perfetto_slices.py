"""A Perfetto trace's TrackEvent records as events: clocks aligned, slices paired per track,
tracks resolved to processes, threads and lanes, categories taken or inferred.

- Clocks: a ClockSnapshot holding REALTIME relates every builtin clock to the epoch; without
  one, timestamps past 1e18 are read as epoch ns (Kineto's builder writes its epoch ns on
  the default clock); else times are relative, with a warning (docs/formats.md).
- Slices: a TYPE_SLICE_END closes the innermost open TYPE_SLICE_BEGIN of its track, in time
  order (file order among equal times), as Perfetto's trace processor nests them; the end's
  flows and args join the begin's. A TYPE_INSTANT is an event of no duration.
- Tracks: a thread track gives its pid and tid, a process track its pid; a track under one
  (Perfetto's child tracks, Kineto's builder's track per activity) takes theirs.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from trace_analyzer.readers.common import as_i64, json_text
from trace_analyzer.readers.kineto_records import ARG_COLUMNS, LINK_COLUMNS
from trace_analyzer.readers.perfetto_decode import (
    BEGIN,
    BOOTTIME,
    END,
    INSTANT,
    REALTIME,
    Decoder,
    Record,
    Track,
)

NO_END = "a begin (TYPE_SLICE_BEGIN) and no end"
NO_BEGIN = "an end (TYPE_SLICE_END) and no begin"
EPOCH_NS = 10**18  # 2001-09-09 in epoch ns: a boot clock is never this far
RUNTIME = re.compile(r"^(cuda|cu|hip|hsa)[A-Z_]")
STEP = re.compile(r"^ProfilerStep#\d+$")
COLUMNS = (
    "name",
    "category",
    "start_ns",
    "duration_ns",
    "pid",
    "tid",
    "device",
    "stream",
    *LINK_COLUMNS,
    "flow_ids",
    "args_json",
    "track_lane",
    "instant",
)


def aligned(dec: Decoder) -> tuple[list[Record], str, bool, int]:
    """Return the records with their times as epoch ns where the trace allows (sorted by
    time, file order among equal times), the clock's note, whether it is aligned, and how
    many records were left out on a clock the snapshots do not relate to REALTIME."""
    records, default = dec.records, dec.primary or BOOTTIME
    if dec.epoch is not None:
        offsets = dec.epoch | {REALTIME: 0}
        kept = [r for r in records if (r.clock or default) in offsets]
        for r in kept:
            r.ts += offsets[r.clock or default]
        kept.sort(key=lambda r: r.ts)
        note = "clock: a ClockSnapshot relates the trace's clocks to REALTIME: epoch ns"
        return kept, note, True, len(records) - len(kept)
    records.sort(key=lambda r: r.ts)
    if all(r.clock == REALTIME for r in records):
        return records, "clock: REALTIME timestamps: epoch ns", True, 0
    if records and records[0].ts > EPOCH_NS:
        note = "clock: no ClockSnapshot; timestamps past 1e18 read as epoch ns (as Kineto writes)"
        return records, note, True, 0
    note = "no ClockSnapshot with REALTIME and timestamps are not epoch ns: times are relative"
    return records, note, False, 0


def pair(records: list[Record]) -> tuple[list[tuple[Record, int]], Counter[str]]:
    """Return each slice and instant as (its begin record, its end ns), the end's flows and
    args merged into the begin's, and the count of halves left unpaired."""
    open_: dict[int, list[Record]] = {}
    spans: list[tuple[Record, int]] = []
    lost: Counter[str] = Counter()
    for r in records:
        if r.kind == BEGIN:
            open_.setdefault(r.track, []).append(r)
        elif r.kind == END:
            stack = open_.get(r.track)
            if not stack:
                lost[NO_BEGIN] += 1
                continue
            begin = stack.pop()
            if r.flows:
                begin.flows = (begin.flows or []) + r.flows
            if r.args:
                begin.args = r.args | (begin.args or {})
            spans.append((begin, r.ts))
        else:
            spans.append((r, r.ts))
    if n := sum(len(s) for s in open_.values()):
        lost[NO_END] = n
    return spans, lost


class Lanes:
    """Each track's process, thread and lane, worked out once per track."""

    def __init__(self, tracks: dict[int, Track]) -> None:
        self.tracks = tracks
        self.memo: dict[int, tuple[int | None, int | None, str]] = {}

    def of(self, uuid: int) -> tuple[int | None, int | None, str]:
        """Return the pid, tid and lane of a track: a thread's ``PID:p/TID:t`` (as Kineto's
        lanes), a process's ``PID:p``, then the names of the tracks under them."""
        if uuid in self.memo:
            return self.memo[uuid]
        chain: list[Track] = []
        u: int | None = uuid
        while u is not None and u in self.tracks and len(chain) < 32:
            if any(t is self.tracks[u] for t in chain):  # a loop of parents
                break
            chain.append(self.tracks[u])
            u = self.tracks[u].parent
        pid = next((t.pid for t in chain if t.pid is not None), None)
        tid = next((t.tid for t in chain if t.tid is not None), None)
        parts: list[str] = [] if chain else ["default track" if uuid == 0 else f"track:{uuid}"]
        for t in reversed(chain):  # the root first
            if t.kind == "process":
                parts = [f"PID:{t.pid}"]
            elif t.kind == "thread":
                parts = [f"PID:{t.pid}", f"TID:{t.tid}"]
            elif not (parts and parts[-1].startswith("TID:")):  # a thread's child: its lane
                parts.append(t.name or f"track:{uuid}")
        found = self.memo[uuid] = (pid, tid, "/".join(parts))
        return found


def infer(name: str | None, args: dict[str, Any]) -> str | None:
    """Return the Kineto category an event without one most likely has, by its args and name
    (inferred: docs/formats.md), or None."""
    name = name or ""
    if "stream" in args and "device" in args:
        if name.startswith("Memcpy"):
            return "gpu_memcpy"
        if name.startswith("Memset"):
            return "gpu_memset"
        return "cuda_sync" if "Sync" in name or "Wait" in name else "kernel"
    if "cbid" in args or RUNTIME.match(name):
        return "cuda_runtime"
    if STEP.match(name):
        return "user_annotation"
    return "cpu_op" if "External id" in args else None


def rows(
    spans: list[tuple[Record, int]], lanes: Lanes, keep_args: bool
) -> tuple[dict[str, list[Any]], int]:
    """Return the events' columns (before labelling) and how many categories were inferred."""
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    inferred = 0
    for r, end in spans:
        args = r.args or {}
        pid, tid, lane = lanes.of(r.track)
        category = r.category or _text(args.get("cat")) or _text(args.get("category"))
        if category is None and (category := infer(r.name, args)) is not None:
            inferred += 1
        link: dict[str, int | None] = dict.fromkeys(LINK_COLUMNS)
        for arg, col in ARG_COLUMNS.items():
            if link[col] is None and arg in args:
                link[col] = as_i64(args[arg])
        if link["correlation"] is None:
            link["correlation"] = as_i64(args.get("correlation_id", r.correlation))
        values = {
            "name": r.name,
            "category": category,
            "start_ns": r.ts,
            "duration_ns": end - r.ts,
            "pid": pid,
            "tid": tid,
            "device": as_i64(args.get("device")),
            "stream": as_i64(args.get("stream", args.get("stream_id"))),
            **link,
            "flow_ids": sorted(set(r.flows)) if r.flows else None,
            "args_json": json_text(args) if keep_args and args else None,
            "track_lane": lane,
            "instant": r.kind == INSTANT,
        }
        for c, v in values.items():
            cols[c].append(v)
    return cols, inferred


def _text(v: object) -> str | None:
    return v if isinstance(v, str) and v else None
