"""Kineto (torch.profiler) Chrome traces: ``trace.json``, ``*.pt.trace.json[.gz]`` and friends.

Clock: ``ts``/``dur`` are µs (3 decimals give ns resolution). With ``baseTimeNanoseconds``
they are relative to it, so epoch_ns = base + ts*1000. Older traces have no base and write
epoch µs directly. Anything else stays relative, with a warning.
"""

from __future__ import annotations

from collections import Counter

import orjson
import polars as pl

from ..discover import Source
from ..errors import InputError
from ..schema import conform
from .common import I64_MAX, I64_MIN, ReadResult, as_i64, assign_steps, capture_backend, finish

HOST, STREAM, DEVICE = "host", "stream", "device"
ACCEL = "<accel>"  # replaced per trace: cuda, rocm or privateuse1

# Kineto category -> (lane kind, source, where the event runs). Old names from early Kineto
# (Kernel, Runtime, Memcpy, Memset) map like their new names.
CATEGORIES: dict[str, tuple[str, str, str]] = {
    "cpu_op": ("framework_op", "framework", HOST),
    "user_annotation": ("annotation", "framework", HOST),
    "python_function": ("annotation", "framework", HOST),
    "privateuse1_runtime": ("framework_dispatch", "framework", HOST),
    "privateuse1_driver": ("framework_stream", "framework", STREAM),
    "cuda_runtime": ("runtime", ACCEL, HOST),
    "cuda_driver": ("runtime", ACCEL, HOST),
    "Runtime": ("runtime", ACCEL, HOST),
    "mtia_runtime": ("runtime", "mtia", HOST),
    "kernel": ("hardware", ACCEL, DEVICE),
    "Kernel": ("hardware", ACCEL, DEVICE),
    "gpu_memset": ("hardware", ACCEL, DEVICE),
    "Memset": ("hardware", ACCEL, DEVICE),
    "gpu_memcpy": ("transfer", ACCEL, DEVICE),
    "Memcpy": ("transfer", ACCEL, DEVICE),
    "cuda_sync": ("sync", ACCEL, DEVICE),
    "gpu_user_annotation": ("annotation", ACCEL, DEVICE),
    "mtia_ccp_events": ("hardware", "mtia", DEVICE),
}
# Complete events that describe the profiler itself, not the workload.
NOT_EVENTS = {"Trace", "overhead"}
# Flow categories that link a host launch to a device op (old traces say async_gpu).
DEVICE_FLOWS = {"ac2g", "async_gpu"}
DEVICE_WORD = {"cuda": "GPU", "rocm": "GPU", "mtia": "MTIA", "privateuse1": "Device"}

ARG_COLUMNS = {
    "External id": "external_id",
    "external id": "external_id",
    "correlation": "correlation",
    "nrt_sequence_id": "seq_id",
    "exec_id": "exec_id",
}
LINK_COLUMNS = ("external_id", "correlation", "seq_id", "exec_id")


def read(src: Source, doc: dict) -> ReadResult:
    """Return the events of one Kineto trace."""
    events = doc.get("traceEvents")
    result = ReadResult(source=src, format="kineto-json")
    if not isinstance(events, list):
        raise InputError(src.path, "traceEvents is not a list")
    base, clock_note, aligned = _clock(doc, events)
    if aligned:
        result.notes.append(clock_note)
    else:
        result.warnings.append(f"{src.path}: {clock_note}")
    rows, flows, skipped = _collect(events, base)
    neuron = _any_neuron(rows) or (src.capture is not None
                                   and capture_backend(src.path.parent) in (None, "neuron"))
    accel = "privateuse1" if neuron else _accelerator(doc, rows)
    df = finish(rows, src.path)
    if not df.is_empty():
        host_pid = _host_pid(df)
        df = _label(df.with_columns(raw_pid=pl.col("pid")), accel, neuron, src.capture.host if src.capture else None, host_pid)
        df = _attach_flows(df, flows, result)
        df = assign_steps(conform(df))
    result.events = df
    result.rank, result.rank_origin = _rank(doc, src)
    if result.rank is not None:
        result.events = df.with_columns(rank=pl.lit(result.rank, dtype=pl.Int64))
    if skipped:
        detail = ", ".join(f"{n} {k}" for k, n in sorted(skipped.items()))
        result.notes.append(f"not events: {detail}")
    return result


