"""The host split reads the marks of the threads it asks about only (evidence._asked): the
same rows, compared one by one for a few threads or looked up for many, as a plain Python
membership test gives, and no row of a thread with a null in it."""

from __future__ import annotations

import random

import polars as pl
import pytest

from trace_analyzer.questions.gaps.evidence import FEW_KEYS, _asked


def _events(seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    pick = lambda: None if rng.random() < 0.1 else rng.randrange(40)  # noqa: E731
    return pl.DataFrame(
        {"pid": [pick() for _ in range(2000)], "tid": [pick() for _ in range(2000)]},
        schema={"pid": pl.Int64, "tid": pl.Int64},
    )


@pytest.mark.parametrize("count", [0, 1, FEW_KEYS, FEW_KEYS + 1, 200])
def test_the_rows_of_the_asked_threads(count):
    events = _events(count)
    rng = random.Random(count + 1)
    threads = {(rng.randrange(40), rng.randrange(40)) for _ in range(count)}
    asked = pl.DataFrame(
        [list(t) for t in threads] or None,
        schema={"_pid": pl.Int64, "_tid": pl.Int64},
        orient="row",
    )
    got = events.with_row_index("row").filter(_asked(asked))["row"].to_list()
    want = [i for i, (p, t) in enumerate(events.iter_rows()) if (p, t) in threads]
    assert got == want
    assert count == 0 or want  # the case asks about threads the events have
