"""The streaming path of the Kineto reader: blocks of the file -> NDJSON lines -> polars.

A Kineto trace is one JSON object whose ``traceEvents`` array holds the records. The file
is read in blocks; newlines (only ever whitespace in JSON) become blanks, the separator
between two records becomes a newline, and polars' NDJSON reader parses the lines into
typed columns on every core, while this thread prepares the next block. A separator found
inside a record (in a string, or between objects nested in args) leaves an unbalanced line,
which polars rejects: the file is then read again the general way, then the exact way.
Nothing this path accepts is read differently from the exact path (tests compare both).

Memory is bounded by the blocks in flight and the one record being cut: whitespace outside
strings (padding before, between or after records, however long) is cut to one blank as it
comes, and a record longer than ``MAX_RECORD`` is an InputError naming its byte offset, so a
gzip file of gigabytes of blanks streams at the scanner's speed. A block in which a key this
path reads may occur twice in one record is read the exact way (orjson keeps a key's last
value, as JSON says; polars would keep the first).
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import orjson
import polars as pl

import trace_analyzer.readers.kineto_bytes as bytes_
from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import AnyPath, cap_for
from trace_analyzer.model.schema import Text
from trace_analyzer.readers.common import out_of_memory
from trace_analyzer.readers.kineto_bytes import (
    NotFast,
    Reader,
    _blank,
    _compact,
    _head,
    _in_string,
    open_trace,
)
from trace_analyzer.readers.kineto_records import ARG_COLUMNS, NO_DUR, RAW_SCHEMA, collect

KINETO_SEP = b"},   {"  # libkineto writes "},\n  {" between records
ANY_SEP = re.compile(rb"\}\s*,\s*\{")
ID = pl.String()  # pids and flow ids may be numbers or strings; cast like as_i64 afterwards
ARG_KEYS = (*ARG_COLUMNS, "device", "stream", "stream_id")
# Args are read as integers, and a block where one is not is read again with strings. The
# args' "name" (metadata records write one) is read only to count it (duplicate keys).
ARGS, ARGS_ANY = (
    pl.Struct({**dict.fromkeys(ARG_KEYS, pl.Int64), "name": ID}),
    pl.Struct(dict.fromkeys((*ARG_KEYS, "name"), ID)),
)
LINE_SCHEMA: dict[str, pl.DataType] = {
    "ph": pl.String(),
    "cat": pl.String(),
    "name": pl.String(),
    "pid": ID,
    "tid": ID,
    "ts": pl.Float64(),
    "dur": pl.Float64(),
    "id": ID,
}


TOP_KEYS = (*LINE_SCHEMA, "args")
KEYS = dict.fromkeys((*TOP_KEYS, *ARG_KEYS, "name"))  # "name": top level and in args
KEYS_WRITTEN = '"(?:' + "|".join(re.escape(k) for k in KEYS) + r')"\s*:'
# Escapes that send a block the exact way: one of ASCII (a key could be spelled so), and one
# of a surrogate (orjson refuses a lone one, so the file; polars would read it as another
# character). A false find (an escaped backslash before "u00") only costs the exact way's time.
EXACT_ESCAPE = re.compile(rb"\\u(?:00[2-7][0-9a-fA-F]|[dD][89a-fA-F])")
# A text (ph, cat, name) polars read from a value that is not a string may start so (true,
# false, a number, an object, an array); the exact path reads those its own way (collect).
NOT_TEXT = r"^(?:true$|false$|[-0-9\[{])"


Parsed = tuple[pl.DataFrame, int]  # a block's raw table, and the values of keys read it holds
Pending = tuple["Future[Parsed]", bytes, int | None]  # a block being parsed, its text, its keys


Split = Callable[[bytes], bytes]  # a block's record separators -> newlines


def split_kineto(buf: bytes) -> bytes:
    """Cut at the separator libkineto writes: the fast way, for traces as Kineto wrote them."""
    return buf.replace(KINETO_SEP, b"}\n{")


def split_any(buf: bytes) -> bytes:
    """Cut at any separator between two records, however spaced."""
    return ANY_SEP.sub(b"}\n{", buf)


def scan(
    path: AnyPath,
    split: Split = split_kineto,
    keep_args: bool = False,
    *,
    max_bytes: int | None = None,
    keep: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
) -> tuple[dict[str, Any], pl.DataFrame]:
    """Return the trace's top-level keys but traceEvents, and its records as the raw table
    (``keep`` of it, each block's table cut as it comes, where given: kineto_args.py).

    NotFast when this path cannot read the file; a ``.gz`` file that inflates past
    ``max_bytes`` (limits.py; an archive member's own cap when None) is an InputError.
    """
    cap = cap_for(path, max_bytes) if path.name.endswith(".gz") else None
    try:
        with open_trace(path) as f, ThreadPoolExecutor(1) as pool:
            return _scan(f, split, keep_args, pool, (path, cap), kept=keep)
    except (
        OSError,
        EOFError,
        zlib.error,
        pl.exceptions.PolarsError,
        orjson.JSONDecodeError,
        UnicodeDecodeError,
    ) as e:
        if isinstance(e, orjson.JSONDecodeError):
            out_of_memory(e)  # a MemoryError, not a file this path declines
        raise NotFast(str(e)) from e


def _scan(
    f: io.BufferedIOBase,
    split: Split,
    keep_args: bool,
    pool: ThreadPoolExecutor,
    limit: tuple[AnyPath, int | None],
    kept: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
) -> tuple[dict[str, Any], pl.DataFrame]:
    r = Reader(f, *limit)  # the file, and what it may inflate to (None: not compressed)
    cut = kept or (lambda t: t)
    meta, block = _head(r)
    schema = {**LINE_SCHEMA, "args": pl.String() if keep_args else ARGS}
    parts: list[pl.DataFrame] = []
    pending: Pending | None = None
    carry, cut_off = b"", 0  # the record being cut (from its start), bytes cut from its end
    while block:
        if _blank(block) and not _in_string(carry):  # padding: one blank is the same JSON
            keep = b" " if carry and carry[-1:] != b" " else b""
            cut_off += len(block) - len(keep) if carry else 0
            carry += keep
            block = r.read()
            continue
        block = block.replace(b"\n", b" ")
        if b"\r" in block:
            block = block.replace(b"\r", b" ")
        buf = split(carry + block)
        end = buf.rfind(b"\n")
        if end < 0:
            carry = buf
        else:
            carry, cut_off = buf[end + 1 :], 0
            if pending is not None:
                parts.append(cut(_checked(pending, keep_args)))
            lines = buf[:end]
            job = pool.submit(_parse, lines, schema, keep_args)
            pending = (job, lines, _written(lines))  # counted here while the pool parses
        if len(carry) > bytes_.BLOCK:
            carry, more = _compact(carry)
            cut_off += more
            _check_record(r, split, carry, cut_off)
        block = r.read()
    if pending is not None:
        parts.append(cut(_checked(pending, keep_args)))
    last, tail = _array_end(carry, schema, keep_args)
    if last is not None:
        parts.append(cut(last))
    meta.update(tail)
    raw = pl.concat(parts) if parts else cut(pl.DataFrame(schema=RAW_SCHEMA))
    return meta, raw


def _check_record(r: Reader, split: Split, carry: bytes, cut_off: int) -> None:
    """Refuse a record being cut that is longer than a block (Kineto's separator: NotFast,
    the general one is tried) or than ``MAX_RECORD`` (an InputError naming its offset)."""
    if split is split_kineto and len(carry) > bytes_.BLOCK:
        raise NotFast("no Kineto record separator in a whole block")
    if len(carry) > bytes_.MAX_RECORD:
        start = r.seen - len(carry) - cut_off
        raise InputError(
            str(r.path),
            f"a record of traceEvents, at byte {start:,} (decompressed), is longer than "
            f"{bytes_.MAX_RECORD:,} bytes, the most traceana reads in one record",
        )


def _array_end(
    carry: bytes, schema: dict[str, pl.DataType], keep_args: bool
) -> tuple[pl.DataFrame | None, dict[str, Any]]:
    """Return the last records (parsed) and the keys after the array, from the last block's rest.

    The array ends at a ``]`` after which the rest is the end of an object, and before which
    the text parses as records: tried from the end of the file backwards.
    """
    k = len(carry)
    for _ in range(1_000):
        k = carry.rfind(b"]", 0, k)
        if k < 0:
            break
        rest = carry[k + 1 :].strip()
        try:
            tail = (
                {} if rest == b"}" else orjson.loads(b"{" + rest[1:]) if rest[:1] == b"," else None
            )
            if isinstance(tail, dict):
                last = carry[:k]
                if not last.strip():
                    return None, tail
                parsed = _parse(last, schema, keep_args)
                return _decided(parsed, last, _written(last), keep_args), tail
        except (orjson.JSONDecodeError, pl.exceptions.PolarsError):
            pass
    raise NotFast("no end of the traceEvents array")


def _parse(lines: bytes, schema: dict[str, pl.DataType], keep_args: bool) -> Parsed:
    """Return the raw table of NDJSON ``lines``, one record per line, and how many values
    of the keys this path reads polars found in them (``_held``)."""
    try:
        df = pl.read_ndjson(lines, schema=schema)
    except pl.exceptions.PolarsError:  # an arg that is not an int64: a string, a float, 2**64
        if schema["args"] != ARGS:
            raise
        df = pl.read_ndjson(lines, schema={**schema, "args": ARGS_ANY})
    if keep_args:
        df = df.with_columns(
            args_json=pl.when(pl.col("args") != "{}").then("args"),
            args=pl.col("args").str.json_decode(ARGS_ANY),
        )
    held = -1 if _odd_ids(df) or _odd_texts(df) else _held(df)  # -1: read the exact way
    a = pl.col("args").struct

    def i64(e: pl.Expr) -> pl.Expr:
        return e.cast(pl.Int64, strict=False)

    table = df.select(  # text as the events table keeps it (dictionary-encoded), block by block
        pl.col("ph").cast(Text),
        pl.col("cat").cast(Text).alias("category"),
        pl.col("name").cast(Text),
        i64(pl.col("pid")).alias("pid"),
        i64(pl.col("tid")).alias("tid"),
        "ts",
        pl.col("dur").fill_null(NO_DUR),  # no key: a null one sends the block the exact way
        i64(pl.col("id")).alias("flow_id"),
        i64(a.field("device")).alias("device"),
        i64(pl.coalesce(a.field("stream"), a.field("stream_id"))).alias("stream"),
        i64(pl.coalesce(a.field("External id"), a.field("external id"))).alias("external_id"),
        i64(a.field("correlation")).alias("correlation"),
        i64(a.field("nrt_sequence_id")).alias("seq_id"),
        i64(a.field("exec_id")).alias("exec_id"),
        i64(a.field("wait_on_stream")).alias("wait_stream"),
        i64(a.field("wait_on_cuda_event_record_corr_id")).alias("wait_record"),
        (pl.col("args_json") if keep_args else pl.lit(None, pl.String)).alias("args_json"),
    )
    return table, held


# Whether a key this path reads may occur twice in one record: polars keeps a key's first
# value, JSON (and orjson) its last. The keys are counted as written (one pass of polars'
# regex, in the scanning thread while the pool parses the block) against the values polars
# found: more keys than values is a key twice in a record, or a null, or one nested deeper,
# all suspect, and such a block is read the exact way; so is one where a key could be
# spelled with escapes.


def _held(df: pl.DataFrame) -> int:
    """Return how many values of the keys this path reads the parsed block ``df`` holds."""
    a = pl.col("args").struct
    return int(
        df.select(
            pl.sum_horizontal(
                *(pl.col(k).is_not_null().sum() for k in TOP_KEYS),
                *(a.field(k).is_not_null().sum() for k in (*ARG_KEYS, "name")),
            )
        ).item()
    )


def _odd_ids(df: pl.DataFrame) -> bool:
    """Whether an id read as text that polars cannot cast to an integer holds a digit: int()
    may read it (" 12", "1_0", the number 1.5 read as text), so the block is read the exact
    way. Only the ids that do not cast are looked at: few, where any."""
    cols = [df.get_column(c) for c in ("pid", "tid", "id")]
    if df.schema["args"] == ARGS_ANY:
        cols += [df.get_column("args").struct.field(k) for k in ARG_KEYS]
    for ids in cols:
        odd = ids.filter(ids.is_not_null() & ids.cast(pl.Int64, strict=False).is_null())
        if odd.len() and odd.str.contains(r"\d").any():
            return True
    return False


def _odd_texts(df: pl.DataFrame) -> bool:
    """Whether a text (ph, cat, name) may have been a value that is not a string: polars
    writes true, 1.0 or {"a": 1} as text its own way, the exact path as collect does."""
    odd = [pl.col(c).str.contains(NOT_TEXT).any() for c in ("ph", "cat", "name")]
    return bool(df.select(pl.any_horizontal(odd)).item())


def _written(lines: bytes) -> int | None:
    """Return how many times the keys this path reads are written in ``lines``; None where
    one could be spelled with escapes, a string holds a surrogate's escape (a lone one makes
    the file invalid JSON, orjson's error), or the text is not UTF-8 (orjson will say so)."""
    if EXACT_ESCAPE.search(lines):
        return None
    try:
        text = pl.Series([lines], dtype=pl.Binary).cast(pl.String)
    except pl.exceptions.PolarsError:
        return None
    return int(text.str.count_matches(KEYS_WRITTEN)[0])


def _checked(pending: Pending, keep_args: bool) -> pl.DataFrame:
    """Return a block's raw table: as polars parsed it, or, where a key may be written
    twice in one of its records, read the exact way."""
    job, lines, written = pending
    return _decided(job.result(), lines, written, keep_args)


def _decided(parsed: Parsed, lines: bytes, written: int | None, keep_args: bool) -> pl.DataFrame:
    """Return the raw table ``parsed`` from ``lines``, or, where ``lines`` write more keys
    than it holds values (``written``), ``lines`` read the exact way."""
    table, held = parsed
    return _exact(lines, keep_args) if written is None or written > held else table


def _exact(lines: bytes, keep_args: bool) -> pl.DataFrame:
    """Return the raw table of NDJSON ``lines`` read the exact path's way (orjson, then
    ``collect``), where a key may occur twice in one record."""
    raw, non_objects = collect([orjson.loads(x) for x in lines.split(b"\n") if x.strip()])
    if non_objects:
        raise NotFast("a record that is not an object")
    return raw if keep_args else raw.with_columns(args_json=pl.lit(None, pl.String))