def _clock(doc: dict, events: list) -> tuple[int, str, bool]:
    """Return the base to add to ts (ns), a note on the clock, and whether it is epoch-aligned."""
    base = as_i64(doc.get("baseTimeNanoseconds"))
    if base is not None:
        return base, "clock: ts relative to baseTimeNanoseconds, aligned to epoch ns", True
    first = next((e.get("ts") for e in events if isinstance(e, dict) and e.get("ph") == "X"), None)
    if isinstance(first, (int, float)) and first > 1e15:
        return 0, "clock: no baseTimeNanoseconds; ts read as epoch µs (older Kineto)", True
    return 0, ("no baseTimeNanoseconds and ts is not epoch µs: times are relative to an "
               "unknown origin"), False


def _ns(v: object, base: int = 0) -> int | None:
    """Return µs ``v`` as ns after ``base``, or None when not a number or outside int64."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) < 1e300:
        ns = round(v * 1000) + base
        return ns if I64_MIN <= ns <= I64_MAX else None
    return None


def _collect(events: list, base: int) -> tuple[dict[str, list], list[tuple], Counter]:
    """Return column lists of the complete events, the flow records, and what was skipped."""
    cols: dict[str, list] = {k: [] for k in (
        "name", "category", "start_ns", "duration_ns", "pid", "tid", "device", "stream",
        "external_id", "correlation", "seq_id", "exec_id", "args_json",
    )}
    flows: list[tuple] = []
    skipped: Counter = Counter()
    for e in events:
        if not isinstance(e, dict):
            skipped["non-object records"] += 1
            continue
        ph = e.get("ph")
        if ph == "X":
            cat = e.get("cat")
            if cat in NOT_EVENTS:
                skipped[f"'{cat}' spans"] += 1
                continue
            ts, dur = _ns(e.get("ts"), base), _ns(e.get("dur", 0))
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            cols["name"].append(e.get("name"))
            cols["category"].append(cat if isinstance(cat, str) else None)
            cols["start_ns"].append(ts)
            cols["duration_ns"].append(dur)
            cols["pid"].append(as_i64(e.get("pid")))
            cols["tid"].append(as_i64(e.get("tid")))
            cols["device"].append(as_i64(args.get("device")))
            cols["stream"].append(as_i64(args.get("stream", args.get("stream_id"))))
            link = dict.fromkeys(LINK_COLUMNS)
            for arg, col in ARG_COLUMNS.items():
                if link[col] is None and arg in args:
                    link[col] = as_i64(args[arg])
            for col, v in link.items():
                cols[col].append(v)
            cols["args_json"].append(orjson.dumps(args).decode() if args else None)
        elif ph in ("s", "f") and e.get("cat") in DEVICE_FLOWS:
            flows.append((as_i64(e.get("id")), ph, as_i64(e.get("pid")), as_i64(e.get("tid")),
                          _ns(e.get("ts"), base)))
        else:
            skipped[_skip_reason(ph, e.get("cat"))] += 1
    return cols, flows, skipped


def _skip_reason(ph: object, cat: object) -> str:
    if ph == "M":
        return "metadata records"
    if ph in ("s", "f", "t"):
        return f"'{cat}' flow records"
    if ph in ("i", "I"):
        return "instant events"
    return f"records of phase {ph!r}"


def _any_neuron(rows: dict[str, list]) -> bool:
    return any(s is not None for s in rows["seq_id"]) or "privateuse1_driver" in rows["category"]


def _accelerator(doc: dict, rows: dict[str, list]) -> str:
    """Return cuda or rocm: ROCm traces reuse CUDA's categories with hip* runtime names."""
    props = orjson.dumps(doc.get("deviceProperties") or []).decode().lower()
    if "amd" in props or "instinct" in props or "gfx" in props:
        return "rocm"
    for name, cat in zip(rows["name"], rows["category"]):
        if cat in ("cuda_runtime", "Runtime") and isinstance(name, str):
            return "rocm" if name.startswith("hip") else "cuda"
    return "cuda"


