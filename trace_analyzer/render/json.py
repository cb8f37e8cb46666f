"""JSON: the stable, versioned, machine-readable form of every result.

The document is made as UTF-8 bytes and handed on in pieces (``pieces``), never as one
Python string: a gaps result at 1 GB of trace is 700 MB of JSON, and decoding it, escaping
it as text and encoding it again held four copies of it. The document around the large
tables (``Rows``) is one ``orjson.dumps``; each table is written by polars a slice of
``CHUNK_ROWS`` rows at a time, so that what is held at once is a slice, not the table's
whole JSON. The pieces joined are the same bytes as the whole document written at once.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import orjson
import polars as pl

from trace_analyzer.analyses.results import RunResults
from trace_analyzer.analyses.rows import Rows, json_default
from trace_analyzer.render.view import View

# One piece of a rendered document: bytes, or a view of them (no copy).
Piece = bytes | memoryview

# What orjson writes as it is but a terminal would act on or reorder (DEL, C1, bidirectional
# marks, overrides and isolates) or JavaScript once read as a line end: written as \u
# escapes, which parse back to the same characters. orjson escapes C0 itself.
UNSAFE_CHARS = "".join(
    map(
        chr,
        [
            *range(0x7F, 0xA0),
            0x061C,
            0x200E,
            0x200F,
            *range(0x202A, 0x202F),
            *range(0x2066, 0x206A),
            0x2028,
            0x2029,
        ],
    )
)
UNSAFE = re.compile(f"[{re.escape(UNSAFE_CHARS)}]")


def _utf8_patterns(chars: str) -> tuple[re.Pattern[bytes], list[re.Pattern[bytes]]]:
    """Return a pattern of the UTF-8 encodings of ``chars``, and one pattern per leading
    bytes they share. UTF-8 is self-synchronising, so an encoding matched in valid UTF-8 is
    that character. Each per-lead pattern starts with a literal byte, which the regex engine
    finds at the speed of a byte search; the alternation of them all is tried at every byte
    (ten times slower), and so only runs where one of the leads found something."""
    by_lead: dict[bytes, bytes] = {}
    for c in chars:
        code = c.encode()
        by_lead[code[:-1]] = by_lead.get(code[:-1], b"") + re.escape(code[-1:])
    alternatives = [re.escape(lead) + b"[" + last + b"]" for lead, last in by_lead.items()]
    leads = [re.compile(a) for lead, a in zip(by_lead, alternatives, strict=True) if lead]
    return re.compile(b"|".join(alternatives)), leads


UNSAFE_UTF8, UNSAFE_LEADS = _utf8_patterns(UNSAFE_CHARS)
OPTION = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
CHUNK_ROWS = 1024  # rows of a table written at once: about 1 MB of JSON for a gaps table
HOLE = b"\x00"  # where a table goes in the document: orjson writes no raw NUL (it escapes C0)


def inert(data: bytes) -> bytes:
    """Return UTF-8 JSON ``data`` with each ``UNSAFE`` character written as its ``\\u``
    escape. Such characters only occur inside JSON strings, where the escape parses back to
    the same character. Most documents hold none: ASCII is looked at for DEL alone, other
    text for the leading bytes of the rest, and only then rewritten."""
    if data.isascii():
        if b"\x7f" not in data:
            return data
    elif b"\x7f" not in data and not any(p.search(data) for p in UNSAFE_LEADS):
        return data
    return UNSAFE_UTF8.sub(lambda m: b"\\u%04x" % ord(m[0].decode()), data)


def pieces(doc: object) -> Iterator[Piece]:
    """Yield plain data ``doc`` as indented JSON (integers stay integers: times are ns), in
    pieces whose bytes joined are the whole document and a line end.

    Names stay exactly as the trace wrote them, and the text holds no character a terminal
    acts on (``inert``). A ``Rows`` table in ``doc`` is written as polars writes its frame
    (one line, as ``analyses.rows.json_default`` writes it), in slices.
    """
    tables: list[pl.DataFrame] = []

    def hole(obj: object) -> orjson.Fragment:
        if isinstance(obj, Rows):  # orjson meets them in the order it writes them
            tables.append(obj.frame)
            return orjson.Fragment(HOLE)
        return json_default(obj)

    around = orjson.dumps(doc, default=hole, option=OPTION).split(HOLE)
    for part, frame in zip(around, tables, strict=False):
        yield inert(part)
        yield from table_pieces(frame)
    yield inert(around[-1])
    yield b"\n"


def table_pieces(frame: pl.DataFrame, rows: int | None = None) -> Iterator[Piece]:
    """Yield ``frame`` as the JSON array ``frame.write_json()`` writes, ``rows`` rows at a
    time (``CHUNK_ROWS``): each slice's array without its brackets, the slices joined by
    commas. A frame whose text holds no ``UNSAFE`` character (asked of polars, column by
    column) is passed on as polars wrote it; another one's slices go through ``inert``.
    Smaller slices cost no time (1,024 rows or 256 render a gaps table as fast as 4,096) and
    the peak holds about three times a slice's JSON (polars' buffer and ours)."""
    if frame.height == 0:
        yield frame.write_json().encode()
        return
    plain = not holds_unsafe(frame)
    rows = rows or CHUNK_ROWS
    yield b"["
    for start in range(0, frame.height, rows):
        buf = io.BytesIO()
        frame.slice(start, rows).write_json(buf)
        array = buf.getvalue()
        if start:
            yield b","
        yield memoryview(array)[1:-1] if plain else inert(array[1:-1])
    yield b"]"


def holds_unsafe(frame: pl.DataFrame) -> bool:
    """Whether any text of ``frame`` (a column name or a value) might hold an ``UNSAFE``
    character: text columns are asked (a categorical one by its distinct values), numbers
    and booleans cannot, and any other type (lists, structs) is taken to."""
    if any(UNSAFE.search(name) for name in frame.columns):
        return True
    for name, dtype in frame.schema.items():
        if dtype.is_numeric() or dtype == pl.Boolean or dtype.is_temporal():
            continue
        if dtype not in (pl.String, pl.Categorical):
            return True
        column = frame.get_column(name)
        if dtype == pl.Categorical:
            column = column.unique()
        if column.cast(pl.String).str.contains(UNSAFE.pattern).any():
            return True
    return False


def dumps(doc: object) -> str:
    """Return plain data ``doc`` as indented JSON text (``pieces``, joined)."""
    return b"".join(pieces(doc)).decode()


def render(result: RunResults[Any], *, options: View = View()) -> str:
    """Return a result's ``to_json()`` as indented JSON (``options`` change nothing here)."""
    return dumps(result.to_json())


def encoded(result: RunResults[Any], *, options: View = View()) -> Iterator[Piece]:
    """Yield a result's ``to_json()`` as indented JSON, UTF-8, in pieces (``pieces``): what
    the command writes, with no text copy of the document made."""
    return pieces(result.to_json())


def parsed(result: RunResults[Any]) -> dict[str, Any]:
    """Return a result as its JSON output says it, parsed back (what the pages draw from)."""
    doc: dict[str, Any] = orjson.loads(b"".join(encoded(result)))
    return doc
