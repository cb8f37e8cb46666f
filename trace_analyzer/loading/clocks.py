"""Times far apart: traces that are not one run, events far outside their run (docs/formats.md,
"Layouts and runs").

Discovery makes a folder's trace files one run by their names alone (the ranks of one job).
Once they are read, their times say whether that holds: the files of one run overlap in time,
or nearly so (hosts' clocks differ by milliseconds under NTP). Files whose spans leave more
than ``FAR_APART_NS`` between them were recorded at different times, not by one job; merged,
they would make one window mostly made of a hole, with devices idle in it, and no warning.
Such a run is split into parts, a run per group of files (``groups``; parts.py), each
analysed on its own.

Within a run, a few events can lie far from all the others: one kernel stamped on another
clock, one host event at ts 0 among events at epoch 1.7e18 ns. Kept, they stretch the window
(and the origin of every time shown) to days or years. The run's events are grouped the same
way as files are (an event more than ``FAR_APART_NS`` after every earlier one has ended opens
a new group); the group holding the most events is the run's bulk. The groups that lie
farther from the bulk than both ``FAR_APART_NS`` and the bulk's own span are excluded, with a
warning that says how many and how far, and counted as dropped (``FAR_REASON``), when they are
few: at most 1 % of the run's events, or a single event beside at least 10 others. More than
that is real work, or another run, and is left as it is. It costs one sort of the start and
end times, and only for a run (or a file) that spans more than ``FAR_APART_NS`` at all.

Every total an analysis takes is a sum of event durations (an op's device or CPU time) or of
gaps (idle per cause, op or step, over hardware lanes). polars sums Int64 in Int64 and wraps
past 2^63 ns (292 years) without a word, so a run whose durations, plus the run's span for
each hardware lane, could add up past that is refused (``refuse_past_int64``): no profile
holds that much time, its times are wrong, and every total of it would be too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.numbers import duration
from trace_analyzer.readers import ReadResult

FAR_APART_NS = 60 * 1_000_000_000  # one minute: far above clock skew, far below a day
FAR_REASON = "far outside the run's span"  # the reason excluded events are counted by
FEW_PCT = 1  # excluded only when they are at most this % of the events (or a single event)
FEW_BESIDE = 10  # ... a single event beside at least this many others
CLOCK_APART_NS = 86_400 * 1_000_000_000  # a day: events kept this far apart are said
I64_MAX = 2**63 - 1


def spans(reads: list[ReadResult]) -> list[tuple[int, int, str]]:
    """Return each read's time span (first start, last end, ns) and its path, in start order;
    reads without a timed event are left out."""
    out = []
    for r in reads:
        if not r.read or not len(r.events):
            continue
        start, end = r.events["start_ns"].min(), r.events["end_ns"].max()
        if isinstance(start, int) and isinstance(end, int) and end - start > FAR_APART_NS:
            start, end = _bulk_span(r.events, start, end)
        if isinstance(start, int) and isinstance(end, int):
            out.append((start, max(start, end), str(r.source.path)))
    return sorted(out)


def _bulk_span(events: pl.DataFrame, start: int, end: int) -> tuple[Any, Any]:
    """Return the span of ``events`` without their own outliers (so that one stray event at
    ts 0 does not make a file overlap every other); ``start``, ``end`` when there are none."""
    timed = events.select("start_ns", "end_ns").drop_nulls()
    far = outliers(timed)
    if far is None or not far.few:
        return start, end
    kept = timed.filter(~far.mask)
    return kept["start_ns"].min(), kept["end_ns"].max()


def groups(reads: list[ReadResult]) -> tuple[list[list[str]], int]:
    """Return the reads' files grouped by time (a group: spans that overlap or lie within
    ``FAR_APART_NS`` of each other), and the widest space between two groups, ns."""
    found: list[list[str]] = []
    widest, reach = 0, None
    for start, end, path in spans(reads):
        if reach is None or start - reach > FAR_APART_NS:
            widest = widest if reach is None else max(widest, start - reach)
            found.append([])
        found[-1].append(path)
        reach = end if reach is None else max(reach, end)
    return found, widest


@dataclass(frozen=True)
class Far:
    """The events far outside a run's bulk: which rows (``mask``), how many, how far the
    farthest lies (ns) and on which side, and the bulk's count and span (ns)."""

    mask: pl.Series
    count: int
    farthest_ns: int
    before: bool
    bulk: int
    bulk_ns: int
    few: bool = True  # few enough to exclude; else only said, when more than a day away


