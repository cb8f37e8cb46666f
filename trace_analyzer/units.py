"""Durations with units (``5us``, ``1.2ms``, ``300ns``) and ``--fail-on`` expressions."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trace_analyzer.errors import UsageError


def glob_regex(pattern: str) -> str:
    """Return the anchored regex of a shell-style glob (``*`` and ``?``) for polars matching."""
    return "^" + re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".") + "$"


NS_PER = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
DURATION = re.compile(r"^\s*(-?\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s)\s*$")


def parse_duration(text: str) -> int:
    """Return a duration with a unit as integer ns; a bare number is an error (which unit?)."""
    m = DURATION.match(text)
    if not m:
        raise UsageError(
            f"{text!r} is not a duration: give a number and a unit, e.g. 5us, 1.2ms, 300ns"
        )
    return round(float(m[1]) * NS_PER[m[2]])


OPERATORS: dict[str, Callable[[Any, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
CONDITION = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(>=|<=|==|!=|>|<)\s*(-?\d+(?:\.\d*)?)\s*$")


@dataclass(frozen=True)
class Condition:
    """One ``--fail-on`` condition: ``metric op number``, e.g. ``idle_pct>20``."""

    text: str
    metric: str
    op: str
    value: float

    def holds(self, metrics: Mapping[str, Any]) -> bool:
        """True when the measured ``metrics[metric]`` meets the condition."""
        return OPERATORS[self.op](metrics[self.metric], self.value)


def parse_condition(text: str, known: Mapping[str, object], hint: str | None = None) -> Condition:
    """Return the parsed condition; its metric must be one of ``known`` (name -> meaning).

    ``hint`` replaces the list of known names in the error (when it is long)."""
    m = CONDITION.match(text)
    if not m:
        raise UsageError(f"--fail-on {text!r}: expected METRIC OP NUMBER, e.g. 'idle_pct>20'")
    if m[1] not in known:
        raise UsageError(
            f"--fail-on {text!r}: unknown metric {m[1]!r}; known: "
            + (hint or ", ".join(sorted(known)))
        )
    return Condition(text=text.strip(), metric=m[1], op=m[2], value=float(m[3]))


def failed(conditions: list[Condition], metrics: Mapping[str, Any]) -> list[str]:
    """Return a line for each condition that holds (a failed gate), with the measured value."""
    out = []
    for c in conditions:
        value = metrics.get(c.metric)
        if value is not None and c.holds(metrics):
            out.append(f"--fail-on '{c.text}' failed: {c.metric} = {value}")
    return out


SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_size(text: str) -> int:
    """Return a byte count from ``8G``, ``512MiB``, ``1000000``; UsageError otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m[2].lower() if m else None
    if m is None or unit not in SIZE_UNITS or float(m[1]) <= 0:
        raise UsageError(f"not a size: {text!r} (use e.g. 8G, 512MiB, 1000000)")
    return int(float(m[1]) * SIZE_UNITS[unit])
