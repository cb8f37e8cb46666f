"""The time rules of the links (loading/link.py): containment, where no key links an event.

Each takes the linker's table (``event_id`` is the row), the rows of the children no key
linked and the rows of the hop's candidate parents, and returns edges (src, dst,
link_method). A rule takes the few columns it compares, at those rows only (``take``).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from trace_analyzer.model.intervals import innermost
from trace_analyzer.model.schema import Text


def take(ev: pl.DataFrame, rows: pl.Series, *columns: str, **renamed: str) -> pl.DataFrame:
    """Return the columns ``columns`` of ``ev``, and ``renamed`` (new name: column), at
    ``rows``: a narrow frame of the rows a hop compares, not the table's rows whole."""
    return ev.select(
        *(pl.col(c).gather(rows) for c in columns),
        **{new: pl.col(c).gather(rows) for new, c in renamed.items()},
    )


def within_core(ev: pl.DataFrame, kids: pl.Series, parents: pl.Series) -> pl.DataFrame:
    """Return hardware events -> the innermost runtime call enclosing them on the same core."""
    found = innermost(
        take(ev, parents, "pid", "device", start="start_ns", end="end_ns", id="event_id"),
        take(ev, kids, "pid", "device", t="start_ns", id="event_id"),
        ["pid", "device"],
    )
    return _edges(found, "time")


def launch_to_op(ev: pl.DataFrame, kids: pl.Series, ops: pl.Series) -> pl.DataFrame:
    """Return launches -> their op: the op named by External id or correlation when that op
    encloses the launch on its thread, else the innermost op that does.

    Of several ops with one External id in a process, the last in the table is named (the
    highest row)."""
    named = (
        take(ev, ops, "pid", "external_id", op="event_id")
        .drop_nulls("external_id")
        .group_by("pid", "external_id")
        .agg(pl.col("op").max())
    )
    found, rest = (
        [],
        take(ev, kids, "event_id", "pid", "tid", "start_ns", "external_id", "correlation"),
    )
    for col in ("external_id", "correlation"):
        hits = rest.join(named, left_on=["pid", col], right_on=["pid", "external_id"])
        op = hits["op"]
        hits = hits.filter(
            (pl.col("tid") == ev["tid"].gather(op))
            & pl.col("start_ns").is_between(ev["start_ns"].gather(op), ev["end_ns"].gather(op))
        ).select(src="op", dst="event_id", link_method=pl.lit(col, Text))
        found.append(hits)
        if hits.height:
            rest = rest.filter(~pl.col("event_id").is_in(hits["dst"].implode()))
    if rest.is_empty():  # every launch named its op: no sweep over the ops
        return pl.concat(found).cast({"src": pl.Int64, "dst": pl.Int64, "link_method": Text})
    inner = innermost(
        take(ev, ops, "pid", "tid", start="start_ns", end="end_ns", id="event_id"),
        rest.select("pid", "tid", t="start_ns", id="event_id"),
        ["pid", "tid"],
    )
    found.append(_edges(inner, "time"))
    return pl.concat(found).cast({"src": pl.Int64, "dst": pl.Int64, "link_method": Text})


def caller(method: str) -> Callable[[pl.DataFrame, pl.Series, pl.Series], pl.DataFrame]:
    """Return the rule that links launches -> the innermost Python function or annotation
    containing them on their thread, with link method ``method``."""

    def rule(ev: pl.DataFrame, kids: pl.Series, functions: pl.Series) -> pl.DataFrame:
        found = innermost(
            take(ev, functions, "pid", "tid", start="start_ns", end="end_ns", id="event_id"),
            take(ev, kids, "pid", "tid", t="start_ns", id="event_id"),
            ["pid", "tid"],
        )
        return _edges(found, method)

    return rule


def _edges(found: pl.DataFrame, method: str) -> pl.DataFrame:
    return found.select(src="parent", dst="id", link_method=pl.lit(method, Text))