def outliers(events: pl.DataFrame) -> Far | None:
    """Return the events of ``events`` (start_ns and end_ns, no nulls) that lie far outside the
    bulk of them, and whether they are few enough to exclude (the rule in this module's
    docstring); None when there are none."""
    n = events.height
    if n < 2 or _span(events) <= FAR_APART_NS:  # the common case: no sort at all
        return None
    start, end = pl.col("start_ns").cast(pl.Float64), pl.col("end_ns").cast(pl.Float64)
    rows = (
        events.select(start, end)
        .with_row_index("_row")
        .sort("start_ns")
        .with_columns(opens=(start - end.cum_max().shift(1) > FAR_APART_NS).fill_null(False))
        .with_columns(_group=pl.col("opens").cum_sum())
    )
    groups = rows.group_by("_group").agg(
        n=pl.len(), start=pl.col("start_ns").min(), end=pl.col("end_ns").max()
    )
    bulk = groups.row(int(groups["n"].arg_max() or 0), named=True)
    bulk_ns = int(bulk["end"] - bulk["start"])
    away = pl.max_horizontal(bulk["start"] - pl.col("end"), pl.col("start") - bulk["end"])
    far = groups.with_columns(away=away).filter(pl.col("away") > max(FAR_APART_NS, bulk_ns))
    count = int(far["n"].sum())
    if not count:
        return None
    few = 100 * count <= FEW_PCT * n or (count == 1 and n > FEW_BESIDE)
    farthest = far.row(int(far["away"].arg_max() or 0), named=True)
    mask = rows.sort("_row")["_group"].is_in(far["_group"].implode())
    return Far(
        mask,
        count,
        int(farthest["away"]),
        farthest["end"] < bulk["start"],
        n - count,
        bulk_ns,
        few,
    )


