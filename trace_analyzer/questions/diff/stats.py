"""The statistics and the verdict of ``traceana diff``: runs as samples, Welch's t-test.

Every compared metric has a value per run; a side is summarised by the mean, the sample
standard deviation (n − 1) and n. With two runs or more on both sides, a change is
significant when Welch's |t| reaches the two-sided 95 % critical value of Student's t for
the Welch–Satterthwaite degrees of freedom (``T975``: the published table, df 1..30, 40,
60, 120 and ∞; a fractional df takes the next lower tabulated df, which makes the test
slightly conservative). No scipy: the table is all it needs.

The verdict weighs three signals, each up, down, flat, noise (not significant) or missing:
the time (the window, ProfilerStep#N with ``--step``, or the mean step time), device time
and idle % (``decide``; docs/diff.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trace_analyzer.numbers import from_us, percent
from trace_analyzer.questions.diff.sides import COMPARED, Side

# Two-sided 95 % (the 97.5 % quantile) of Student's t by degrees of freedom; ∞: 1.96.
T975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
    9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
    17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064,
    25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000,
    120: 1.980,
}  # fmt: skip
T975_INFINITE = 1.960
# A change smaller than these is "no change" in the verdict: idle in pp, times in %.
IDLE_PP, DEVICE_PCT, TIME_PCT = 1.0, 1.0, 1.0
VERDICTS = ("better", "worse", "mixed", "unchanged", "inconclusive")


def t_critical(df: float) -> float:
    """Return the two-sided 95 % critical value of Student's t for ``df`` degrees of freedom:
    the table's value at the largest tabulated df not above ``df`` (``df`` infinite: 1.96);
    ``df`` below 1 counts as 1."""
    if math.isinf(df):
        return T975_INFINITE
    return T975[max((k for k in T975 if k <= df), default=1)]


@dataclass(frozen=True)
class Spread:
    """One side's values of one metric: n, mean and the sample standard deviation (None
    with fewer than two values)."""

    n: int
    mean: float | None
    sd: float | None


def spread(values: Sequence[float | None]) -> Spread:
    """Return the n, mean and sample standard deviation of the values that are not None."""
    xs = [float(v) for v in values if v is not None]
    n = len(xs)
    if n == 0:
        return Spread(0, None, None)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else None
    return Spread(n, mean, sd)


@dataclass(frozen=True)
class Welch:
    """Welch's t-test of head against base: ``t`` (None when both spreads are 0), ``df`` the
    Welch–Satterthwaite degrees of freedom, ``critical`` the 95 % two-sided value for it,
    ``significant`` whether |t| ≥ critical (two identical constant samples: False; two
    different constant samples: True, t infinite, shown as None)."""

    t: float | None
    df: float | None
    critical: float | None
    significant: bool


def welch(base: Spread, head: Spread) -> Welch | None:
    """Return Welch's t-test of ``head`` against ``base``; None unless both have two values
    or more (no noise estimate)."""
    if base.n < 2 or head.n < 2 or base.sd is None or head.sd is None:
        return None
    assert base.mean is not None and head.mean is not None
    vb, vh = base.sd**2 / base.n, head.sd**2 / head.n
    delta = head.mean - base.mean
    if vb + vh == 0:
        return Welch(None, None, None, significant=delta != 0)
    t = delta / math.sqrt(vb + vh)
    df = (vb + vh) ** 2 / (vb**2 / (base.n - 1) + vh**2 / (head.n - 1))
    critical = t_critical(df)
    return Welch(round(t, 3), round(df, 2), critical, significant=abs(t) >= critical)


def change(base: float | None, head: float | None) -> tuple[float | None, float | None]:
    """Return (head − base, relative change in %); None where it cannot be computed (the
    relative change from 0 to anything but 0)."""
    if base is None or head is None:
        return None, None
    delta = round(head - base, 3)
    if not base:
        return delta, (0.0 if delta == 0 else None)
    return delta, round(100 * delta / base, 2)


def _mean(values: list[float | None]) -> float | None:
    """One run: its value as it is; several: the mean of those defined (3 decimals)."""
    defined = [v for v in values if v is not None]
    if len(defined) == 1:
        return defined[0]
    mean = spread(defined).mean
    return None if mean is None else round(mean, 3)


def metric_rows(base: Side, head: Side) -> list[dict[str, Any]]:
    """Return one row per compared metric: its name, what it is, the mean of each side,
    the change of the means, each side's n and sample sd, and Welch's test (t, df, its
    critical value, significant; None without two runs on both sides)."""
    rows = []
    for name, what in COMPARED.items():
        vb = [s.metrics.get(name) for s in base.samples]
        vh = [s.metrics.get(name) for s in head.samples]
        sb, sh = spread(vb), spread(vh)
        mb, mh = _mean(vb), _mean(vh)
        delta, pct = change(mb, mh)
        test = welch(sb, sh)
        rows.append(
            {
                "metric": name,
                "what": what,
                "base": mb,
                "head": mh,
                "delta": delta,
                "pct_delta": pct,
                "base_runs": sb.n,
                "head_runs": sh.n,
                "base_sd": None if sb.sd is None else round(sb.sd, 3),
                "head_sd": None if sh.sd is None else round(sh.sd, 3),
                "t": test.t if test else None,
                "df": test.df if test else None,
                "t_critical": test.critical if test else None,
                "significant": test.significant if test else None,
            }
        )
    return rows


def _state(row: dict[str, Any], key: str, threshold: float, tested: bool) -> str:
    """How one signal moved: up, down, flat, noise (not significant) or missing."""
    value = row[key]
    if value is None:
        return "missing"
    if tested and row["significant"] is not None and not row["significant"]:
        constant = row["delta"] == 0 and not row["base_sd"] and not row["head_sd"]
        return "flat" if constant else "noise"
    return "up" if value > threshold else "down" if value < -threshold else "flat"


def signals(
    m: dict[str, dict[str, Any]],
    time_metric: str,
    time_label: str,
    tested: bool,
    *,
    host: bool = False,
) -> list[dict[str, Any]]:
    """Return the three signals the verdict weighs: the time (window or step), device time
    and idle %, each with its means, its change (% or pp) and how it moved; ``host`` (both
    sides record host activity only): the time and the ops' self CPU time."""
    out = []
    weighed = [(time_metric, time_label, "pct_delta", "%", TIME_PCT)]
    if host:
        weighed.append(("self_cpu_us", "self CPU", "pct_delta", "%", DEVICE_PCT))
    else:
        weighed += [
            ("device_time", "device time", "pct_delta", "%", DEVICE_PCT),
            ("idle_pct", "idle", "delta", "pp", IDLE_PP),
        ]
    for metric, label, key, unit, threshold in weighed:
        row = m[metric]
        state = _state(row, key, threshold, tested)
        out.append(
            {
                "metric": metric,
                "label": label,
                "base": row["base"],
                "head": row["head"],
                "change": row[key],
                "unit": unit,
                "state": state,
                "significant": row["significant"],
            }
        )
    return out


