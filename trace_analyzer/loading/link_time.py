"""The time rules of the links (loading/link.py): containment, where no key links an event.

Each takes the children no key linked and the hop's candidate parents and returns edges
(src, dst, link_method).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from trace_analyzer.model.intervals import innermost


def within_core(kids: pl.DataFrame, parents: pl.DataFrame) -> pl.DataFrame:
    """Return hardware events -> the innermost runtime call enclosing them on the same core."""
    found = innermost(
        parents.select("pid", "device", start="start_ns", end="end_ns", id="event_id"),
        kids.select("pid", "device", t="start_ns", id="event_id"),
        ["pid", "device"],
    )
    return _edges(found, "time")


def launch_to_op(kids: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """Return launches -> their op: the op named by External id or correlation when that op
    encloses the launch on its thread, else the innermost op that does."""
    named = (
        ops.filter(pl.col("external_id").is_not_null())
        .unique(subset=["pid", "external_id"], keep="last", maintain_order=True)
        .select(
            "pid", "external_id", op="event_id", op_tid="tid", op_start="start_ns", op_end="end_ns"
        )
    )
    found, rest = (
        [],
        kids.select("event_id", "pid", "tid", "start_ns", "external_id", "correlation"),
    )
    for col in ("external_id", "correlation"):
        hits = (
            rest.join(named, left_on=["pid", col], right_on=["pid", "external_id"])
            .filter(
                (pl.col("tid") == pl.col("op_tid"))
                & pl.col("start_ns").is_between(pl.col("op_start"), pl.col("op_end"))
            )
            .select(src="op", dst="event_id", link_method=pl.lit(col))
        )
        found.append(hits)
        rest = rest.filter(~pl.col("event_id").is_in(hits["dst"].implode()))
    if rest.is_empty():  # every launch named its op: no sweep over the ops
        return pl.concat(found).cast({"src": pl.Int64, "dst": pl.Int64, "link_method": pl.String})
    inner = innermost(
        ops.select("pid", "tid", start="start_ns", end="end_ns", id="event_id"),
        rest.select("pid", "tid", t="start_ns", id="event_id"),
        ["pid", "tid"],
    )
    found.append(_edges(inner, "time"))
    return pl.concat(found).cast({"src": pl.Int64, "dst": pl.Int64, "link_method": pl.String})


def caller(method: str) -> Callable[[pl.DataFrame, pl.DataFrame], pl.DataFrame]:
    """Return the rule that links launches -> the innermost Python function or annotation
    containing them on their thread, with link method ``method``."""

    def rule(kids: pl.DataFrame, functions: pl.DataFrame) -> pl.DataFrame:
        found = innermost(
            functions.select("pid", "tid", start="start_ns", end="end_ns", id="event_id"),
            kids.select("pid", "tid", t="start_ns", id="event_id"),
            ["pid", "tid"],
        )
        return _edges(found, method)

    return rule


def _edges(found: pl.DataFrame, method: str) -> pl.DataFrame:
    return found.select(src="parent", dst="id", link_method=pl.lit(method, pl.String))
