"""A Kineto trace's records as one table: what both ways of reading a trace reduce it to.

``RAW_SCHEMA`` is the raw table: one row per record, before labelling. The exact path
(``collect``) walks the records orjson parsed; the streaming path (kineto_stream.py) has
polars type the same columns from NDJSON lines. kineto.py turns the raw table into events.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from trace_analyzer.readers.common import as_i64, json_text

# Args that become columns: a record's arg -> its column (the first of two spellings wins).
ARG_COLUMNS = {
    "External id": "external_id",
    "external id": "external_id",
    "correlation": "correlation",
    "nrt_sequence_id": "seq_id",
    "exec_id": "exec_id",
}
LINK_COLUMNS = ("external_id", "correlation", "seq_id", "exec_id")


# The columns both paths reduce a trace to, before labelling: one row per record.
RAW_SCHEMA: dict[str, pl.DataType] = {
    "ph": pl.String(),
    "category": pl.String(),
    "name": pl.String(),
    "pid": pl.Int64(),
    "tid": pl.Int64(),
    "ts": pl.Float64(),
    "dur": pl.Float64(),
    "flow_id": pl.Int64(),
    "device": pl.Int64(),
    "stream": pl.Int64(),
    **dict.fromkeys(LINK_COLUMNS, pl.Int64()),
    "args_json": pl.String(),
}


def num(v: object) -> float | None:
    """Return a JSON number as a float; None for anything else (a bool, text, beyond 1e300)."""
    return (
        float(v)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e300
        else None
    )


def collect(events: list[Any]) -> tuple[pl.DataFrame, int]:
    """Return the raw table of parsed records (the exact path) and the count of non-objects."""
    cols: dict[str, list[Any]] = {k: [] for k in RAW_SCHEMA}
    non_objects = 0
    for e in events:
        if not isinstance(e, dict):
            non_objects += 1
            continue
        a = e.get("args")
        args: dict[str, Any] = a if isinstance(a, dict) else {}
        cat, ph, name = e.get("cat"), e.get("ph"), e.get("name")
        cols["ph"].append(ph if isinstance(ph, str) else None)
        cols["category"].append(cat if isinstance(cat, str) else None)
        cols["name"].append(name if isinstance(name, str) or name is None else str(name))
        cols["pid"].append(as_i64(e.get("pid")))
        cols["tid"].append(as_i64(e.get("tid")))
        cols["ts"].append(num(e.get("ts")))
        cols["dur"].append(num(e.get("dur", 0)))
        cols["flow_id"].append(as_i64(e.get("id")))
        cols["device"].append(as_i64(args.get("device")))
        cols["stream"].append(as_i64(args.get("stream", args.get("stream_id"))))
        link: dict[str, int | None] = dict.fromkeys(LINK_COLUMNS)
        for arg, col in ARG_COLUMNS.items():
            if link[col] is None and arg in args:
                link[col] = as_i64(args[arg])
        for col, v in link.items():
            cols[col].append(v)
        cols["args_json"].append(json_text(args) if args else None)
    return pl.DataFrame(cols, schema=RAW_SCHEMA), non_objects