def decide(states: list[str]) -> str:
    """Return the verdict word from the states of (time, device time, idle): the time
    decides when it moved; else device time and idle (both moved opposite ways: mixed);
    else inconclusive when a change was not significant; else unchanged."""
    time, *others = states
    if time in ("up", "down"):
        return "worse" if time == "up" else "better"
    moved = {s for s in others if s in ("up", "down")}
    if len(moved) == 2:
        return "mixed"
    if moved:
        return "worse" if "up" in moved else "better"
    return "inconclusive" if "noise" in states else "unchanged"


def verdict_text(sig: list[dict[str, Any]], word: str) -> str:
    """Return the verdict line: each signal's change and means, then ``: word``."""
    parts = []
    for s in sig:
        if s["change"] is None:
            continue
        if s["unit"] == "pp":
            values = f"{percent(s['base'])} → {percent(s['head'])}"
        else:
            values = f"{from_us(s['base'])} → {from_us(s['head'])}"
        shown = f"{s['label']} {s['change']:+.1f} {s['unit']} ({values})"
        parts.append(shown + (", not significant" if s["state"] == "noise" else ""))
    return ", ".join(parts or ["nothing to compare"]) + f": {word}"


def noise_text(nb: int, nh: int) -> str:
    """Return how changes are judged with ``nb`` runs in base and ``nh`` in head: Welch's
    test with two runs or more on both sides."""
    if nb >= 2 and nh >= 2:
        return (
            f"{nb} runs in base, {nh} in head: a change counts when Welch's t-test finds it "
            "significant (95 %, two-sided)"
        )
    if nb == nh == 1:
        return "one run per side: no noise estimate"
    one, other, n = ("base", "head", nh) if nb == 1 else ("head", "base", nb)
    return f"{one} has one run ({other} {n}): no noise estimate"
