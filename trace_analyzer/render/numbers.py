"""How every renderer writes numbers for people: durations auto-scaled, missing as a dash.

``duration(ns)`` picks the unit from the size (38 ns, 172.1 µs, 5.63 ms, 5.63 s) with four
significant digits at most; ``DASH`` stands for a value that is missing or undefined (never
``null`` or ``None`` in text).
"""

from __future__ import annotations

DASH = "–"
SCALES = ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"))


def duration(ns: float | None) -> str:
    """Return the duration ``ns`` (nanoseconds) in the largest unit that keeps it ≥ 1, with
    at most four significant digits and two decimals (``5.63 s``, ``172.1 µs``, ``38 ns``); None is a dash."""
    if ns is None:
        return DASH
    size = abs(ns)
    for per, unit in SCALES:
        if size >= per:
            return f"{_digits(ns / per)} {unit}"
    return f"{_digits(ns)} ns"


def _digits(v: float) -> str:
    """Return ``v`` with four significant digits, at most two decimals, no trailing zeros."""
    decimals = min(2, max(0, 4 - len(str(int(abs(v))))))
    text = f"{v:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
