"""One small builder for the Neuron dependency-chain shapes (docs/graph.md, "Chain shapes").

A shape says which events carry which link keys (docs/neuron-formats.md §3.5): flow ids on
the framework copies, the runtime events and the hardware events, ``nrt_sequence_id`` on the
runtime and driver events, ``exec_id`` on the ``kbl_*`` and hardware events, how many aten
ops one execution covers (a fused batch) and which thread the ``kbl_*`` events run on.

``build(shape, lnc, export, with_trace, folder)`` writes one profile: an Explorer export
(Parquet, split in two parts for LNC=2, or the legacy JSON) and, with ``with_trace``, the
Kineto ``trace.json`` of the same run in a capture folder beside it. It returns the
generator's record: per execution its op (name and start), hardware spans and device time.
Every time and id comes from here; the tests compare traceana's answers with this record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

BASE_NS = 1_793_620_800_000_000_000
INSTANCE, PID, MAIN, WORKER, STREAM = "i-0123456789abcdef0", 4242, 4242, 4250, 0
SEQ0 = (3 << 48) | 41  # nrta_seq_t: XU id in the top 16 bits, a sequence number below (§3.5)
EXEC0 = 57
OPS = ["aten::mul", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::mul"]


@dataclass(frozen=True)
class Shape:
    """Where a profile's link keys sit."""

    name: str
    what: str
    fw_flow: bool  # Explorer's copies of the op and driver events carry flow [seq]
    rt_flow: bool  # nrta_execute_schedule and kbl_exec_wait carry flow [seq]
    hw_flow: bool  # kbl_exec_wait carries flow exec too; nc_exec_running carries flow [exec]
    rt_seq: bool  # runtime events carry nrt_sequence_id
    driver_seq: bool  # the privateuse1_driver event (trace.json args, Explorer copy) carries it
    exec_key: bool  # kbl_* and nc_exec_running carry exec_id
    batch: int = 1  # aten ops per execution
    rt_thread: int = MAIN  # the thread of the kbl_* events
    hw_method: str = "flow_id"  # how the hardware event finds its runtime event
    rt_method: str = "flow_id"  # how kbl_exec_wait finds its framework event


SHAPES = {
    s.name: s
    for s in (
        Shape("a", "flows only, kbl_exec_wait bridging", True, True, True, False, False, False),
        Shape("b", "keys only, no flows", False, False, False, True, True, True,
              hw_method="exec_id", rt_method="seq_id"),
        Shape("c", "flows on the framework side, exec_id on the hardware side",
              True, True, False, False, False, True, hw_method="exec_id"),
        Shape("d", "nrt_sequence_id only on the driver event, flows elsewhere",
              False, True, True, False, True, False, rt_method="seq_id"),
        Shape("e", "one sequence id covering three aten ops (a fused batch)",
              False, False, False, True, True, True, batch=3,
              hw_method="exec_id", rt_method="seq_id"),
        Shape("f", "kbl_* events on another thread than the schedule call",
              True, True, True, False, False, False, rt_thread=WORKER),
    )
}


@dataclass
class Timeline:
    """The events of one profile (ns from BASE_NS) and the record of its executions."""

    shape: Shape
    lnc: int
    framework: list[dict] = field(default_factory=list)  # trace.json events
    neuron: list[dict] = field(default_factory=list)  # runtime and hardware rows
    executions: list[dict] = field(default_factory=list)

    def fw(self, cat: str, name: str, t0: int, t1: int, tid: int, **args) -> dict:
        ev = {"cat": cat, "name": name, "start": t0, "end": t1, "tid": tid, "args": args,
              "flow": None}
        self.framework.append(ev)
        return ev

    def rt(self, source: str, name: str, t0: int, t1: int, **kw) -> dict:
        ev = {"source": source, "name": name, "start": t0, "end": t1, "tid": MAIN,
              "pcore": None, "flow": None, "extra": {}, **kw}
        self.neuron.append(ev)
        return ev


def timeline(shape: Shape, lnc: int) -> Timeline:
    """Return the events of six aten ops (RMSNorm, naive) laid out as ``shape`` says."""
    tl = Timeline(shape, lnc)
    t = 1_000_000
    step = tl.fw("user_annotation", "ProfilerStep#1", t - 50_000, 0, MAIN, **{"External id": 1})
    for first in range(0, len(OPS), shape.batch):
        seq, exec_id = SEQ0 + len(tl.executions), EXEC0 + len(tl.executions)
        ops = []
        for k in range(first, min(first + shape.batch, len(OPS))):
            ops.append(_op(tl, k, t, seq))
            t += 40_000
        t = _execution(tl, ops, t, seq, exec_id)
    step["end"] = t + 50_000
    return tl


