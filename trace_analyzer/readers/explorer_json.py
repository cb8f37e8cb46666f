"""Neuron Explorer legacy JSON export (``--output-format json``, retired after Neuron 2.33).

Events are in a top-level ``trace_event`` list (2026 files) or ``trace_events`` (the older
Profiler 2.0 group form, a list or a mapping of group name to list). ``timestamp`` and
``duration`` are epoch times in the record's ``timestamp_unit`` (``ns``, ``us``, ``ms``, ``s``;
the document's own top-level ``timestamp_unit`` when the record has none, else ns), converted
exactly to integer ns. Number fields arrive as numbers or strings; both are accepted. The
export's top-level ``warnings`` become the read's warnings, and ``system_profile_metadata``
(an object, or a list of them) a note (docs/formats.md, "Legacy JSON details").
"""

from __future__ import annotations

import re
from collections import Counter
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext
from typing import Any

import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.discover import Source
from trace_analyzer.model.schema import conform
from trace_analyzer.readers.common import (
    I64_MAX,
    I64_MIN,
    ReadResult,
    as_i64,
    assign_steps,
    finish,
    json_text,
)
from trace_analyzer.readers.format import Format
from trace_analyzer.readers.neuron import (
    EXECUTIONS,
    EXTRA_COLUMNS,
    HW_SYNC,
    WORKER_GID,
    label,
    mark_dispatch,
    worker_ranks,
)

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
LINK_KEYS = ("exec_id", "nrt_sequence_id")  # the keys that link executions and runtime calls
RT_GROUP = re.compile(r"^nrt-nc-(\d+)")
# ns per unit of a record's timestamp_unit (lower-cased; µ and μ both spell micro).
UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
FLOAT_EXACT = 2**53  # beyond it a float no longer holds every integer (as_i64's rule)
LONGEST_NUMBER = 64  # characters: a longer number text is no time
SHOWN_WARNINGS, SHOWN_CHARS = 20, 500  # of the export's own warnings: how many, how long
METADATA_KEYS = ("first_ts_ns", "last_ts_ns", "ntff_version")
MESSAGE_KEYS = ("message", "text", "msg", "warning")  # where a warning object holds its text


def sniff(doc: dict[str, Any]) -> bool:
    """Return True for a legacy export's top level: ``trace_event`` or ``trace_events``."""
    return "trace_event" in doc or "trace_events" in doc


COLUMNS = (
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
    "rank",  # worker_gid (neuron.worker_ranks)
    "stream",
    "flow_ids",
    "args_json",
    *EXTRA_COLUMNS.values(),  # exec_id, seq_id and the link keys of trace.json copies
)


def read(src: Source, doc: dict[str, Any]) -> ReadResult:
    """Return the events of one legacy JSON export."""
    records = _records(src, doc)
    cols: dict[str, list[Any]] = {k: [] for k in COLUMNS}
    default = doc.get("timestamp_unit", "ns")  # the document's unit, for records without one
    bad, unlinked, unknown = 0, 0, Counter[str]()
    for e in records:
        if not isinstance(e, dict):
            bad += 1
            continue
        unit = e.get("timestamp_unit", default)
        scale = unit_ns(unit)
        if scale is None:
            unknown[_shown(unit)] += 1
            continue
        start = as_ns(e.get("timestamp"), scale)
        if start is None:
            bad += 1
            continue
        unlinked += _append(cols, e, start, as_ns(e.get("duration"), scale) or 0)
    result = ReadResult(source=src, format="explorer-json")
    if unlinked:  # what an extra_attributes_json that does not parse is to the Parquet export
        result.warnings.append(
            f"{src.path}: {unlinked} of {len(records)} trace_event records have an exec_id or "
            "nrt_sequence_id that is not an integer: the links of those records are lost"
        )
    result.warnings += [f"{src.path}: the export warns: {w}" for w in export_warnings(doc)]
    if bad:
        result.warnings.append(f"{src.path}: {bad} trace_event records without a timestamp dropped")
    if unknown:
        units = ", ".join(f"{u} ({n})" for u, n in sorted(unknown.items())[:5])
        result.warnings.append(
            f"{src.path}: {unknown.total()} trace_event records with an unknown timestamp_unit "
            f"dropped: {units}; known units: ns, us, ms, s"
        )
    result.notes += metadata_notes(doc)
    df = finish(cols, src.path)
    if not df.is_empty():
        df = mark_dispatch(
            label(df.with_columns(end_ns=pl.col("start_ns") + pl.col("duration_ns")))
        )
        df = assign_steps(conform(worker_ranks(df)), by_process=True)
    result.events = df
    result.rank_origin = WORKER_GID if df["rank"].is_not_null().any() else None
    return result


