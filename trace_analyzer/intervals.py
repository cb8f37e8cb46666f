"""Interval nesting: which range encloses which, per thread (or any other group)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable


def enclosing(
    ranges: Iterable[tuple[object, int, int, int]],
    points: Iterable[tuple[object, int, int]] = (),
) -> dict[int, int]:
    """Return ``{id: id of the innermost range enclosing it}`` within each group.

    ``ranges`` are ``(group, start, end, id)``; each range gets its innermost enclosing
    range (its parent in the nesting). ``points`` are ``(group, time, id)``; each gets the
    innermost range containing that time. Ranges on one thread nest properly, which the
    stack sweep relies on; ids without an enclosing range are absent from the result.
    """
    by_group: dict[object, list[tuple[int, int, int, int, bool]]] = defaultdict(list)
    for group, start, end, rid in ranges:
        # Sort key: start, then longer first, so a parent precedes the children it holds.
        by_group[group].append((start, -end, 0, rid, False))
    for group, t, pid in points:
        by_group[group].append((t, -t, 1, pid, True))
    parent: dict[int, int] = {}
    for items in by_group.values():
        items.sort()
        stack: list[tuple[int, int]] = []  # (end, id)
        for start, neg_end, _, rid, is_point in items:
            end = -neg_end
            while stack and stack[-1][0] < end:
                stack.pop()
            if stack:
                parent[rid] = stack[-1][1]
            if not is_point:
                stack.append((end, rid))
    return parent
