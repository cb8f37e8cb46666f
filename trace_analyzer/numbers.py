"""How every renderer writes numbers for people: durations auto-scaled, missing as a dash.

One formatter per kind of number, used by every text table and line (docs/output.md):

- ``duration(ns)``: the unit from the size (38 ns, 172.1 µs, 5.63 ms, 5.63 s), four
  significant digits at most and two decimals at most; ``from_us`` for a value the JSON
  holds in µs.
- ``instant(ns, origin)``: when something happened, as the time after ``origin`` (the window
  start, the first execution), auto-scaled like a duration with one decimal more (1.809 ms).
- ``percent(v)``: ``11.92 %``, two decimals at most.
- ``count(n)``: an integer with thousands separators (``9,266``); ``plural(n, noun)`` with
  its noun (``9,266 gaps``).
- ``data_size(n)``: a byte count (``512 B``, ``3.33 KiB``, ``1.2 MiB``).
- ``change(ns)`` and ``signed_percent(v)``: a difference with its sign (``+1.2 ms``,
  ``-0.5 %``).
- ``number(v)``: any other number (``1``, ``1.333``, ``9,266``).

``DASH`` stands for a value that is missing or undefined (never ``null`` or ``None`` in text).
"""

from __future__ import annotations

import polars as pl

DASH = "–"
SCALES = ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns"))


def duration(ns: float | None) -> str:
    """Return the duration ``ns`` (nanoseconds) in the largest unit that keeps it ≥ 1, with
    at most four significant digits and two decimals (``5.63 s``, ``172.1 µs``, ``38 ns``);
    None is a dash."""
    return DASH if ns is None else _scaled(ns, 2)


def duration_expr(ns: pl.Expr) -> pl.Expr:
    """Return ``duration`` of a column of ns as a polars expression (the evidence sentences of
    every gap, vectorised): the same units, decimals and rollover; a tie in the last digit may
    round the other way (polars rounds the product with 100, not the binary value), but each
    value is written the same whatever rows it is given (evidence is written for the few
    rows a text report lists, or for every gap)."""
    v = ns.cast(pl.Float64)
    size = v.abs()
    # the unit: the largest that keeps the value ≥ 1, or that it rounds up into (999.96 µs)
    # per: a column, never one value broadcast (where every row takes one unit, as in a few
    # rows, when/then gives the value, and polars divides by one value as a product with its
    # reciprocal: 2035000 / 1e6 = 2.0349999999999997, 2.03 ms where duration() says 2.04 ms)
    per, unit = size * 0.0 + 1.0, pl.lit(" ns")
    for scale, name in reversed(SCALES[:-1]):  # µs, ms, s
        up = size >= scale * ROLLOVER
        per = pl.when(up).then(size * 0.0 + float(scale)).otherwise(per)
        unit = pl.when(up).then(pl.lit(f" {name}")).otherwise(unit)
    scaled = v / per
    rounded = (
        pl.when(scaled.abs() < 100)
        .then(scaled.round(2))
        .when(scaled.abs() < 1000)
        .then(scaled.round(1))
        .otherwise(scaled.round(0))
    )
    text = rounded.cast(pl.String).str.replace(r"\.?0+$", "").str.replace(r"^-0$", "0")
    # "10" must keep its zero: only zeros after a decimal point are trailing
    text = (
        pl.when(rounded.cast(pl.String).str.contains(r"\."))
        .then(text)
        .otherwise(rounded.cast(pl.String))
    )
    return text + unit


# A value this close under 1000 of a unit rounds up to 1000 (one decimal): the next unit.
ROLLOVER = 0.99995


def from_us(us: float | None) -> str:
    """Return a duration the JSON holds in µs (``hw_duration_us``) as ``duration`` writes it."""
    return DASH if us is None else duration(us * 1000)


def instant(ns: int | None, origin: int | None) -> str:
    """Return the time ``ns`` as the time after ``origin`` (both ns on one clock), auto-scaled
    with four significant digits and up to three decimals (``1.809 ms``); a dash when
    either is missing."""
    if ns is None or origin is None:
        return DASH
    return _scaled(ns - origin, 3)


def percent(v: float | None) -> str:
    """Return the percentage ``v`` (already ×100) with at most two decimals: ``11.92 %``."""
    return DASH if v is None else f"{_fixed(v, 2)} %"


def count(n: int | None) -> str:
    """Return an integer count with thousands separators: ``9,266``."""
    return DASH if n is None else f"{int(n):,}"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """Return ``1 gap``, ``9,266 gaps``: a count and its noun."""
    return f"{count(n)} {noun if n == 1 else nouns or noun + 's'}"


def data_size(n: float | None) -> str:
    """Return a byte count as people read it: ``512 B``, ``3.33 KiB``, ``1.2 MiB``."""
    if n is None:
        return DASH
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{number(round(n / size, 2))} {unit}"
    return f"{number(round(n, 2))} B"


def number(v: object) -> str:
    """Return any other number: integers as ``count``, floats with at most three decimals
    (``1.333``), None as a dash; anything else as its text."""
    if v is None:
        return DASH
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return count(v)
    if isinstance(v, float):
        return _fixed(v, 3, grouped=True)
    return str(v)


def change(ns: float | None) -> str:
    """Return a change of a duration with its sign: ``+1.2 ms``, ``-38 ns``, ``0 ns``."""
    if ns is None:
        return DASH
    return duration(ns) if ns <= 0 else "+" + duration(ns)


def signed_percent(v: float | None) -> str:
    """Return a change of a percentage with its sign: ``+1.5 %``, ``-0.25 %``."""
    if v is None:
        return DASH
    return percent(v) if v <= 0 else "+" + percent(v)


def _scaled(ns: float, decimals: int) -> str:
    """Return ``ns`` in the largest unit that keeps it ≥ 1 (ns below 1 µs), four significant
    digits, at most ``decimals`` decimals; a value that rounds up to 1000 takes the next unit."""
    size = abs(ns)
    for i, (per, unit) in enumerate(SCALES):
        if size >= per or per == 1:
            text = _digits(ns / per, decimals)
            if i and abs(float(text)) >= 1000:  # 999.96 µs rounds to 1000: 1 ms
                per, unit = SCALES[i - 1]
                text = _digits(ns / per, decimals)
            return f"{text} {unit}"
    raise AssertionError("unreachable: the last scale takes every size")


def _digits(v: float, most: int = 2) -> str:
    """Return ``v`` with four significant digits, at most ``most`` decimals, no trailing
    zeros."""
    decimals = min(most, max(0, 4 - len(str(int(abs(v))))))
    return _strip(f"{v:.{decimals}f}")


def _fixed(v: float, decimals: int, grouped: bool = False) -> str:
    """Return ``v`` with at most ``decimals`` decimals, no trailing zeros."""
    return _strip(f"{v:,.{decimals}f}" if grouped else f"{v:.{decimals}f}")


def _strip(text: str) -> str:
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text
