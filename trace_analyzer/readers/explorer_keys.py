"""The link keys of an Explorer export's rows, lifted out of ``extra_attributes_json``.

``exec_id``, ``nrt_sequence_id``, ``correlation`` and ``External id`` (neuron.EXTRA_COLUMNS)
are the keys that link executions to runtime calls and ops; Explorer writes them inside each
row's JSON text. Parsing that text (polars' ``json_path_match``, about 1 us a row and key)
was the largest part of reading a large export, so most rows are read by a literal scan:

- A row is *plain* when its text starts with ``{``, ends with ``}``, holds no other ``{`` or
  ``}`` and no backslash. In such a text no string holds a quote, so ``"exec_id":`` can only
  be a key of the outer object (a string value is followed by ``,``, ``]`` or ``}``, never by
  ``:``), and without a second brace no object nests.
- In a plain row where the key's text is written once, as a key followed by an integer and
  then ``,`` or ``}``, that integer is the value (int64; past its range: none, as before).
- Every other row that names the key or holds an escape is parsed as JSON, as before:
  a key written twice (JSON keeps the last), a value that is a string, a float or an
  exponent, a nested object, escapes.

Only one thing reads differently: a plain row that is not valid JSON in another way (a
trailing comma, a missing comma) gives the keys it writes, where the parse gave none
(docs/formats.md). Explorer writes its JSON with a serialiser, so such rows are not expected.

Where the compiled extension ``_ekeys`` is built (_ekeys.c), the literal scan is one pass in C
over every row and all four keys; a row it is not sure of (anything but a plain row with its
keys written once as integers, or no key at all) is left to the polars path below, so that
both give the same columns (tests/readers/test_explorer_keys.py holds them equal).
"""

from __future__ import annotations

from types import ModuleType

import polars as pl

from trace_analyzer.readers.neuron import EXTRA_COLUMNS

_ekeys: ModuleType | None
try:
    import trace_analyzer.readers._ekeys as _ekeys  # type: ignore[import-not-found,no-redef]
except ImportError:  # built without a compiler: polars lifts every row
    _ekeys = None

EXTRA = pl.col("extra_attributes_json")
assert all(k.replace(" ", "_").isidentifier() for k in EXTRA_COLUMNS)  # safe in a regex


def plain(extra: pl.Expr = EXTRA) -> pl.Expr:
    """Whether a row's text is one object with no nested object and no escape."""
    return (
        extra.str.starts_with("{")
        & extra.str.ends_with("}")
        & (extra.str.count_matches("{", literal=True) == 1)
        & (extra.str.count_matches("}", literal=True) == 1)
        & ~extra.str.contains("\\", literal=True)
    )


def lifted_keys(df: pl.DataFrame, native: bool = True) -> pl.DataFrame:
    """Return the columns of ``EXTRA_COLUMNS`` lifted from ``df``'s ``extra_attributes_json``:
    by the compiled scan where it is built (and ``native``), the rows it leaves by polars."""
    if _ekeys is None or not native or df.is_empty():
        return lifted_by_polars(df)
    text = df["extra_attributes_json"]
    got = pl.DataFrame(_ekeys.lift(text.__arrow_c_stream__(), tuple(EXTRA_COLUMNS)))
    left = (got["_parse"] != 0).arg_true()
    got = got.drop("_parse").rename(EXTRA_COLUMNS)
    if left.is_empty():
        return got
    again = lifted_by_polars(pl.DataFrame({"extra_attributes_json": text.gather(left)}))
    return got.with_columns(got[c].scatter(left, again[c]) for c in got.columns)


def lifted_by_polars(df: pl.DataFrame) -> pl.DataFrame:
    """Return ``lifted_keys(df)`` computed by polars alone.

    Three stages, each one pass over the rows with its columns computed in parallel: which
    rows are plain and which name each key; each key's scanned value; each key's value, the
    scanned one or, for the rest of the rows that may hold it, the parsed one."""
    if df.is_empty():
        return pl.DataFrame(schema=dict.fromkeys(EXTRA_COLUMNS.values(), pl.Int64))
    keys = list(EXTRA_COLUMNS)
    flags = {
        "_plain": plain(),
        "_escape": EXTRA.str.contains("\\u", literal=True).fill_null(False),
        **{
            f"_has{i}": EXTRA.str.contains(k, literal=True).fill_null(False)
            for i, k in enumerate(keys)
        },
    }
    scanned = {}
    for i, key in enumerate(keys):
        scan = pl.when(pl.col(f"_has{i}") & pl.col("_plain")).then(EXTRA)
        once = scan.str.count_matches(f'"{key}"', literal=True) == 1  # as a key or a value
        value = scan.str.extract(rf'"{key}"\s*:\s*(-?[0-9]+)\s*[,}}]', 1)
        scanned[f"_v{i}"] = pl.when(once).then(value).cast(pl.Int64, strict=False)
    lifted = {}
    for i, (key, col) in enumerate(EXTRA_COLUMNS.items()):
        path = f"$.{key}" if key.isidentifier() else f"$['{key}']"
        v = pl.col(f"_v{i}")
        parse = v.is_null() & (pl.col(f"_has{i}") | pl.col("_escape"))
        parsed = pl.when(parse).then(EXTRA).str.json_path_match(path).cast(pl.Int64, strict=False)
        lifted[col] = pl.when(v.is_not_null()).then(v).otherwise(parsed)
    return (
        df.lazy()
        .select("extra_attributes_json")
        .with_columns(**flags)
        .with_columns(**scanned)
        .select(**lifted)
        .collect()
    )
