"""Perfetto protobuf shapes beyond the Kineto-like trace (readers/perfetto*.py): instants,
counters, halves left unpaired, a sequence whose incremental state was lost, sequence-scoped
incremental clocks, and the shape of Kineto's own PerfettoTraceBuilder (no categories, a
child track per activity, the args as one ``metadata`` annotation of JSON text)."""

from __future__ import annotations

import polars as pl
import pytest

import trace_analyzer as ta

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4
T0 = 1_700_000_000_000_000_000


class Trace:
    """A trace built packet by packet."""

    def __init__(self) -> None:
        self.trace = pb.Trace()

    def packet(self, seq: int = 1, ts: int | None = None, **fields):
        p = self.trace.packet.add()
        p.trusted_packet_sequence_id = seq
        if ts is not None:
            p.timestamp = ts
        for k, v in fields.items():
            setattr(p, k, v)
        return p

    def track(self, uuid, parent=None, name=None, pid=None, tid=None, counter=False):
        td = self.packet().track_descriptor
        td.uuid = uuid
        if parent is not None:
            td.parent_uuid = parent
        if name:
            td.name = name
        if tid is not None:
            td.thread.pid, td.thread.tid = pid, tid
        elif pid is not None:
            td.process.pid = pid
        if counter:
            td.counter.SetInParent()

    def event(self, ts, kind, track, name=None, seq=1, cats=(), args=None, flows=(), **te):
        p = self.packet(seq, ts)
        e = p.track_event
        e.type, e.track_uuid = kind, track
        if name is not None:
            e.name = name
        e.categories.extend(cats)
        e.flow_ids.extend(flows)
        for k, v in (args or {}).items():
            a = e.debug_annotations.add()
            a.name = k
            if isinstance(v, str):
                a.string_value = v
            else:
                a.int_value = v
        for k, v in te.items():  # a packet's field, else the event's
            setattr(p if k in pb.TracePacket.DESCRIPTOR.fields_by_name else e, k, v)
        return p

    def save(self, path):
        path.write_bytes(self.trace.SerializeToString())
        return path


def load(tmp_path, t: Trace):
    profile = ta.load(t.save(tmp_path / "t.pftrace"), cache=False)
    return profile, profile.reads[0]


def test_instants_are_events_of_no_duration_and_counters_are_counted(tmp_path):
    t = Trace()
    t.track(1, pid=10, tid=11)
    t.track(2, parent=1, name="memory", counter=True)
    t.event(T0, BEGIN, 1, "work", cats=["cpu_op"])
    t.event(T0 + 50, INSTANT, 1, "mark", cats=["user_annotation"])
    t.event(T0 + 60, COUNTER, 2, counter_value=5)
    t.event(T0 + 70, COUNTER, 2, double_counter_value=2.5)
    t.event(T0 + 100, END, 1)
    profile, read = load(tmp_path, t)
    ev = profile.events.sort("start_ns")
    assert ev["name"].cast(pl.String).to_list() == ["work", "mark"]
    assert ev["duration_ns"].to_list() == [100, 0]
    assert ev["lane_kind"].cast(pl.String).to_list() == ["framework_op", "other"]
    assert ev["lane"].cast(pl.String).to_list() == ["PID:10/TID:11"] * 2
    assert any("1 counter track" in n for n in read.notes)
    assert any("2 counter values" in n for n in read.notes)


def test_halves_left_unpaired_are_dropped_and_counted(tmp_path):
    t = Trace()
    t.track(1, pid=10, tid=11)
    t.event(T0, END, 1)  # an end with nothing open
    t.event(T0 + 10, BEGIN, 1, "outer", cats=["cpu_op"])
    t.event(T0 + 20, BEGIN, 1, "inner", cats=["cpu_op"])
    t.event(T0 + 30, END, 1)  # closes inner
    profile, read = load(tmp_path, t)  # outer never ends
    assert profile.events["name"].cast(pl.String).to_list() == ["inner"]
    assert read.dropped == {
        "an end (TYPE_SLICE_END) and no begin": 1,
        "a begin (TYPE_SLICE_BEGIN) and no end": 1,
    }


