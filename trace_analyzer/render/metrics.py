"""How a diff's key numbers are written, in its text, Markdown and the report's page alike.

A metric's unit is in its name (docs/diff.md): ``*_us`` and ``device_time`` are durations held
in µs, written as every duration is (``numbers.from_us``: ``7.891 s``); ``idle_pct`` a
percentage, its change in percentage points; the rest counts.
"""

from __future__ import annotations

from trace_analyzer.numbers import DASH, from_us


def is_time(metric: str) -> bool:
    """Return whether the diff metric ``metric`` is a duration held in µs."""
    return metric == "device_time" or metric.endswith("_us")


def metric_value(metric: str, v: float | None) -> str:
    """Return a metric's value as people read it: durations auto-scaled, idle % with its sign."""
    if v is None:
        return DASH
    if is_time(metric):
        return from_us(v)
    if metric == "idle_pct":
        return f"{v:g} %"
    return f"{v:,g}" if isinstance(v, float) else f"{v:,}"


def metric_change(metric: str, d: float | None) -> str:
    """Return the change of a metric with its sign: ``+1.2 ms``, ``-11.92 pp``, ``+3``."""
    if d is None:
        return DASH
    sign = "+" if d > 0 else ""
    if is_time(metric):
        return sign + from_us(d) if d else "0"
    return f"{d:+g} pp" if metric == "idle_pct" else f"{d:+g}"


def metric_label(what: str) -> str:
    """Return a metric's ``what`` without the unit its values now carry (``(µs)``)."""
    return what.replace(" (µs)", "").replace(", µs)", ")")
