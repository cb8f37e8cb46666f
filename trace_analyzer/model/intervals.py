"""Interval nesting: which range encloses which, per thread (or any other group)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import polars as pl


def enclosing(
    ranges: Iterable[tuple[object, int, int, int]],
    points: Iterable[tuple[object, int, int]] = (),
) -> dict[int, int]:
    """Return ``{id: id of the innermost range enclosing it}`` within each group.

    ``ranges`` are ``(group, start, end, id)``; each range gets its innermost enclosing
    range (its parent in the nesting). ``points`` are ``(group, time, id)``; each gets the
    innermost range containing that time. Ranges on one thread nest properly, which the
    stack sweep relies on; ids without an enclosing range are absent from the result. A
    point's id that is also a range's gets the point's answer (``_swept`` needs the points'
    alone: ``swept``).
    """
    of_ranges, of_points = swept(ranges, points)
    return of_ranges | of_points


def swept(
    ranges: Iterable[tuple[object, int, int, int]],
    points: Iterable[tuple[object, int, int]] = (),
) -> tuple[dict[int, int], dict[int, int]]:
    """``enclosing``'s answers for the ranges and for the points, apart (their ids may be
    numbered apart, and so the same)."""
    by_group: dict[object, list[tuple[int, int, int, int, bool]]] = defaultdict(list)
    for group, start, end, rid in ranges:
        # Sort key: start, then longer first, so a parent precedes the children it holds.
        by_group[group].append((start, -end, 0, rid, False))
    for group, t, pid in points:
        by_group[group].append((t, -t, 1, pid, True))
    parent: tuple[dict[int, int], dict[int, int]] = ({}, {})
    for items in by_group.values():
        items.sort()
        stack: list[tuple[int, int]] = []  # (end, id)
        for _start, neg_end, _, rid, is_point in items:
            end = -neg_end
            while stack and stack[-1][0] < end:
                stack.pop()
            if stack:
                parent[is_point][rid] = stack[-1][1]
            if not is_point:
                stack.append((end, rid))
    return parent


def innermost(ranges: pl.DataFrame, points: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Return ``(id, parent)``: for each point, the innermost range containing it in its group.

    ``ranges`` has the ``by`` columns, ``start``, ``end`` and ``id``; ``points`` has ``by``,
    ``t`` and ``id``. Ends are inclusive; points outside every range are absent. The same
    answer as ``enclosing``, vectorised: in time order (at one instant: the closings of
    ranges a longer one replaces, openings, longest first and in id order, points, then the
    other closings), a point at nesting depth d sits in the range most recently opened at
    depth d. That holds while ranges nest properly, as they do on one
    thread; where two overlap instead (a child ending a rounding error after its parent),
    an answer that does not contain its point is recomputed by ``enclosing`` for its group.
    """
    i64 = pl.Int64
    ranges = ranges.with_columns(pl.col("start", "end", "id").cast(i64))
    points = points.with_columns(pl.col("t", "id").cast(i64))
    marks = _marks(ranges, points, by)
    step = pl.when(pl.col("kind") == 0).then(1).when(pl.col("kind") == 1).then(0).otherwise(-1)
    marks = marks.with_columns(depth=step.cum_sum().over(by), pos=pl.int_range(pl.len(), dtype=i64))
    opened = marks.filter(pl.col("kind") == 0).select(*by, "depth", "pos", parent="id")
    at = marks.filter((pl.col("kind") == 1) & (pl.col("depth") > 0)).select(
        *by, "depth", "pos", "id"
    )
    hit = (
        at.join_asof(
            opened, on="pos", by=[*by, "depth"], strategy="backward", check_sortedness=False
        )
        .join(points.select("id", "t"), on="id")
        .join(ranges.select(parent="id", p_start="start", p_end="end"), on="parent", how="left")
    )
    good = pl.col("t").is_between(pl.col("p_start"), pl.col("p_end"))
    crossed = _crossed(marks, opened, ranges, by)  # the groups whose ranges do not nest
    if crossed.height:
        good &= pl.struct(by).is_in(crossed.select(pl.struct(by)).to_series().implode()).not_()
    bad = hit.filter(~good.fill_null(False))
    out = hit.filter(good.fill_null(False)).select("id", "parent")
    lost = points.join(hit.select("id"), on="id", how="anti").join(crossed, on=by, how="semi")
    bad = pl.concat([bad.select(*by, "t", "id"), lost.select(*by, "t", "id")])
    if bad.is_empty():
        return out
    return pl.concat([out, _swept(ranges, bad, by)])