def test_packets_that_need_lost_incremental_state_are_skipped(tmp_path):
    t = Trace()
    t.track(1, pid=10, tid=11)
    needs = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
    t.event(T0, INSTANT, 1, "before any clear", sequence_flags=needs)
    p = t.event(T0 + 10, INSTANT, 1, sequence_flags=needs | 1, name_iid=1)
    n = p.interned_data.event_names.add()
    n.iid, n.name = 1, "interned"
    t.event(T0 + 20, INSTANT, 1, "after a loss", sequence_flags=needs, previous_packet_dropped=1)
    profile, read = load(tmp_path, t)
    assert profile.events["name"].cast(pl.String).to_list() == ["interned"]
    assert any("2 packets whose incremental state was lost" in n for n in read.notes)


def test_a_sequence_clock_that_is_incremental(tmp_path):
    t = Trace()
    t.track(1, pid=10, tid=11)
    snap = t.packet().clock_snapshot
    for cid, ts, extra in ((1, T0, {}), (6, 5_000, {}), (64, 0, {"is_incremental": True,
                                                               "unit_multiplier_ns": 1000})):
        c = snap.clocks.add()
        c.clock_id, c.timestamp = cid, ts
        for k, v in extra.items():
            setattr(c, k, v)
    for delta, kind in ((7, BEGIN), (3, END)):  # µs after the last
        p = t.event(delta, kind, 1, "tick" if kind == BEGIN else None, cats=["cpu_op"])
        p.timestamp_clock_id = 64
    profile, read = load(tmp_path, t)
    ev = profile.events
    assert ev["start_ns"].to_list() == [T0 + 7_000] and ev["duration_ns"].to_list() == [3_000]
    assert "ClockSnapshot" in read.notes[0]


def test_kinetos_perfetto_trace_builder_shape(tmp_path):
    # Kineto's PerfettoTraceBuilder: a process "Kineto Trace" (pid 0), a device process per
    # device, a thread track per resource, and a child track per activity, named after its
    # thread; no categories; args as a "metadata" annotation, flows as flow_ids on both ends
    t = Trace()
    t.track(1, name="Kineto Trace", pid=0)
    t.track(2, name="GPU 0", pid=0)
    t.track(3, parent=1, name="python", pid=4242, tid=4243)
    t.track(4, parent=2, name="stream 7", pid=0, tid=7)
    t.track(5, parent=3, name="python")
    t.track(6, parent=3, name="python")
    t.track(7, parent=4, name="stream 7")
    t.event(T0, INSTANT, 1, "trace_metadata", args={"distributedInfo": '{"rank": 3}'})
    meta = '"External id": 1, "Sequence number": 5'
    t.event(T0 + 100, BEGIN, 5, "aten::mm", args={"metadata": meta})
    t.event(T0 + 1000, END, 5)
    t.event(T0 + 200, BEGIN, 6, "cudaLaunchKernel", args={"metadata": '"cbid": 211',
                                                          "correlation_id": 11}, flows=[11])
    t.event(T0 + 300, END, 6)
    kernel = '"device": 0, "stream": 7, "External id": 1'
    t.event(T0 + 400, BEGIN, 7, "gemm", args={"metadata": kernel, "correlation_id": 11},
            flows=[11])
    t.event(T0 + 900, END, 7)
    profile, read = load(tmp_path, t)
    ev = profile.events.sort("start_ns")
    assert ev["category"].cast(pl.String).to_list() == ["cpu_op", "cuda_runtime", "kernel"]
    assert ev["lane"].cast(pl.String).to_list() == [
        "PID:4242/TID:4243", "PID:4242/TID:4243", "PID:4242/GPU:0/stream:7"
    ]
    assert ev["correlation"].to_list() == [None, 11, 11]
    assert read.rank == 3
    assert any("3 events without a category" in n for n in read.notes)
    hops = profile.edges.sort("dst")["hop"].cast(pl.String).to_list()
    assert hops == ["launch", "device"]