def stretched(events: pl.DataFrame) -> pl.Series | None:
    """Return the mask of the events of ``events`` whose end lies far after every other
    event's end, or whose start far before every other's start: one end (or start) in the
    run, the other years away, so a wrong duration. Grouping by time cannot see them, since
    such an event covers the whole run. Far is as for ``outliers`` (more than
    ``FAR_APART_NS`` and the span of the rest); they are few by its rule too; None if none."""
    n = events.height
    few = max(1, n * FEW_PCT // 100) if n > FEW_BESIDE else 0
    if not few or _span(events) <= FAR_APART_NS:
        return None
    found = []
    for col, sign in (("end_ns", -1), ("start_ns", 1)):  # latest ends, earliest starts first
        points = events[col].cast(pl.Float64) * sign
        top = points.bottom_k(few + 1).sort().to_list()  # the candidates, then the nearest other
        rest = events["end_ns"].max() if sign > 0 else events["start_ns"].min()  # far side
        k = next(
            (
                i + 1
                for i in range(len(top) - 2, -1, -1)
                if top[i + 1] - top[i] > max(FAR_APART_NS, abs(sign * top[i + 1] - rest))
            ),
            0,
        )
        if k:  # and its other end within the rest's span: else it is apart (``outliers``)
            other = events["start_ns" if sign < 0 else "end_ns"].cast(pl.Float64) * sign
            found.append((points <= top[k - 1]) & (other >= top[k]))
    if not found:
        return None
    mask = found[0] if len(found) == 1 else found[0] | found[1]
    return mask if 0 < int(mask.sum()) <= few else None


def exclude_far(root: object, events: pl.DataFrame) -> tuple[pl.DataFrame, int, list[str]]:
    """Return ``events`` without those far outside the run's bulk or with a duration far past
    it (``stretched``), how many were excluded, and the warnings that say how many and how
    far."""
    long = stretched(events.select("start_ns", "end_ns"))
    said = []
    if long is not None:
        kinds = events.filter(long)["lane_kind"].cast(pl.String).value_counts(sort=True)
        count = int(long.sum())
        what = ", ".join(f"{k} {c}" for k, c in kinds.iter_rows())
        longest = int(cast(Any, events.filter(long)["duration_ns"].max() or 0))
        said.append(
            f"{root}: {count} event{'s' if count > 1 else ''} ({what}) "
            f"{'last' if count > 1 else 'lasts'} up to {far_words(longest)}, far past the run's "
            f"other {events.height - count} events: a wrong duration: excluded, and counted as "
            f"dropped ({FAR_REASON})"
        )
        events = events.filter(~long)
    events, far_count, far_said = _exclude_apart(root, events)
    return events, far_count + (int(long.sum()) if long is not None else 0), said + far_said


def _exclude_apart(root: object, events: pl.DataFrame) -> tuple[pl.DataFrame, int, list[str]]:
    """``exclude_far``'s part for events far from the run's bulk (``outliers``)."""
    far = outliers(events.select("start_ns", "end_ns"))
    if far is None:
        return events, 0, []
    if not far.few:  # real work two minutes later, or events on another clock: kept
        return events, 0, _apart_warning(root, events, far)
    kinds = events.filter(far.mask)["lane_kind"].cast(pl.String).value_counts(sort=True)
    if far.count == 1:
        what = f"1 event ({kinds.item(0, 0)}) lies"
    else:
        what = (
            f"{far.count} events ({', '.join(f'{k} {c}' for k, c in kinds.iter_rows())}) lie up to"
        )
    side = "before" if far.before else "after"
    return (
        events.filter(~far.mask),
        far.count,
        [
            f"{root}: {what} {far_words(far.farthest_ns)} {side} the span of the run's other "
            f"{far.bulk} events ({far_words(far.bulk_ns)}), on another clock or with a wrong "
            f"time: excluded, and counted as dropped ({FAR_REASON})"
        ],
    )


def _apart_warning(root: object, events: pl.DataFrame, far: Far) -> list[str]:
    """The warning for many events more than ``CLOCK_APART_NS`` from the run's bulk: too many
    to exclude, too far apart to be one run's work (a lane on another clock); none nearer."""
    if far.farthest_ns <= CLOCK_APART_NS:
        return []
    lanes = events.filter(far.mask)["lane"].cast(pl.String).value_counts(sort=True)
    named = ", ".join(lanes["lane"].head(3).to_list())
    more = f" and {lanes.height - 3} more" if lanes.height > 3 else ""
    side = "before" if far.before else "after"
    return [
        f"{root}: {far.count} events (on {named}{more}) lie up to {far_words(far.farthest_ns)} "
        f"{side} the span of the run's other {far.bulk} events ({far_words(far.bulk_ns)}): on "
        "another clock, most likely; too many to exclude, so the window spans both"
    ]


def refuse_past_int64(root: object, events: pl.DataFrame) -> None:
    """Raise an InputError when a sum of ``events``' durations, or of gaps over their
    hardware lanes, could pass int64 ns: their durations plus the run's span per hardware
    lane (a lane's gaps add up to less than the span)."""
    if events.is_empty():
        return
    span = _span(events)
    if 2 * events.height * span <= I64_MAX:  # no event lasts past the span, nor lanes outnumber
        return  # events (ends precede no start here: check_events): the sums below fit
    wide = pl.Int128
    total = events.select(
        (pl.col("end_ns").cast(wide) - pl.col("start_ns").cast(wide)).sum()
    ).item()
    lanes = events.select(pl.col("lane").filter(pl.col("lane_kind") == "hardware").n_unique())
    if int(total) + lanes.item() * span <= I64_MAX:
        return
    raise InputError(
        str(root),
        f"its events last {far_words(int(total))} in all, over {lanes} hardware lanes and "
        f"{far_words(span)}: sums of that pass what 64-bit ns can hold (292 years), and no "
        "profile is that long, so its times are wrong",
    )


def _span(events: pl.DataFrame) -> int:
    """Return the time from the first start to the last end of ``events``, ns (0 if none)."""
    first, last = events["start_ns"].min(), events["end_ns"].max()
    return int(last) - int(first) if isinstance(first, int) and isinstance(last, int) else 0


def far_words(ns: int) -> str:
    """Return a time apart for people: years, days, hours or minutes with one decimal, or a
    shorter duration as every output writes one (numbers.duration)."""
    s = ns / 1e9
    for unit, size in (
        ("years", 365.25 * 86400),
        ("days", 86400),
        ("hours", 3600),
        ("minutes", 60),
    ):
        if s >= size:
            return f"{s / size:.1f} {unit}"
    return duration(ns)
