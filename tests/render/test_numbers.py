"""One formatter per kind of number for every text report (trace_analyzer/numbers.py,
docs/output.md)."""

from __future__ import annotations

import pytest

from trace_analyzer.numbers import (
    DASH,
    change,
    count,
    duration,
    from_us,
    instant,
    number,
    percent,
    signed_percent,
)


@pytest.mark.parametrize("ns,text", [
    (0, "0 ns"), (38, "38 ns"), (999, "999 ns"), (1_000, "1 µs"), (172_100, "172.1 µs"),
    (41_375, "41.38 µs"), (7_315_000, "7.32 ms"), (5_634_009_100, "5.63 s"),
    (999_960, "1 ms"),  # rounds up to the next unit, never "1000 µs"
    (999_999_999, "1 s"), (3_600_000_000_000, "3600 s"), (-5_000, "-5 µs"), (None, DASH),
])
def test_durations_are_auto_scaled_with_four_significant_digits(ns, text):
    assert duration(ns) == text


def test_a_duration_in_us_reads_as_one_in_ns():
    assert from_us(7315.0) == duration(7_315_000) == "7.32 ms"
    assert from_us(None) == DASH


@pytest.mark.parametrize("ns,origin,text", [
    (1_809_000, 0, "1.809 ms"), (5_634_009_100, 0, "5.634 s"), (388_200, 0, "388.2 µs"),
    (100, 100, "0 ns"), (None, 0, DASH), (5, None, DASH),
])
def test_instants_are_the_time_after_an_origin(ns, origin, text):
    assert instant(ns, origin) == text


@pytest.mark.parametrize("fn,value,text", [
    (percent, 11.92, "11.92 %"), (percent, 100.0, "100 %"), (percent, 0.0, "0 %"),
    (percent, 49.456, "49.46 %"), (percent, None, DASH),
    (count, 9266, "9,266"), (count, 0, "0"), (count, None, DASH),
    (number, 1.0, "1"), (number, 1.3333, "1.333"), (number, 12345, "12,345"),
    (number, None, DASH), (number, True, "true"),
    (change, 1_200_000, "+1.2 ms"), (change, -38, "-38 ns"), (change, 0, "0 ns"),
    (change, None, DASH),
    (signed_percent, 1.5, "+1.5 %"), (signed_percent, -0.25, "-0.25 %"),
    (signed_percent, None, DASH),
])
def test_percentages_counts_and_changes(fn, value, text):
    assert fn(value) == text


@pytest.mark.parametrize("ns,text", [
    (0, "0 ns"), (850, "850 ns"), (1_000, "1 µs"), (17_000, "17 µs"), (126_000, "126 µs"),
    (999_960, "1 ms"), (1_730_000, "1.73 ms"), (5_634_009_100, "5.63 s"), (-2_500, "-2.5 µs"),
])
def test_the_evidence_sentences_write_durations_as_the_tables_do(ns, text):
    """duration_expr (the evidence of every gap, vectorised) writes what duration writes:
    the worked values, then 5,000 random ones (ties in the last digit may round the other way:
    those end in 5 in the digit after the last shown, and are left out)."""
    import random

    import polars as pl

    from trace_analyzer.numbers import duration_expr

    def expr(values):
        frame = pl.DataFrame({"ns": values}, schema={"ns": pl.Int64})
        return frame.select(duration_expr(pl.col("ns"))).to_series().to_list()

    assert expr([ns]) == [text] == [duration(ns)]
    rng = random.Random(7)
    values = [rng.randint(0, 10 ** rng.randint(1, 13)) for _ in range(5000)]
    agree = [v for v, got in zip(values, expr(values)) if got == duration(v)]
    ties = [v for v in values if v not in set(agree) and str(v).rstrip("0").endswith("5")]
    assert len(agree) + len(ties) == len(values)


def test_the_evidence_writes_each_duration_the_same_whatever_rows_it_is_given():
    """A text report words the few rows it lists, the JSON every gap (evidence.Worded): each
    duration is written the same alone, among rows of one unit, and among rows of every unit.
    Before, where every row took one unit, polars divided by the unit as a product with its
    reciprocal: 2,035,000 ns was 2.03 ms in a few rows and 2.04 ms (as ``duration``) among
    many."""
    import random

    import polars as pl

    from trace_analyzer.numbers import duration_expr

    def expr(values):
        frame = pl.DataFrame({"ns": values}, schema={"ns": pl.Int64})
        return frame.select(duration_expr(pl.col("ns"))).to_series().to_list()

    ties = [d * 10**k + 5 * 10 ** (k - 1) for d in (1, 2, 12, 203, 999) for k in range(1, 11)]
    rng = random.Random(11)
    values = [*ties, 2_035_000, 63_295_000, *(rng.randint(0, 10**12) for _ in range(300))]
    among_all = expr([1, 999, 1_500_000_000, *values])[3:]
    alone = [expr([v])[0] for v in values]
    assert alone == among_all
    for lo, hi in ((1_000, 999_950), (999_950, 999_950_000), (999_950_000, 10**13)):
        one_unit = [v for v in values if lo <= v < hi]
        assert expr(one_unit) == [t for v, t in zip(values, alone) if lo <= v < hi]
    for v in values[:60]:  # a few rows alike (the longest gaps a report lists)
        assert expr([v - 3, v]) == [expr([v - 3])[0], expr([v])[0]], v
        assert expr([v] * 7) == [expr([v])[0]] * 7, v
    assert expr([2_034_997, 2_035_000]) == ["2.03 ms", "2.04 ms"]
    assert expr([2_035_000]) == ["2.04 ms"] == [duration(2_035_000)]
