"""One small PyTorch-like trace written two ways: Kineto JSON, and a Perfetto protobuf trace
built with the ``perfetto`` package's protos and trace builder (tests of readers/perfetto.py).

The trace: two host processes (pid 100: a step with three ops, each launching on GPU 0's
stream 7; pid 200: an op nesting another), GPU 0's kernels and a copy, and an ``ac2g`` flow
from each launch to its device op. The Perfetto trace holds each event as a begin and an
end on its thread's track (GPU 0 is process 0, its stream thread 7, as Kineto's JSON has it),
its category and args as the TrackEvent's categories and debug annotations, each flow as
``flow_ids`` on the launch and ``terminating_flow_ids`` on the device op.
"""

from __future__ import annotations

import zlib
from typing import Any

BASE = 1_700_000_000_000_000_000  # baseTimeNanoseconds: the epoch ns of ts 0
PROCESSES = {100: "python", 200: "dataloader", 0: "GPU 0"}
THREADS = {(100, 101): "main", (200, 201): "worker", (0, 7): "stream 7"}


def _ev(name, cat, pid, tid, ts, dur, flow=None, **args) -> dict[str, Any]:
    return {"name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "flow": flow, "args": args}


def _gpu(name, cat, ts, dur, corr, ext) -> dict[str, Any]:
    return _ev(name, cat, 0, 7, ts, dur, (corr, "f"), device=0, stream=7, correlation=corr,
               **{"External id": ext})


def _launch(name, ts, corr, ext) -> dict[str, Any]:
    return _ev(name, "cuda_runtime", 100, 101, ts, 100, (corr, "s"), correlation=corr,
               cbid=211, **{"External id": ext})


EVENTS: list[dict[str, Any]] = [
    _ev("ProfilerStep#1", "user_annotation", 100, 101, 1000.0, 8000.0, **{"External id": 9}),
    _ev("aten::mm", "cpu_op", 100, 101, 1100.0, 1900.0, **{"External id": 1}),
    _launch("cudaLaunchKernel", 1200.0, 11, 1),
    _ev("aten::add", "cpu_op", 100, 101, 3100.0, 1900.0, **{"External id": 2}),
    _launch("cudaLaunchKernel", 3200.0, 12, 2),
    _ev("aten::copy_", "cpu_op", 100, 101, 5100.0, 2900.0, **{"External id": 3}),
    _launch("cudaMemcpyAsync", 5200.0, 13, 3),
    _ev("aten::to", "cpu_op", 200, 201, 2000.0, 500.0, **{"External id": 4}),
    _ev("aten::_to_copy", "cpu_op", 200, 201, 2100.0, 300.0, **{"External id": 5}),
    _gpu("gemm_kernel", "kernel", 1500.0, 1300.0, 11, 1),
    _gpu("add_kernel", "kernel", 3500.0, 500.5, 12, 2),
    _gpu("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 5500.0, 500.0, 13, 3),
]
SLICES = len(EVENTS)
FLOWS = 3


def kineto_json(events: list[dict[str, Any]] = EVENTS) -> dict[str, Any]:
    """Return the trace as Kineto writes it: X records, ac2g flow records, metadata."""
    records: list[dict[str, Any]] = []
    for pid, name in PROCESSES.items():
        records.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                        "args": {"name": name}})
    for (pid, tid), name in THREADS.items():
        records.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                        "args": {"name": name}})
    for e in events:
        records.append({"ph": "X", "cat": e["cat"], "name": e["name"], "pid": e["pid"],
                        "tid": e["tid"], "ts": e["ts"], "dur": e["dur"], "args": e["args"]})
        if e["flow"]:
            fid, ph = e["flow"]
            flow = {"ph": ph, "id": fid, "pid": e["pid"], "tid": e["tid"], "ts": e["ts"],
                    "cat": "ac2g", "name": "ac2g"}
            records.append(flow | ({"bp": "e"} if ph == "f" else {}))
    return {"schemaVersion": 1, "baseTimeNanoseconds": BASE, "traceEvents": records}


def ns(us: float) -> int:
    return BASE + round(us * 1000)


