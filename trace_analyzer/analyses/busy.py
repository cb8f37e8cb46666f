"""Busy and idle time on the hardware lanes: the window, intervals merged per lane and device.

Definitions (docs/gaps.md):
- A hardware lane is one execution resource (a physical NeuronCore, a GPU stream); a device is
  the union of its lanes (a logical NeuronCore, a GPU).
- Busy is the union of the hardware executions in the window, overlaps merged. A gap is the
  time between two consecutive busy intervals. Idle before the first and after the last busy
  interval is leading and trailing idle, reported apart, not gaps. So, per lane or device:
  busy + idle + leading + trailing = window, and idle % = idle / window.
- The active span of a lane or device is its own first execution start to its last execution
  end in the window: busy + idle = active, and active idle % = idle / active.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import polars as pl

from trace_analyzer.errors import UsageError
from trace_analyzer.model.schema import text


@dataclass(frozen=True)
class Window:
    """The time analysed: ``start_ns`` to ``end_ns`` (host clock), and ``origin``, what chose it."""

    start_ns: int
    end_ns: int
    origin: str  # "hardware span", "ProfilerStep#3", "--window"

    @property
    def duration_ns(self) -> int:
        """The window's length, ns."""
        return self.end_ns - self.start_ns


def _ns(value: object) -> int:
    """Return the min or max of a time column over rows that are there, as the int it is
    (polars types such a scalar as any value)."""
    return cast(int, value)


def window_of(
    events: pl.DataFrame, *, step: int | None = None, span: tuple[int, int] | None = None
) -> Window | None:
    """Return the analysis window of ``events``: one ProfilerStep, an offset span, or the
    hardware span.

    ``step``: the window is ProfilerStep#N on the host (UsageError when the profile has
    none); ``states.step_end`` extends it to the end of the work it launched.
    ``span`` is (start, end) in ns after the run's first event. None when nothing ran on
    hardware and no step or span was asked for.
    """
    if step is not None:
        s = events.filter(pl.col("name") == f"ProfilerStep#{step}")
        host = s.filter(pl.col("source") == "framework")  # not a GPU's copy of it
        s = host if host.height else s
        if s.is_empty():
            raise UsageError(
                f"no ProfilerStep#{step} in this profile; {_steps(events)}", param="step"
            )
        return Window(_ns(s["start_ns"].min()), _ns(s["end_ns"].max()), f"ProfilerStep#{step}")
    if span is not None:
        origin = _ns(events["start_ns"].min())
        if span[1] <= span[0]:
            raise UsageError("{param} START:END needs START < END", param="span")
        return Window(origin + span[0], origin + span[1], "--window")
    hw = (  # the span alone, not a copy of every execution's row (0.25 s at 3 million events)
        events.lazy()
        .filter(pl.col("lane_kind") == "hardware")
        .select(n=pl.len(), start=pl.col("start_ns").min(), end=pl.col("end_ns").max())
        .collect()
    )
    if not hw["n"].item():
        return None
    return Window(_ns(hw["start"].item()), _ns(hw["end"].item()), "hardware span")


def _steps(events: pl.DataFrame, most: int = 20) -> str:
    """Return which ProfilerStep annotations ``events`` has, for the error about a missing
    one: ``its steps: 4, 5, 6`` (runs of consecutive numbers as ``4–9``, at most ``most``
    parts), or that it has none."""
    return steps_said(step_numbers(events), most)


def step_numbers(events: pl.DataFrame) -> list[int]:
    """The numbers of the ProfilerStep annotations of ``events``, each once, in order."""
    found = events.select(text("name").str.extract(r"^ProfilerStep#(\d+)$").cast(pl.Int64))
    return found.drop_nulls().unique().sort("name")["name"].to_list()


