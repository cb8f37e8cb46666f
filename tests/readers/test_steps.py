"""assign_steps looks steps up by binary search on (process, start) packed into one integer;
where they do not pack, by join_asof (_steps_by_join). Both must give every row the same
step: nulls (start, end, host, pid), a null host beside the host "", equal starts, names
past int64, and starts or pids far apart enough to fall back."""

from __future__ import annotations

import random

import polars as pl
import pytest

from trace_analyzer.model.schema import conform
from trace_analyzer.readers.common import _steps_by_join, assign_steps

NAMES = ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#99999999999999999999",
         "op", "x#4", "ProfilerStep#7 [trace.json]"]
SCHEMA = {"name": pl.String, "source": pl.String, "host": pl.String, "pid": pl.Int64,
          "start_ns": pl.Int64, "end_ns": pl.Int64}


def events(rng: random.Random, far: bool) -> pl.DataFrame:
    def pick(values, null_share=0.0):
        return None if rng.random() < null_share else rng.choice(values)

    rows = []
    for _ in range(rng.randint(1, 60)):
        start = pick([0, 5, 10, 10, 20, 35, 50] + ([2**62, -(2**62)] if far else []), 0.1)
        end = None if start is None or rng.random() < 0.05 else start + rng.choice([0, 3, 10, 30])
        rows.append(dict(name=pick(NAMES, 0.05), source=pick(["framework", "neuron_hw", "cuda"], 0.05),
                         host=pick(["a", "b", ""], 0.2), pid=pick([1, 2, 7] + ([2**62] if far else []), 0.1),
                         start_ns=start, end_ns=end))
    return conform(pl.DataFrame(rows, schema=SCHEMA))


@pytest.mark.parametrize("by_process", [False, True])
def test_the_search_gives_the_steps_the_join_gives(by_process):
    rng = random.Random(7)
    for case in range(300):
        df = events(rng, far=case % 10 == 0)
        is_step = df.select(pl.col("name").cast(pl.String).str.contains(r"^ProfilerStep#\d+$")
                            .fill_null(False) & (pl.col("source") == "framework")).to_series()
        got = assign_steps(df, by_process=by_process)["step"]
        if is_step.any():
            expect = _steps_by_join(df, is_step, by_process)["step"]
        else:
            expect = df["step"]
        assert got.equals(expect, null_equal=True), (case, df)