def unit_ns(unit: object) -> int | None:
    """Return the ns in one ``unit`` (a timestamp_unit: ns, us, ms, s), None if unknown."""
    return UNIT_NS.get(unit.strip().lower()) if isinstance(unit, str) else None


def as_ns(value: object, scale: int) -> int | None:
    """Return a time ``value`` in units of ``scale`` ns as int64 ns, to the nearest ns.

    Integers and decimal texts (``"1793620800001054.75"``) are converted exactly; a float only
    up to 2**53 units, where it still holds an exact value (a larger one, like a missing, not
    finite or out-of-range value, is None).
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        exact = Decimal(value)
    elif isinstance(value, float):
        if value != value or abs(value) > FLOAT_EXACT:  # NaN, infinities, imprecise floats
            return None
        exact = Decimal(value)  # the float's exact binary value
    elif isinstance(value, str) and len(value) <= LONGEST_NUMBER:
        try:
            exact = Decimal(value.strip())
        except InvalidOperation:
            return None
        if not exact.is_finite():
            return None
    else:
        return None
    if exact and exact.adjusted() > 20:  # beyond int64 ns whatever the unit: never expanded
        return None
    with localcontext() as ctx:
        ctx.prec = 80  # every product of 64 digits by a power of ten, exactly
        ns = int((exact * scale).to_integral_value(ROUND_HALF_EVEN))
    return ns if I64_MIN <= ns <= I64_MAX else None


def _shown(value: object) -> str:
    """Return a value from the trace as a short quoted text (for a warning)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def export_warnings(doc: dict[str, Any]) -> list[str]:
    """Return the texts of the export's top-level ``warnings``: strings, or objects with a
    ``message`` (or ``text``) and maybe a ``category``; each as one line, at most
    SHOWN_WARNINGS of them."""
    raw = doc.get("warnings")
    items = raw if isinstance(raw, list) else [] if raw is None else [raw]
    texts = [t for t in (_warning_text(w) for w in items) if t]
    if len(texts) > SHOWN_WARNINGS:
        texts = texts[:SHOWN_WARNINGS] + [f"... and {len(texts) - SHOWN_WARNINGS} more warnings"]
    return texts


def _warning_text(item: object) -> str | None:
    if isinstance(item, dict):
        message = next(
            (
                item[k]
                for k in ("message", "text", "msg", "warning")
                if isinstance(item.get(k), str)
            ),
            None,
        )
        category = item.get("category")
        if message is None:
            text = json_text(item) or ""
        elif isinstance(category, str) and category.strip():
            text = f"{category}: {message}"
        else:
            text = message
    elif isinstance(item, str):
        text = item
    elif item is None:
        return None
    else:
        text = json_text(item) or ""
    text = " ".join(text.split())
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def metadata_notes(doc: dict[str, Any]) -> list[str]:
    """Return a note of what ``system_profile_metadata`` says (an object, or a list of them,
    one per system profile): first_ts_ns, last_ts_ns, ntff_version, as numbers."""
    meta = doc.get("system_profile_metadata")
    entries = meta if isinstance(meta, list) else [meta]
    shown = []
    for m in entries:
        if isinstance(m, dict):
            fields = [f"{k} {v}" for k in METADATA_KEYS if (v := as_i64(m.get(k))) is not None]
            shown.append(", ".join(fields) or "no first_ts_ns, last_ts_ns or ntff_version")
    if not shown:
        return []
    more = f"; ... and {len(shown) - 4} more" if len(shown) > 4 else ""
    return ["system_profile_metadata: " + "; ".join(shown[:4]) + more]


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


def _append(cols: dict[str, list[Any]], e: dict[str, Any], start: int, duration: int) -> bool:
    """Append one record to ``cols``; return True when one of its link keys is unreadable."""
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
    cols["start_ns"].append(start)
    cols["duration_ns"].append(duration)
    cols["host"].append(_text(e.get("instance_id")))
    cols["pid"].append(as_i64(e.get("process_id")))
    cols["tid"].append(as_i64(e.get("thread_id")))
    cols["device"].append(nc)
    cols["core"].append(as_i64(e.get("pcore_idx", e.get("device_core_idx"))))
    cols["rank"].append(as_i64(e.get("worker_gid")))
    cols["stream"].append(as_i64(e.get("framework_stream_id")))
    flows = e.get("flow_id")
    cols["flow_ids"].append([as_i64(f) for f in flows] if isinstance(flows, list) else None)
    lost = False
    for key, col in EXTRA_COLUMNS.items():
        cols[col].append(value := as_i64(e.get(key)))
        lost |= value is None and e.get(key) is not None and key in LINK_KEYS
    rest = {k: v for k, v in e.items() if k not in COLUMN_KEYS}
    cols["args_json"].append(json_text(rest) if rest else None)
    return lost


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