def _host_pid(df: pl.DataFrame) -> int | None:
    """Return the pid of the process that owns the trace: the one that runs its cpu_ops."""
    host = df.filter(pl.col("category").is_in(["cpu_op", "user_annotation", "cuda_runtime",
                                               "Runtime", "mtia_runtime", "privateuse1_runtime"]))
    if host.is_empty():
        return None
    return host.group_by("pid").len().sort("len", descending=True)["pid"][0]


def _label(df: pl.DataFrame, accel: str, neuron: bool, host: str | None,
           host_pid: int | None) -> pl.DataFrame:
    """Return df with lane_kind, source, lane, and device/stream filled for device events."""
    table = pl.DataFrame(
        {
            "category": list(CATEGORIES),
            "lane_kind": [k for k, _, _ in CATEGORIES.values()],
            "source": [accel if s == ACCEL else s for _, s, _ in CATEGORIES.values()],
            "where": [w for _, _, w in CATEGORIES.values()],
        }
    )
    df = df.drop("lane_kind", "source").join(table, on="category", how="left")
    df = df.with_columns(
        lane_kind=pl.col("lane_kind").fill_null("other"),
        source=pl.col("source").fill_null("framework"),
        where=pl.col("where").fill_null(HOST),
        end_ns=pl.col("start_ns") + pl.col("duration_ns"),
        host=pl.lit(host, dtype=pl.String),
    )
    device_side = pl.col("where") == DEVICE
    df = df.with_columns(
        device=pl.when(device_side).then(pl.col("device").fill_null(pl.col("pid"))).otherwise(
            pl.col("device")
        ),
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
    return df.with_columns(lane=lane).drop("where")


def _on_device_pid(df: pl.DataFrame) -> pl.Expr:
    """Return a mask of the rows that Kineto wrote under a device's pid.

    Device events use the device index as pid; some runtimes (MTIA) also log host-side calls
    under it. Neither is a process: both belong to the host process that owns the trace.
    """
    device_pids = set(df.filter(pl.col("where") == DEVICE)["pid"].drop_nulls().to_list())
    host_pids = set(df.filter(pl.col("category") == "cpu_op")["pid"].drop_nulls().to_list())
    return (pl.col("where") == DEVICE) | pl.col("pid").is_in(list(device_pids - host_pids))


def _attach_flows(df: pl.DataFrame, flows: list[tuple], result: ReadResult) -> pl.DataFrame:
    """Return df with ``flow_ids`` from ac2g flows, bound to the event at the flow's (tid, ts).

    Kineto writes a flow start at its launch event's ts and a flow end at its device event's
    ts, on the same pid/tid. Where several events share that point, the launch (runtime or
    dispatch) takes the start and the device-side event takes the end.
    """
    if not flows:
        return df
    fl = pl.DataFrame(flows, schema=["flow_id", "ph", "fpid", "tid", "start_ns"], orient="row")
    # Flows carry the pid Kineto wrote (a device index for device events), so match on that.
    ev = df.with_row_index("_row").select("_row", "tid", "start_ns", "lane_kind", "raw_pid")
    prefer = {"runtime": 0, "framework_dispatch": 0, "hardware": 0, "transfer": 0, "sync": 1}
    cand = fl.join(ev, left_on=["fpid", "tid", "start_ns"], right_on=["raw_pid", "tid", "start_ns"])
    cand = cand.with_columns(
        rank=pl.col("lane_kind").cast(pl.String).replace_strict(prefer, default=2, return_dtype=pl.Int64)
    ).sort("rank", "_row")
    bound = cand.unique(subset=["flow_id", "ph"], keep="first", maintain_order=True)
    unbound = len(fl.unique(subset=["flow_id", "ph"])) - len(bound)
    if unbound:
        result.notes.append(f"{unbound} flow endpoints matched no event")
    per_event = bound.group_by("_row").agg(flow_ids=pl.col("flow_id").unique().sort())
    out = df.with_row_index("_row").drop("flow_ids").join(per_event, on="_row", how="left")
    return out.sort("_row").select(df.columns)


def _rank(doc: dict, src: Source) -> tuple[int | None, str | None]:
    info = doc.get("distributedInfo")
    if isinstance(info, dict) and as_i64(info.get("rank")) is not None:
        return as_i64(info.get("rank")), "distributedInfo"
    return src.rank, src.rank_origin
