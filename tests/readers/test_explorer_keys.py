"""The link keys lifted from ``extra_attributes_json`` (readers/explorer_keys.py).

What users rely on: every key is the value JSON gives it, whichever way the row is read (the
literal scan for plain rows, the parse for the rest). The expected values come from Python's
own ``json`` module (the last of a duplicated key, int64 only), never from traceana.
"""

from __future__ import annotations

import json
import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_analyzer.readers import explorer_keys
from trace_analyzer.readers.explorer_keys import lifted_keys
from trace_analyzer.readers.neuron import EXTRA_COLUMNS


def expected(text: str | None) -> dict[str, int | None]:
    """The keys as JSON says: an int64 integer (or a string of one) at the top level."""
    try:
        doc = json.loads(text) if text is not None else None
    except ValueError:
        doc = None
    out: dict[str, int | None] = {}
    for key, col in EXTRA_COLUMNS.items():
        v = doc.get(key) if isinstance(doc, dict) else None
        if isinstance(v, str) and re.fullmatch(r"-?[0-9]+", v):
            v = int(v)
        ok = isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63
        out[col] = v if ok else None
    return out


def frame(texts: list[str | None]) -> pl.DataFrame:
    return pl.DataFrame({"extra_attributes_json": texts}, schema={"extra_attributes_json": pl.String})


def lifted(texts: list[str | None], native: bool = True) -> list[dict[str, int | None]]:
    return lifted_keys(frame(texts), native=native).to_dicts()


# Both ways to lift: the compiled scan (where it is built) and polars alone.
PATHS = [pytest.param(True, id="native"), pytest.param(False, id="polars")]


def test_the_compiled_scan_is_built():
    """`pip install` builds it where a compiler is (every machine this suite runs on)."""
    assert explorer_keys._ekeys is not None, "trace_analyzer/readers/_ekeys.c was not built"


CASES = [
    '{"exec_id":15725,"model_id":1}',
    '{"nrt_sequence_id":844424930149008,"model_id":991453829470484,"exec_id":3913}',
    '{"category":"cpu_op","External id":3644,"Input Dims":[[8,1024],[]]}',
    '{"exec_id":1,"exec_id":2}',  # JSON keeps the last
    '{"exec_id":"12"}',  # a string of an integer
    '{"exec_id":1e3}',
    '{"exec_id":12.0}',
    '{"exec_id":-5 }',
    '{ "exec_id" : 7 , "b":[1,2]}',
    '{"a":{"exec_id":3}}',  # nested: not the row's key
    '{"exec_id":9223372036854775808}',
    '{"exec_id":-9223372036854775808}',  # past int64; int64
    '{"exec_id":null}',
    '{"exec_id":true}',
    '{"note":"exec_id","exec_id":4}',
    '{"my_exec_id":5}',
    '{"\\u0065xec_id":6}',  # another key; the key spelled with an escape
    '{"name":"a \\"exec_id\\":9","exec_id":8}',  # the key's text inside a string
    '{"name":"{x}","exec_id":10}',  # a brace in a string: parsed, same value
    '{"exec_id":10',
    "exec_id=11",
    "{'exec_id': 12}",
    "{}",
    "",
    None,  # not JSON, or nothing
    '{"correlation":77,"External id":78,"nrt_sequence_id":79}',
]


@pytest.mark.parametrize("native", PATHS)
def test_every_key_is_the_value_json_gives_it(native):
    assert lifted(CASES, native) == [expected(t) for t in CASES]


@pytest.mark.parametrize("native", PATHS)
@pytest.mark.parametrize("pad", [0, 1, 5, 9, 14, 15, 16, 17, 31, 33])
def test_keys_anywhere_in_a_row_whatever_its_length(native, pad):
    """The compiled scan reads 16 bytes at a time, the last block overlapping, and a short
    row byte by byte: a key before, across and after a block's edge, or at the row's end."""
    fill = '"' + "x" * pad + '":0'
    texts = [
        "{" + fill + ',"exec_id":' + str(pad) + "}",
        '{"exec_id":' + str(pad) + "," + fill + "}",
        "{" + fill + ',"exec_id":7,"exec_id":8}',
        "{" + fill + ',"nrt_sequence_id":-' + str(pad) + ' }',
        "{" + fill + ',"x":"exec_id"}',
        "{" + fill + ',"exec_id"}',
        "{" + fill + ',"exec_id":',
        "{" + fill + ',"a":{"exec_id":1}}',
        "{" + fill + ',"exec_id":2,"b":"\\"}',
        "{" + fill + ',"External id":3,"correlation":4}',
        '{"exec_id":1}' + "x" * pad,
        "{" * (pad + 1) + '"exec_id":1}',
    ]
    assert lifted(texts, native) == [expected(t) for t in texts]


# String values are parsed, never scanned; their text is kept to what Python and polars read
# alike as an integer or as none ("+1" and " 1" polars reads, Python's json does not).
VALUE = st.one_of(
    st.integers(-(2**64), 2**64), st.text(alphabet="ab1-", max_size=6), st.none(), st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False), st.lists(st.integers(), max_size=3),
)  # fmt: skip
KEY = st.sampled_from([*EXTRA_COLUMNS, "model_id", "exec", "name"])


@pytest.mark.parametrize("native", PATHS)
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(KEY, VALUE), max_size=5), max_size=8), st.booleans())
def test_valid_json_of_any_shape_reads_as_json_says(native, rows, spaced):
    sep = (", ", ": ") if spaced else (",", ":")
    texts = []
    for pairs in rows:  # keys may repeat: json.dumps of a list of pairs keeps every one
        body = sep[0].join(json.dumps(k) + sep[1] + json.dumps(v) for k, v in pairs)
        texts.append("{" + body + "}")
    assert lifted(texts, native) == [expected(t) for t in texts]


# Any text at all, JSON or not: the compiled scan gives what polars alone gives, row by row
# (it reads a row itself only where the literal scan would, and leaves the rest to polars).
PIECE = st.sampled_from(
    ['"exec_id"', '"External id"', "exec_id", ":", " ", "\t", "\u00a0", "{", "}", "[", "]",
     ",", '"', "\\", "\\u0065", "-", "0", "7", "12", "9223372036854775807",
     "9223372036854775808", "00", ".5", "e3", '"x"', "null", "\n", "\x0b"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(PIECE, max_size=14).map("".join)), max_size=30))
def test_the_compiled_scan_equals_polars_on_any_text(texts):
    if explorer_keys._ekeys is None:
        pytest.skip("the compiled scan is not built")
    assert lifted_keys(frame(texts)).equals(lifted_keys(frame(texts), native=False))
