"""Durations with units (``5us``, ``1.2ms``, ``300ns``; ``0`` alone) and ``--fail-on``
expressions (``gap_max_us>100``: the metric's unit is in its name, the number has none), and
``judge``, the one judge of the gates of every command that gates (``gaps``, ``diff`` and
``baseline compare``, ``engines --base``; docs/gaps.md, "Gates for CI").

The rule of ``judge``: **a gate that compared nothing never passes.** A condition whose metric
is undefined compared nothing. When every condition of a gate compared nothing, the gate is
refused (``EmptyGate``: exit 2 in the CLI, one line naming what was gated and why nothing was
compared) unless the caller allows it (``--allow-empty-gate``): then it passes, and says so.
When only some conditions compared nothing, those fail (exit 1), each saying why, and the
others are judged on their values."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trace_analyzer.errors import EmptyGate, UsageError


def glob_regex(pattern: str) -> str:
    """Return the anchored regex of a shell-style glob (``*`` and ``?``) for polars matching."""
    return "^" + re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".") + "$"


NS_PER = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
DURATION = re.compile(r"^\s*(-?\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s)\s*$")
ZERO = re.compile(r"^\s*[+-]?(0+(\.0*)?|\.0+)\s*$")
BARE = re.compile(r"^\s*(-?\d+(?:\.\d*)?|\.\d+)\s*$")


MAX_DURATION_NS = 1_000_000 * 1_000_000_000  # 11.6 days: far past any profile, far from int64


def parse_duration(text: str) -> int:
    """Return a duration with a unit (``5us``, ``1.2ms``, ``300ns``, ``2s``) as integer ns;
    ``0`` needs no unit; any other bare number is an error (which unit?)."""
    if ZERO.match(text):
        return 0
    m = DURATION.match(text)
    if m:
        ns = round(float(m[1]) * NS_PER[m[2]])
        if abs(ns) > MAX_DURATION_NS:
            raise UsageError(f"{text!r} is longer than any trace: at most 1000000s (11.6 days)")
        return ns
    if BARE.match(text):
        n = text.strip()
        raise UsageError(
            f"{text!r} has no unit: give one of ns, us (or µs), ms, s, e.g. {n}us or {n}ms "
            "(0 alone needs none)"
        )
    raise UsageError(
        f"{text!r} is not a duration: give a number and a unit, e.g. 5us, 1.2ms, 300ns"
    )


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

    ``hint`` replaces the list of known names in the error (when it is long). A number with a
    unit is refused, saying the metric's unit (it is in the metric's name)."""
    m = CONDITION.match(text)
    if not m:
        raise UsageError(_condition_problem(text))
    if m[1] not in known:
        raise UsageError(
            f"--fail-on {text!r}: unknown metric {m[1]!r}; known: "
            + (hint or ", ".join(sorted(known)))
        )
    return Condition(text=text.strip(), metric=m[1], op=m[2], value=float(m[3]))


UNITS = {"_ns": "ns", "_us": "µs", "_ms": "ms", "_pct": "%"}  # a metric's unit: its name's end
WITH_UNIT = re.compile(
    r"^\s*([a-z_][a-z0-9_]*)\s*(>=|<=|==|!=|>|<)\s*(-?\d+(?:\.\d*)?)\s*(ns|us|µs|ms|s|%)\s*$"
)


def _condition_problem(text: str) -> str:
    """Return why ``text`` is not a condition: a number with a unit (the metric's unit is in
    its name: write the number in it), or not ``METRIC OP NUMBER`` at all."""
    m = WITH_UNIT.match(text)
    if not m:
        return f"--fail-on {text!r}: expected METRIC OP NUMBER, e.g. 'idle_pct>20'"
    metric, op, number, unit = m[1], m[2], m[3], {"us": "µs"}.get(m[4], m[4])
    mine = _unit_of(metric)
    if mine is None:
        return f"--fail-on {text!r}: {metric} is a plain number: write '{metric}{op}{number}'"
    if mine in NS_PER and unit in NS_PER:  # 1ms for a metric in µs: 1000
        number = f"{float(number) * NS_PER[unit] / NS_PER[mine]:.12g}"
    return (
        f"--fail-on {text!r}: the metric's unit is in its name ({metric} is in {mine}): "
        f"write '{metric}{op}{number}'"
    )


def _unit_of(metric: str) -> str | None:
    """Return the unit a metric's name ends in (``gap_max_us``: µs; a diff's ``_pct_delta``:
    %; its ``_delta``, ``_base`` and ``_head`` keep the metric's); None for a count."""
    if metric.endswith("_pct_delta"):
        return "%"
    for suffix in ("_delta", "_base", "_head"):
        metric = metric.removesuffix(suffix)
    return next((u for end, u in UNITS.items() if metric.endswith(end)), None)


def failed(
    conditions: list[Condition],
    metrics: Mapping[str, Any],
    undefined: Mapping[str, str] | None = None,
) -> list[str]:
    """Return a line for each condition that holds (a failed gate), with the measured value,
    and for each whose metric is undefined (None or absent in ``metrics``): a gate that
    cannot be measured fails rather than passes, its line saying why (``undefined``: metric
    -> reason, e.g. ``no hardware executions``)."""
    out = []
    for c in conditions:
        value = metrics.get(c.metric)
        if value is None:
            why = (undefined or {}).get(c.metric)
            out.append(
                f"--fail-on '{c.text}' failed: {c.metric} is undefined"
                + (f" ({why})" if why else "")
            )
        elif c.holds(metrics):
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


ALLOW = "--allow-empty-gate"
EMPTY = "the gate compared nothing"  # how a note of an allowed empty gate begins


@dataclass(frozen=True)
class Judged:
    """A gate judged: ``failed``, a line per condition that held or could not be measured;
    ``notes``, what the report should say about the gate (that it compared nothing, allowed)."""

    failed: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _why(c: Condition, undefined: Mapping[str, str]) -> str:
    why = undefined.get(c.metric)
    return f"{c.metric} is undefined" + (f" ({why})" if why else "")


def judge(
    conditions: list[Condition],
    metrics: Mapping[str, Any],
    undefined: Mapping[str, str] | None = None,
    *,
    where: str,
    allow_empty: bool = False,
) -> Judged:
    """Return ``conditions`` judged on ``metrics`` (``undefined``: metric -> why it has no
    value). ``where``: what was gated, for the messages (``run/``, ``base/ → head/``). When
    every condition's metric is undefined, raise ``EmptyGate`` saying so, or with
    ``allow_empty`` pass with a note."""
    why = dict(undefined or {})
    empty = [c for c in conditions if metrics.get(c.metric) is None]
    if conditions and len(empty) == len(conditions):
        reasons = "; ".join(f"'{c.text}': {_why(c, why)}" for c in empty)
        if not allow_empty:
            raise EmptyGate(
                f"{where}: {EMPTY} ({reasons}); a gate that compared nothing "
                f"never passes ({ALLOW} to let it)"
            )
        return Judged(notes=(f"{EMPTY} ({reasons}): passed, as {ALLOW} asks",))
    return Judged(failed=tuple(failed(conditions, metrics, why)))
