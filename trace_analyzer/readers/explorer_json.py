"""Neuron Explorer legacy JSON export (``--output-format json``, retired after Neuron 2.33).

Events are in a top-level ``trace_event`` list (2026 files) or ``trace_events`` (the older
Profiler 2.0 group form, a list or a mapping of group name to list). ``timestamp`` and
``duration`` are epoch ns. Number fields arrive as numbers or strings; both are accepted.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from trace_analyzer.core.schema import conform
from trace_analyzer.errors import InputError
from trace_analyzer.inputs.discover import Source
from trace_analyzer.readers.common import ReadResult, as_i64, assign_steps, finish, json_text
from trace_analyzer.readers.format import Format
from trace_analyzer.readers.neuron import EXECUTIONS, HW_SYNC, label, mark_dispatch

# Keys that become columns; everything else is kept in args_json.
COLUMN_KEYS = {
    "name",
    "timestamp",
    "duration",
    "id",
    "instance_id",
    "process_id",
    "thread_id",
    "nc_idx",
    "lnc_idx",
    "pcore_idx",
    "device_core_idx",
    "trace_event_source",
    "flow_id",
    "framework_stream_id",
    "exec_id",
    "nrt_sequence_id",
}
HW_NAMES = (
    set(EXECUTIONS)
    | set(HW_SYNC)
    | {"timestamp_sync_point", "nc_model_switch", "nrt_model_switch", "numerical_err", "hw_notify"}
)
RT_GROUP = re.compile(r"^nrt-nc-(\d+)")


def sniff(doc: dict[str, Any]) -> bool:
    """Return True for a legacy export's top level: ``trace_event`` or ``trace_events``."""
    return "trace_event" in doc or "trace_events" in doc


def read(src: Source, doc: dict[str, Any]) -> ReadResult:
    """Return the events of one legacy JSON export."""
    records = _records(src, doc)
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "orig_id",
            "name",
            "source",
            "start_ns",
            "duration_ns",
            "host",
            "pid",
            "tid",
            "device",
            "core",
            "stream",
            "flow_ids",
            "exec_id",
            "seq_id",
            "args_json",
        )
    }
    bad = 0
    for e in records:
        if not isinstance(e, dict) or as_i64(e.get("timestamp")) is None:
            bad += 1
            continue
        _append(cols, e)
    result = ReadResult(source=src, format="explorer-json")
    if bad:
        result.warnings.append(f"{src.path}: {bad} trace_event records without a timestamp dropped")
    df = finish(cols, src.path)
    if not df.is_empty():
        df = mark_dispatch(
            label(df.with_columns(end_ns=pl.col("start_ns") + pl.col("duration_ns")))
        )
        df = assign_steps(conform(df))
    result.events = df
    return result


def _records(src: Source, doc: dict[str, Any]) -> list[Any]:
    events = doc.get("trace_event", doc.get("trace_events"))
    if isinstance(events, dict):  # group form: {group name: [events]}
        events = [e for group in events.values() if isinstance(group, list) for e in group]
    if not isinstance(events, list):
        raise InputError(str(src.path), "trace_event is not a list of events")
    return events


def _text(value: object) -> str | None:
    """Return a text field as text: a number (any other JSON value) as its str, like Kineto."""
    return value if isinstance(value, str) or value is None else str(value)


def _append(cols: dict[str, list[Any]], e: dict[str, Any]) -> None:
    name = _text(e.get("name"))
    source = e.get("trace_event_source")
    if not isinstance(source, str) or not source:
        source = _source_of(e, name)
    group = RT_GROUP.match(str(e.get("group", "")))
    nc = as_i64(e.get("nc_idx", e.get("lnc_idx")))
    if nc is None and group:
        nc = as_i64(group[1])  # None beyond int64, like any other core number
    cols["orig_id"].append(as_i64(e.get("id")))
    cols["name"].append(name)
    cols["source"].append(source)
    cols["start_ns"].append(as_i64(e.get("timestamp")))
    cols["duration_ns"].append(as_i64(e.get("duration")) or 0)
    cols["host"].append(_text(e.get("instance_id")))
    cols["pid"].append(as_i64(e.get("process_id")))
    cols["tid"].append(as_i64(e.get("thread_id")))
    cols["device"].append(nc)
    cols["core"].append(as_i64(e.get("pcore_idx", e.get("device_core_idx"))))
    cols["stream"].append(as_i64(e.get("framework_stream_id")))
    flows = e.get("flow_id")
    cols["flow_ids"].append([as_i64(f) for f in flows] if isinstance(flows, list) else None)
    cols["exec_id"].append(as_i64(e.get("exec_id")))
    cols["seq_id"].append(as_i64(e.get("nrt_sequence_id")))
    rest = {k: v for k, v in e.items() if k not in COLUMN_KEYS}
    cols["args_json"].append(json_text(rest) if rest else None)


def _source_of(e: dict[str, Any], name: object) -> str:
    """Return the trace_event_source of a Profiler 2.0-style record that lacks one."""
    if name in HW_NAMES:
        return "neuron_hw"
    group = str(e.get("group", ""))
    if group.startswith("framework") or e.get("type") == 99999:
        return "framework"
    return "neuron_rt"


FORMAT = Format(
    "explorer-json",
    "Neuron Explorer legacy JSON export",
    "json",
    sniff=sniff,
    read=read,
)