def steps_said(found: list[int], most: int = 20) -> str:
    """``found`` (step numbers, in order) as the error about a missing step says them."""
    if not found:
        return "it has no ProfilerStep annotations"
    parts: list[str] = []
    start = prev = found[0]
    for n in [*found[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        if n is not None:
            start = prev = n
    shown = ", ".join(parts[:most]) + (", …" if len(parts) > most else "")
    return f"its steps: {shown}"


def device_of(lane: pl.Expr) -> pl.Expr:
    """Return the device label of a lane: its NeuronCore (NC<lnc>) or GPU, without the stream."""
    text = lane.cast(pl.String)
    return text.str.replace(r"/stream:[^/]+$", "").str.replace(r"(/neuron_hw/NC\d+):\d+$", "$1")


def once_each(values: pl.Series, f: Callable[[pl.Expr], pl.Expr]) -> pl.Series:
    """Return ``f`` of a column, ``values``, evaluated once per distinct value and given to
    every row: a lane's device (``device_of``) is two regexes on its name, and the 840,000
    gaps of a 10-million-event export are on eight lanes (a third of a second each time)."""
    distinct = values.unique()
    found = distinct.to_frame().select(f(pl.col(values.name))).to_series()
    if values.is_empty():
        return found  # no rows: the type ``f`` gives
    return values.replace_strict(distinct, found, return_dtype=found.dtype).alias(found.name)


def merge(
    iv: pl.DataFrame, key: str | list[str], tolerance_ns: int = 0, *, presorted: bool = False
) -> pl.DataFrame:
    """Return the union of the intervals ``iv`` (hardware events) per ``key`` column (or
    columns): start, end, first and last event, event count. Intervals apart by at most
    ``tolerance_ns`` (the clock's resolution) are one. ``presorted``: ``iv`` is sorted by the
    key, start and end already (its subsets keep that order), so it is not sorted again."""
    keys = [key] if isinstance(key, str) else key
    iv = iv if presorted else iv.sort(*keys, "start_ns", "end_ns")
    reach = pl.col("end_ns").cum_max().shift(1).over(keys)
    block = (
        (pl.col("start_ns") > reach + tolerance_ns)
        .fill_null(True)
        .cast(pl.Int32)
        .cum_sum()
        .over(keys)
    )
    pid = [] if "pid" in keys else [pl.col("pid").first()]
    return (
        iv.with_columns(block=block)
        .group_by(*keys, "block", maintain_order=True)
        .agg(
            pl.col("start_ns").min(),
            pl.col("end_ns").max(),
            *pid,
            first_event=pl.col("event_id").first(),
            last_event=pl.col("event_id").sort_by("end_ns").last(),
            events=pl.len(),
        )
        .drop("block")
    )


def between(merged: pl.DataFrame, key: str) -> pl.DataFrame:
    """Return the gaps between consecutive busy intervals of each ``key``; ``merged``: the
    intervals (``merge``)."""
    return (
        merged.sort(key, "start_ns")
        .with_columns(
            gap_end=pl.col("start_ns").shift(-1).over(key),
            next_event=pl.col("first_event").shift(-1).over(key),
        )
        .filter(pl.col("gap_end").is_not_null())
        .select(
            key,
            "pid",
            start_ns="end_ns",
            end_ns="gap_end",
            prev_event="last_event",
            next_event="next_event",
        )
        .with_columns(duration_ns=pl.col("end_ns") - pl.col("start_ns"))
    )


def stats(
    merged: pl.DataFrame, gaps: pl.DataFrame, keys: pl.DataFrame, key: str, w: Window
) -> pl.DataFrame:
    """Return per ``key``: busy, idle, leading, trailing, both idle %, executions, gap statistics.

    ``merged``: the busy intervals (``merge``); ``keys``: every key to report (one column,
    ``key``), busy or not; ``w``: the window. ``gaps`` are the gaps that count (at least
    --min-gap long); idle counts all of them.
    """
    busy = merged.group_by(key).agg(
        busy_ns=(pl.col("end_ns") - pl.col("start_ns")).sum(),
        first_ns=pl.col("start_ns").min(),
        last_ns=pl.col("end_ns").max(),
        executions=pl.col("events").sum(),
    )
    g = gaps.group_by(key).agg(
        gap_count=pl.len(),
        gap_p50_ns=pl.col("duration_ns").quantile(0.5, "linear"),
        gap_p90_ns=pl.col("duration_ns").quantile(0.9, "linear"),
        gap_p99_ns=pl.col("duration_ns").quantile(0.99, "linear"),
        gap_max_ns=pl.col("duration_ns").max(),
    )
    out = keys.join(busy, on=key, how="left").join(g, on=key, how="left")
    out = out.with_columns(
        *(pl.col(c).round(0).cast(pl.Int64) for c in ("gap_p50_ns", "gap_p90_ns", "gap_p99_ns")),
    )
    new = ("first_ns", "last_ns", "active_ns", "active_idle_pct")  # after the older columns
    out = _idle(out, w)
    return out.select(pl.exclude(new), *new).sort(key)


def _idle(out: pl.DataFrame, w: Window) -> pl.DataFrame:
    """Return ``out`` (busy, first and last execution per key) with leading, trailing, idle,
    the active span (``active_ns``) and both idle percentages: ``idle_pct`` over the window,
    ``active_idle_pct`` over the key's own active span (None where it has none)."""
    W = w.duration_ns
    out = out.with_columns(
        pl.col("busy_ns", "executions", "gap_count").fill_null(0),
        leading_ns=(pl.col("first_ns") - w.start_ns).fill_null(W),
        trailing_ns=(w.end_ns - pl.col("last_ns")).fill_null(0),
        window_ns=pl.lit(W, pl.Int64),
        active_ns=(pl.col("last_ns") - pl.col("first_ns")).fill_null(0),
    ).with_columns(
        idle_ns=pl.col("window_ns")
        - pl.col("busy_ns")
        - pl.col("leading_ns")
        - pl.col("trailing_ns")
    )
    active, idle = pl.col("active_ns"), pl.col("idle_ns").cast(pl.Float64)
    return out.with_columns(  # shares in floats: 100 × an Int64 of ns overflows past 2.9 years
        idle_pct=(100 * idle / W).round(2) if W else pl.lit(None, pl.Float64),
        active_idle_pct=pl.when(active > 0).then((100 * idle / active).round(2)),
    )