def _op(tl: Timeline, k: int, t: int, seq: int) -> dict:
    """Write one aten op: cpu_op > privateuse1_runtime dispatch, and the driver event."""
    s = tl.shape
    op = tl.fw("cpu_op", OPS[k], t, t + 20_000, MAIN,
               **{"External id": 10 + k, "Sequence number": 100 + k})
    tl.fw("privateuse1_runtime", OPS[k], t + 4_000, t + 12_000, MAIN, correlation=10 + k)
    drv_args = {"correlation": 10 + k, "neff_cache_key": f"{OPS[k]}--{k}"}
    if s.driver_seq:
        drv_args["nrt_sequence_id"] = seq
    drv = tl.fw("privateuse1_driver", OPS[k], t + 6_000, t + 30_000, STREAM, **drv_args)
    if s.fw_flow:
        op["flow"] = drv["flow"] = [seq]
    return op


def _execution(tl: Timeline, ops: list[dict], t: int, seq: int, exec_id: int) -> int:
    """Write the runtime and hardware events of one execution of ``ops``; return its end."""
    s = tl.shape
    keys = {"nrt_sequence_id": seq} if s.rt_seq else {}
    with_exec = {**keys, **({"exec_id": exec_id} if s.exec_key else {})}
    sched = tl.rt("neuron_rt", "nrta_execute_schedule", t, t + 5_000, extra=dict(keys),
                  nc=0, tid=MAIN)
    tl.rt("neuron_rt", "nrt_model_submit", t + 6_000, t + 8_000, extra=dict(keys), nc=0, tid=MAIN)
    tl.rt("neuron_rt", "kbl_exec_pre", t + 9_000, t + 10_000, extra=dict(with_exec), nc=0,
          tid=s.rt_thread)
    hw0 = t + 12_000
    device_ns = 150_000 + 37_125 * len(tl.executions)
    spans = [(hw0 + 250 * p, hw0 + device_ns + 500 * p) for p in range(tl.lnc)]
    wait = tl.rt("neuron_rt", "kbl_exec_wait", t + 11_000, spans[-1][1] + 1_000,
                 extra=dict(with_exec), nc=0, tid=s.rt_thread)
    for p, (h0, h1) in enumerate(spans):
        hw = tl.rt("neuron_hw", "nc_exec_running", h0, h1, nc=0, pcore=p,
                   extra={"exec_id": exec_id} if s.exec_key else {})
        if s.hw_flow:
            hw["flow"] = [exec_id]
    end = spans[-1][1] + 1_000
    tl.rt("neuron_rt", "kbl_exec_post", end + 500, end + 2_000, extra=dict(with_exec), nc=0,
          tid=s.rt_thread)
    if s.rt_flow:
        sched["flow"] = [seq]
        wait["flow"] = [seq]
    if s.hw_flow:
        wait["flow"] = [*(wait["flow"] or []), exec_id]
    tl.executions.append({
        "op": ops[0]["name"], "op_start_ns": BASE_NS + ops[0]["start"],
        "hw": [(BASE_NS + a, BASE_NS + b) for a, b in spans],
        "device_ns": spans[-1][1] - spans[0][0],
    })
    return end + 30_000


def trace_json(tl: Timeline) -> dict:
    """Return the Kineto trace of the framework events (ts µs with three decimals)."""
    events = []
    for e in tl.framework:
        events.append({"ph": "X", "cat": e["cat"], "name": e["name"], "pid": PID, "tid": e["tid"],
                       "ts": e["start"] / 1000, "dur": (e["end"] - e["start"]) / 1000,
                       "args": e["args"]})
        if e["cat"].startswith("privateuse1_"):
            ph = "s" if e["cat"] == "privateuse1_runtime" else "f"
            flow = {"ph": ph, "id": e["args"]["correlation"], "pid": PID, "tid": e["tid"],
                    "ts": e["start"] / 1000, "cat": "ac2g", "name": "ac2g"}
            events.append({**flow, "bp": "e"} if ph == "f" else flow)
    return {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
            "baseTimeNanoseconds": BASE_NS, "traceEvents": events}