def _crossed(
    marks: pl.DataFrame, opened: pl.DataFrame, ranges: pl.DataFrame, by: list[str]
) -> pl.DataFrame:
    """The groups (``by``) where a range ends after the range it opened in (found as a point
    is: the one opened last a depth below): their ranges cross, and the depths the
    vectorised answer counts by are not the sweep's from there on."""
    child = marks.filter((pl.col("kind") == 0) & (pl.col("depth") > 1)).select(
        *by, "pos", "id", depth=pl.col("depth") - 1
    )
    found = child.join_asof(
        opened, on="pos", by=[*by, "depth"], strategy="backward", check_sortedness=False
    )
    ends = ranges.select("id", "end")
    found = found.join(ends, on="id")
    found = found.join(ends.rename({"id": "parent", "end": "p_end"}), on="parent")
    return found.filter(pl.col("end") > pl.col("p_end")).select(by).unique()


def _marks(ranges: pl.DataFrame, points: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Return the openings and closings of ``ranges`` and the ``points``, in sweep order.

    Columns: the ``by`` columns, ``time``, ``kind`` (0 opens, 1 a point, 2 closes after the
    points at its instant, -1 closes before everything at its instant), two tie-breakers and
    ``id``; sorted by group, time, kind and the tie-breakers.
    """
    i64 = pl.Int64
    # A range ending where a longer one starts has closed by then, as in the sweep; else
    # its end is inclusive, so it closes after the points at that instant.
    longer = (
        ranges.filter(pl.col("end") > pl.col("start"))
        .select(*by, time="start")
        .unique()
        .with_columns(first=pl.lit(True))
    )
    closes = (
        ranges.select(*by, "start", time="end", tie=-pl.col("start"), tie2=-pl.col("id"), id="id")
        .join(longer, on=[*by, "time"], how="left")
        .select(
            *by,
            "time",
            kind=pl.when(pl.col("first") & (pl.col("start") < pl.col("time")))
            .then(-1)
            .otherwise(2)
            .cast(pl.Int8),
            tie="tie",
            tie2="tie2",
            id="id",
        )
    )
    return pl.concat(
        [
            ranges.select(
                *by,
                time="start",
                kind=pl.lit(0, pl.Int8),
                tie=-pl.col("end"),
                tie2=pl.col("id"),
                id="id",
            ),
            points.select(
                *by,
                time="t",
                kind=pl.lit(1, pl.Int8),
                tie=pl.lit(0, i64),
                tie2=pl.lit(0, i64),
                id="id",
            ),
            closes,
        ]
    ).sort(*by, "time", "kind", "tie", "tie2")


def _swept(ranges: pl.DataFrame, bad: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Return ``(id, parent)`` for the points whose vectorised answer was wrong (``bad``:
    ``by``, ``t``, ``id``), found again by ``enclosing`` over their groups' ranges."""
    i64 = pl.Int64
    groups = bad.select(by).unique()
    _, again = swept(
        [
            (tuple(g), s, e, i)
            for *g, s, e, i in ranges.join(groups, on=by)
            .select(*by, "start", "end", "id")
            .iter_rows()
        ],
        [(tuple(g), t, i) for *g, t, i in bad.select(*by, "t", "id").iter_rows()],
    )
    fixed = pl.DataFrame(
        {"id": list(again), "parent": list(again.values())}, schema={"id": i64, "parent": i64}
    )
    return fixed.filter(pl.col("id").is_in(bad["id"].implode()))
