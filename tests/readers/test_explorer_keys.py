"""The link keys lifted from ``extra_attributes_json`` (readers/explorer_keys.py).

What users rely on: every key is the value JSON gives it, whichever way the row is read (the
literal scan for plain rows, the parse for the rest). The expected values come from Python's
own ``json`` module (the last of a duplicated key, int64 only), never from traceana.
"""

from __future__ import annotations

import json
import re

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

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


def lifted(texts: list[str | None]) -> list[dict[str, int | None]]:
    df = pl.DataFrame({"extra_attributes_json": texts}, schema={"extra_attributes_json": pl.String})
    return lifted_keys(df).to_dicts()


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


def test_every_key_is_the_value_json_gives_it():
    assert lifted(CASES) == [expected(t) for t in CASES]


# String values are parsed, never scanned; their text is kept to what Python and polars read
# alike as an integer or as none ("+1" and " 1" polars reads, Python's json does not).
VALUE = st.one_of(
    st.integers(-(2**64), 2**64), st.text(alphabet="ab1-", max_size=6), st.none(), st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False), st.lists(st.integers(), max_size=3),
)  # fmt: skip
KEY = st.sampled_from([*EXTRA_COLUMNS, "model_id", "exec", "name"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(KEY, VALUE), max_size=5), max_size=8), st.booleans())
def test_valid_json_of_any_shape_reads_as_json_says(rows, spaced):
    sep = (", ", ": ") if spaced else (",", ":")
    texts = []
    for pairs in rows:  # keys may repeat: json.dumps of a list of pairs keeps every one
        body = sep[0].join(json.dumps(k) + sep[1] + json.dumps(v) for k, v in pairs)
        texts.append("{" + body + "}")
    assert lifted(texts) == [expected(t) for t in texts]
