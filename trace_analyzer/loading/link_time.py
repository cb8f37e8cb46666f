"""The time rules of the links (loading/link.py): containment, where no key links an event;
and the joins on keys that the rules and link.py's hops share.

Each rule takes the linker's table (``event_id`` is the row), a mask of the children no key
linked and one of the hop's candidate parents, and returns edges (src, dst,
link_method). A rule takes the few columns it compares, at those rows only (``take``).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from trace_analyzer.model.intervals import innermost
from trace_analyzer.model.schema import Text


def take(ev: pl.DataFrame, rows: pl.Series, *columns: str, **renamed: str) -> pl.DataFrame:
    """Return the columns ``columns`` of ``ev``, and ``renamed`` (new name: column), at the rows
    the mask ``rows`` selects: a narrow frame of the rows a hop compares, not the table's
    rows whole."""
    return ev.select(*columns, **renamed).filter(rows)


def matches(left: pl.DataFrame, right: pl.DataFrame) -> pl.DataFrame:
    """Return (src, dst): each child row of ``left`` to each parent row of ``right`` that holds
    its key in its process (both: row, pid, key), other than itself, in the children's order.

    A null key or process matches nothing."""
    left, right = left.drop_nulls(), right.drop_nulls()
    on: str | list[str] = ["pid", "key"]
    one = one_key(left, right)
    if one is not None:
        left, right = left.select("row", key=one), right.select("row", key=one)
        on = "key"
    return (
        left.join(right, on=on, suffix="_p", maintain_order="left")
        .filter(pl.col("row") != pl.col("row_p"))
        .select(src="row_p", dst="row")
    )


def one_key(*sides: pl.DataFrame) -> pl.Expr | None:
    """Return (pid, key) as one integer, ``(pid - least pid) * keys + (key - least key)``, for
    frames ``sides`` with no null pid or key, or None where their pairs do not fit one.

    A join on two columns hashes each row's encoding: twice the time of one integer."""
    bounds = [
        side.select(
            p0=pl.col("pid").min(),
            p1=pl.col("pid").max(),
            k0=pl.col("key").min(),
            k1=pl.col("key").max(),
        ).row(0)
        for side in sides
        if side.height
    ]
    if not bounds:
        return None
    p0, p1 = min(b[0] for b in bounds), max(b[1] for b in bounds)
    k0, k1 = min(b[2] for b in bounds), max(b[3] for b in bounds)
    keys = k1 - k0 + 1
    if (p1 - p0 + 1) * keys >= 2**62:  # Python integers: no overflow in the test
        return None
    one: pl.Expr = (pl.col("pid") - p0) * keys + (pl.col("key") - k0)
    return one


def one_each(hits: pl.DataFrame) -> bool:
    """Whether each child has one hit: its rows strictly increasing, as where no child has two
    (``matches`` keeps the children's row order)."""
    return hits.height < 2 or bool(hits.select((pl.col("dst").diff() > 0).all()).item())


def least(hits: pl.DataFrame, best: pl.Expr | pl.Series, span: int) -> pl.DataFrame:
    """Return the hits (src, dst) one per child: the one whose ``best`` (below ``span``, one
    value per hit of a child) is least.

    Children with one hit each are returned as they are. Otherwise child and ``best`` are one
    number, ``dst * span + best``. The hits come in the children's order (``matches``), each
    child's in one run, and the number grows from run to run: a hit whose number is the
    least of all from it on (a minimum taken from the end) is the least of the rest of its
    run, and the first such hit of a run is the run's least. Found in three passes over the
    hits, with no sort and no hash (a sort of 3.4 million hits took 0.45 s at 10 million
    events, these 0.07 s). Hits out of the children's order, or past 2**62 (a table of a
    billion rows), are sorted by child and ``best``. Each ``best`` in traceana names its
    hit's parent, so hits of equal number are one edge."""
    if one_each(hits):
        return hits
    hits = hits.with_columns(_best=best)
    dst = pl.col("dst")
    in_order = hits.select((dst.diff() >= 0).all()).item()
    if not in_order or span * (hits["dst"].max() + 1) >= 2**62:  # type: ignore[operator]
        hits = hits.sort("dst", "_best")
        return hits.filter(dst != dst.shift(1).fill_null(-1)).select("src", "dst")
    number = dst * span + pl.col("_best")
    # the hits least from themselves on: of a child's, the first is its least
    return (
        hits.filter(number == number.cum_min(reverse=True))
        .filter(dst != dst.shift(1).fill_null(-1))
        .select("src", "dst")
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
    highest row), whether or not it encloses the launch."""
    named = take(ev, ops, "pid", row="event_id", key="external_id")
    found, rest = [], kids  # rest: the launches no op named so far (a mask)
    for col in ("external_id", "correlation"):
        hits = matches(take(ev, rest, "pid", row="event_id", key=col), named)
        hits = least(hits, ev.height - 1 - pl.col("src"), ev.height)  # the last op named
        src, dst = hits["src"], hits["dst"]
        inside = (ev["tid"].gather(dst) == ev["tid"].gather(src)) & ev["start_ns"].gather(
            dst
        ).is_between(ev["start_ns"].gather(src), ev["end_ns"].gather(src))
        hits = hits.filter(inside).with_columns(link_method=pl.lit(col, Text))
        found.append(hits)
        if hits.height:
            rest = rest & ~pl.Series([False]).new_from_index(0, ev.height).scatter(
                hits["dst"], True
            )
    if not rest.any():  # every launch named its op: no sweep over the ops
        return pl.concat(found).cast({"src": pl.Int64, "dst": pl.Int64, "link_method": Text})
    inner = innermost(
        take(ev, ops, "pid", "tid", start="start_ns", end="end_ns", id="event_id"),
        take(ev, rest, "pid", "tid", t="start_ns", id="event_id"),
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