def explorer_rows(tl: Timeline) -> list[dict]:
    """Return the SystemProfileEvents rows: Explorer's copies of the framework events (named
    ``<op> [trace.json]``, their args as attributes) and the runtime and hardware events."""
    rows = []
    for e in tl.framework:
        rows.append(_row(e, "framework", e["name"] + " [trace.json]", e["tid"], e["args"],
                         stream=STREAM if e["cat"] == "privateuse1_driver" else None))
    for e in tl.neuron:
        rows.append(_row(e, e["source"], e["name"], e["tid"], {"model_id": 7, **e["extra"]},
                         nc=e["nc"], pcore=e["pcore"]))
    rows.sort(key=lambda r: (r["start_ts"], -r["end_ts"]))
    for i, r in enumerate(rows):
        r["id"] = 1000 + i
    return rows


def _row(e: dict, source: str, name: str, tid: int, extra: dict, *, stream=None, nc=None,
         pcore=None) -> dict:
    return {"name": name, "start_ts": BASE_NS + e["start"], "end_ts": BASE_NS + e["end"],
            "duration_ns": e["end"] - e["start"], "trace_event_source": source,
            "instance_id": INSTANCE, "process_id": PID, "thread_id": tid, "nc_idx": nc,
            "pcore_idx": pcore, "flow_id": None if e["flow"] is None else [str(f) for f in e["flow"]],
            "framework_stream_id": None if stream is None else str(stream),
            "extra_attributes_json": json.dumps(extra)}


COLUMNS = {"id": pl.Int64, "name": pl.String, "start_ts": pl.Int64, "end_ts": pl.Int64,
           "duration_ns": pl.Int64, "trace_event_source": pl.String, "instance_id": pl.String,
           "process_id": pl.Int64, "thread_id": pl.Int64, "nc_idx": pl.Int64,
           "pcore_idx": pl.Int64, "flow_id": pl.List(pl.String), "framework_stream_id": pl.String,
           "extra_attributes_json": pl.String}


def write_parquet(rows: list[dict], folder: Path, parts: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    df = pl.DataFrame(rows, schema=COLUMNS, orient="row")
    if parts == 1:
        df.write_parquet(folder / "SystemProfileEvents.parquet")
        return
    size = -(-df.height // parts)
    for i in range(parts):
        df.slice(i * size, size).write_parquet(folder / f"SystemProfileEvents_{i}.parquet")


def legacy_json(rows: list[dict]) -> dict:
    """Return the legacy export: attributes flattened into each record, numbers as Explorer
    writes them (process_id a string, flow ids strings)."""
    out = []
    for r in rows:
        ev = {"name": r["name"], "timestamp": r["start_ts"], "duration": r["duration_ns"],
              "id": r["id"], "instance_id": r["instance_id"], "process_id": str(r["process_id"]),
              "thread_id": r["thread_id"], "trace_event_source": r["trace_event_source"]}
        for key in ("nc_idx", "pcore_idx", "flow_id", "framework_stream_id"):
            if r[key] is not None:
                ev[key] = r[key]
        ev.update({k: v for k, v in json.loads(r["extra_attributes_json"]).items() if k not in ev})
        out.append(ev)
    return {"system_profile_metadata": {"first_ts_ns": str(rows[0]["start_ts"])},
            "trace_event": out}


def build(shape: str, lnc: int, export: str, with_trace: bool, folder: Path) -> Timeline:
    """Write one profile of ``shape`` under ``folder``; return its timeline and record."""
    tl = timeline(SHAPES[shape], lnc)
    rows = explorer_rows(tl)
    if export == "parquet":
        write_parquet(rows, folder / "explorer" / "parquet", parts=lnc)
    else:
        out = folder / "explorer" / "json"
        out.mkdir(parents=True)
        (out / "system_profile.json").write_text(json.dumps(legacy_json(rows)))
    if with_trace:
        capture = folder / f"{INSTANCE}_pid_{PID}" / "20261102_120000_000"
        capture.mkdir(parents=True)
        (capture / "trace.json").write_text(json.dumps(trace_json(tl)))
    return tl


def device_us_by_op(tl: Timeline) -> dict[str, float]:
    """Return the record's device time per op, µs: each execution counts for its op."""
    out: dict[str, float] = {}
    for e in tl.executions:
        out[e["op"]] = out.get(e["op"], 0) + e["device_ns"] / 1000
    return out
