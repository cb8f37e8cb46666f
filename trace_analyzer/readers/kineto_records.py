"""A Kineto trace's records as one table: what both ways of reading a trace reduce it to.

``RAW_SCHEMA`` is the raw table: one row per record, before labelling. The exact path
(``collect``) walks the records orjson parsed; the streaming path (kineto_stream.py) has
polars type the same columns from NDJSON lines. kineto.py turns the raw table into events.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from trace_analyzer.model.schema import Text
from trace_analyzer.readers.common import as_i64, json_text

# Args that become columns: a record's arg -> its column (the first of two spellings wins).
ARG_COLUMNS = {
    "External id": "external_id",
    "external id": "external_id",
    "correlation": "correlation",
    "nrt_sequence_id": "seq_id",
    "exec_id": "exec_id",
    "wait_on_stream": "wait_stream",
    "wait_on_cuda_event_record_corr_id": "wait_record",
}
LINK_COLUMNS = ("external_id", "correlation", "seq_id", "exec_id", "wait_stream", "wait_record")


# The columns both paths reduce a trace to, before labelling: one row per record.
RAW_SCHEMA: dict[str, pl.DataType] = {
    "ph": Text,
    "category": Text,
    "name": Text,
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


# The dur of an X record without one, as the raw table holds it on every path: a NaN, which no
# JSON number is (orjson and polars refuse NaN). kineto.py counts the events that have it
# (NO_DUR_REASON) and reads them as 0 ns.
NO_DUR = float("nan")
NO_DUR_REASON = "X records without dur"  # their count, among the records skipped (kineto.py)


def no_dur_words(n: int) -> str:
    """Return the words of the warning that ``n`` events had no dur (cli/messages.py reads
    them back for its stderr line): not dropped, but read as 0 ns."""
    return f"{n:,} X record{'s' * (n != 1)} without dur, read as 0 ns"


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
        cols["name"].append(name if isinstance(name, str) or name is None else json_text(name))
        cols["pid"].append(as_i64(e.get("pid")))
        cols["tid"].append(as_i64(e.get("tid")))
        cols["ts"].append(num(e.get("ts")))
        cols["dur"].append(num(e["dur"]) if "dur" in e else NO_DUR)
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


UNMATCHED_B, UNMATCHED_E = "unmatched B (begin) records", "unmatched E (end) records"
_KEY = ["pid", "tid", "_level", "_pair"]


def pair_spans(raw: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Return the raw table with each matched pair of duration events (``ph`` B, then E) as
    the one complete ('X') record it describes, and the count of those left unmatched.

    The Chrome trace format's B and E events nest per pid and tid: an E closes the innermost
    open B, in time order (file order among equal times). The pair is the B record with the
    E's ts less the B's as its dur; the E's keys fill what the B lacks (the format merges
    their args). An E with no open B, and a B never closed, are counted and dropped.
    """
    ph = pl.col("ph")
    is_pair = ph.is_in(["B", "E"]).fill_null(False)
    if not raw.select(is_pair.any()).item():
        return raw, {}
    g = ["pid", "tid"]
    # The depth after each B or E, clamped at 0 (an E with nothing open closes nothing):
    # for a walk of +1/-1 steps S, the clamped depth is S - min(0, the least S so far).
    s = pl.when(ph == "B").then(1).otherwise(-1).cum_sum().over(g)
    be = raw.with_row_index("_i").filter(is_pair).sort([*g, "ts", "_i"])
    be = be.with_columns(_depth=s - pl.min_horizontal(s.cum_min().over(g), 0))
    before = pl.col("_depth").shift(1).over(g).fill_null(0)
    stray = (ph == "E") & (before == 0)
    be = be.with_columns(_stray=stray, _level=pl.when(ph == "B").then("_depth").otherwise(before))
    unmatched_e = be["_stray"].sum()
    # Within one depth the events alternate B, E, B, E ...: the k-th B pairs with the k-th E.
    be = be.filter(~pl.col("_stray")).with_columns(
        _pair=pl.int_range(pl.len()).over([*g, "_level"]) // 2
    )
    ends = be.filter(ph == "E").select(*_KEY, *(pl.col(c).alias(c + "_e") for c in RAW_SCHEMA))
    spans = be.filter(ph == "B").join(ends, on=_KEY, how="left", nulls_equal=True)
    matched = pl.col("ph_e").is_not_null()
    unmatched_b = spans.height - spans.select(matched.sum()).item()
    fill = [c for c in RAW_SCHEMA if c not in ("ph", "ts", "dur")]
    spans = spans.filter(matched).select(
        ph=pl.lit("X", Text),
        ts=pl.col("ts"),
        dur=pl.col("ts_e") - pl.col("ts"),
        **{c: pl.coalesce(c, c + "_e") for c in fill},
    )
    counts = {UNMATCHED_B: unmatched_b, UNMATCHED_E: int(unmatched_e)}
    rest = raw.filter(~is_pair)
    return pl.concat([rest, spans.select(rest.columns)]), {k: n for k, n in counts.items() if n}
