"""The events table is sorted column by column (core/schema.numbered), to hold one table and
a column at the peak rather than two tables: it must sort as DataFrame.sort does."""

from __future__ import annotations

import random

import polars as pl

from trace_analyzer.model.schema import numbered


def test_numbered_sorts_as_a_sort_by_start_then_end_and_numbers_in_that_order():
    rng = random.Random(7)
    n = 5_000
    start = [rng.randrange(0, 1_000) for _ in range(n)]  # many ties, broken by the end
    table = pl.DataFrame(
        {
            "event_id": [-1] * n,
            "name": [f"op{rng.randrange(50)}" for _ in range(n)],
            "start_ns": start,
            "end_ns": [s + rng.randrange(0, 100) for s in start],
            "flow_ids": [[i] if i % 3 else None for i in range(n)],
            "row": list(range(n)),  # which input row each output row is
            "core": pl.Series([None] * n, dtype=pl.Int64),  # a column no event fills
        }
    )
    held = [table]
    out = numbered(held)
    assert held == []  # taken out: nothing else need hold the table while it is rebuilt
    pairs = list(zip(out["start_ns"], out["end_ns"], strict=True))
    assert pairs == sorted(pairs)
    assert out["event_id"].to_list() == list(range(n))
    # every row kept whole: each output row is one input row, every column moved together
    assert out.drop("event_id").sort("row").equals(table.drop("event_id"))


def test_numbered_of_an_empty_table_is_empty_with_its_columns():
    table = pl.DataFrame(schema={"event_id": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64})
    out = numbered([table])
    assert out.height == 0 and out.columns == table.columns


def test_a_column_no_event_fills_stays_all_null_with_its_type():
    table = pl.DataFrame(
        {
            "event_id": [None, None, None],
            "start_ns": [30, 10, 20],
            "end_ns": [31, 11, 21],
            "args_json": pl.Series([None] * 3, dtype=pl.String),
        }
    )
    out = numbered([table])
    assert out.columns == table.columns
    assert out.schema["args_json"] == pl.String and out["args_json"].null_count() == 3
    assert out["start_ns"].to_list() == [10, 20, 30] and out["event_id"].to_list() == [0, 1, 2]


def test_events_of_equal_times_keep_the_order_they_were_read_in():
    """A stable sort: events of equal start and end are numbered in the order of the rows
    given (a run's files in order, each file's events as read), which is what lets a
    multi-rank run's event ids be made a file at a time (gaps --jobs: per_rank.Renumber).
    200,000 rows in 4,000 runs of ties, given in descending start: an unstable sort
    scrambles them."""
    n = 200_000
    table = pl.DataFrame(
        {
            "event_id": [-1] * n,
            "start_ns": [(n - i) // 50 for i in range(n)],
            "end_ns": [1] * n,
            "row": list(range(n)),
        }
    )
    out = numbered([table])
    ties = out.filter(pl.col("start_ns").diff() == 0)
    assert ties.height == n - 4_001
    assert (
        out.select((pl.col("row").diff() > 0) | (pl.col("start_ns").diff() != 0)).to_series().all()
    )
