"""Evidence is written for the rows that are read (questions/gaps/words.py ``Worded``):
a text report words the gaps it lists, the JSON every gap, and both say the same of a gap.

Held on a real trace (the corpus: skipped with a message when absent) and on a small one
where the lanes are not the devices (a copy on another stream)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import polars as pl
import pytest
from test_device_pass import _trace

from trace_analyzer.loading.profile import load
from trace_analyzer.questions.gaps.analysis import GapsResult, gate, gaps
from trace_analyzer.questions.gaps.words import Worded
from trace_analyzer.questions.gaps.text import gaps_layout, longest
from trace_analyzer.render.safe import TABLE
from trace_analyzer.render.view import View

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
RESNET = CORPUS / "real" / "tracelens" / "mi300_resnet"


def _unmade(result: GapsResult, table: str) -> bool:
    return isinstance(GapsResult.__dict__[table].stored(result), Worded)


def _check(p) -> None:
    listed = gaps(p)
    whole = gaps(p)
    assert _unmade(listed, "device_gaps")
    top = listed.picked("device_gaps", partial(longest, n=5, by="duration_ns"))
    assert _unmade(listed, "device_gaps")  # five rows worded, not the table
    assert listed.rows_in("device_gaps") == whole.device_gaps.height
    want = longest(whole.device_gaps, 5, "duration_ns")
    assert top.equals(want)  # the same rows, the same evidence, word for word
    assert top["evidence"].null_count() == 0 and want.height == min(5, want.height)
    gated = gate(listed, [])  # passed on unmade, then made alike
    assert _unmade(gated, "device_gaps")
    assert gated.device_gaps.equals(whole.device_gaps)
    assert whole.device_gaps["evidence"].null_count() == 0


def test_a_text_report_words_only_the_gaps_it_lists_and_says_what_the_json_says():
    if not RESNET.exists():
        pytest.skip(f"the corpus is not here ({RESNET})")
    p = load(RESNET)
    _check(p)
    result = gaps(p)
    gaps_layout(result, TABLE, View(top=10))
    assert _unmade(result, "device_gaps")
    assert result.device_gaps.height > 10


def test_where_the_lanes_are_not_the_devices_each_table_is_worded_when_read(tmp_path):
    p = load(_trace(tmp_path, copy_stream=13))
    _check(p)
    result = gaps(p)
    assert isinstance(result.gaps, pl.DataFrame) and result.gaps["evidence"].null_count() == 0