def pftrace(events: list[dict[str, Any]] = EVENTS, *, interned: bool = False,
            compressed: bool = False, snapshot: bool = False) -> bytes:
    """Return the trace as a Perfetto protobuf trace. ``interned``: names, categories and
    annotation names interned (one sequence, its state cleared first, defaults set);
    ``compressed``: the event packets inside Perfetto's ``compressed_packets``;
    ``snapshot``: a ClockSnapshot relating BOOTTIME to REALTIME, times on BOOTTIME."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    from perfetto.trace_builder.proto_builder import TraceProtoBuilder

    builder = TraceProtoBuilder()
    seq, offset = 7, (10**17 if snapshot else 0)  # BOOTTIME = REALTIME - offset
    uuids = _tracks(builder, seq)
    if snapshot:
        p = builder.add_packet()
        p.trusted_packet_sequence_id = seq
        for clock, ts in ((1, BASE), (6, BASE - offset)):
            c = p.clock_snapshot.clocks.add()
            c.clock_id, c.timestamp = clock, ts
    body = TraceProtoBuilder() if compressed else builder
    intern = _Interner(body, seq) if interned else None
    halves = [(e["ts"], 0, i, e) for i, e in enumerate(events)]
    halves += [(e["ts"] + e["dur"], 1, -i, e) for i, e in enumerate(events)]
    # ends before begins at one time, and the inner end first: as the slices nest
    for ts, is_end, _, e in sorted(halves, key=lambda h: (h[0], -h[1], h[2])):
        p = body.add_packet()
        p.timestamp = ns(ts) - offset
        p.trusted_packet_sequence_id = seq
        te = p.track_event
        te.track_uuid = uuids[(e["pid"], e["tid"])]
        if intern is not None:
            p.sequence_flags = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        if is_end:
            te.type = pb.TrackEvent.TYPE_SLICE_END
            continue
        te.type = pb.TrackEvent.TYPE_SLICE_BEGIN
        _describe(te, e, intern, p)
    if compressed:
        p = builder.add_packet()
        p.trusted_packet_sequence_id = seq
        p.compressed_packets = zlib.compress(body.serialize())
    return builder.serialize()


def _tracks(builder: Any, seq: int) -> dict[tuple[int, int], int]:
    """Write the process and thread track descriptors; return each thread's track uuid."""
    uuids: dict[tuple[int, int], int] = {}
    for i, (pid, name) in enumerate(PROCESSES.items()):
        p = builder.add_packet()
        p.trusted_packet_sequence_id = seq
        p.track_descriptor.uuid = 1000 + i
        p.track_descriptor.process.pid = pid
        p.track_descriptor.process.process_name = name
    for i, ((pid, tid), name) in enumerate(THREADS.items()):
        p = builder.add_packet()
        p.trusted_packet_sequence_id = seq
        td = p.track_descriptor
        td.uuid = uuids[(pid, tid)] = 2000 + i
        td.parent_uuid = 1000 + list(PROCESSES).index(pid)
        td.thread.pid, td.thread.tid, td.thread.thread_name = pid, tid, name
    return uuids


class _Interner:
    """Interns names, categories and annotation names on one sequence (cleared first)."""

    def __init__(self, builder: Any, seq: int) -> None:
        self.tables: dict[str, dict[str, int]] = {"name": {}, "cat": {}, "arg": {}}
        self.first = True

    def iid(self, packet: Any, table: str, text: str) -> int:
        ids = self.tables[table]
        if text not in ids:
            ids[text] = len(ids) + 1
            entries = {"name": packet.interned_data.event_names,
                       "cat": packet.interned_data.event_categories,
                       "arg": packet.interned_data.debug_annotation_names}[table]
            entry = entries.add()
            entry.iid, entry.name = ids[text], text
        if self.first:  # the sequence's first packet clears its state
            packet.sequence_flags = 1 | 2
            self.first = False
        return ids[text]


def _describe(te: Any, e: dict[str, Any], intern: _Interner | None, packet: Any) -> None:
    """Fill a begin's name, category, args and flows."""
    if intern is None:
        te.name = e["name"]
        te.categories.append(e["cat"])
    else:
        te.name_iid = intern.iid(packet, "name", e["name"])
        te.category_iids.append(intern.iid(packet, "cat", e["cat"]))
    for key, value in e["args"].items():
        a = te.debug_annotations.add()
        if intern is None:
            a.name = key
        else:
            a.name_iid = intern.iid(packet, "arg", key)
        a.int_value = value
    if e["flow"]:
        fid, ph = e["flow"]
        (te.flow_ids if ph == "s" else te.terminating_flow_ids).append(fid)
