"""Rows: the JSON renderer writes a result table through polars; it must say what the dicts say."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import polars as pl

import trace_analyzer as ta
from trace_analyzer.analyses.rows import Rows
from trace_analyzer.questions.gaps.analysis import gaps
from trace_analyzer.render.json import dumps

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_json_of_rows_equals_json_of_the_dicts():
    frame = pl.DataFrame({
        "i": [1, None, -(2**63)], "f": [0.1, 1e-7, None], "s": ["a\"b", "µs ✓", None],
        "l": [[1, 2], None, []], "b": [True, False, None],
    })
    got = json.loads(dumps({"rows": Rows(frame)}))
    assert got == {"rows": json.loads(orjson.dumps(frame.to_dicts()))}


def test_gaps_json_equals_the_dicts_on_the_fixture():
    r = gaps(ta.load(FIXTURES / "rmsnorm_naive"))
    for frame in (r.gaps, r.device_gaps):
        assert frame.height > 0
        assert json.loads(dumps({"g": Rows(frame)}))["g"] == frame.to_dicts()


def test_rows_behave_as_a_list_of_dicts():
    frame = pl.DataFrame({"d": [5, 9, 9, 1], "n": ["a", "b", "c", "d"]})
    rows = Rows(frame)
    assert len(rows) == 4 and bool(rows) and not Rows(frame.head(0))
    assert rows[1] == {"d": 9, "n": "b"} and list(rows)[-1]["n"] == "d"
    assert rows == frame.to_dicts()
    # top: largest first, table order at equal values (as a stable sort of the dicts)
    assert rows.top(3, "d") == sorted(frame.to_dicts(), key=lambda r: -r["d"])[:3]
