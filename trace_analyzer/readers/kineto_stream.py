"""The streaming path of the Kineto reader: blocks of the file -> NDJSON lines -> polars.

A Kineto trace is one JSON object whose ``traceEvents`` array holds the records. The file
is read in blocks; newlines (only ever whitespace in JSON) become blanks, the separator
between two records becomes a newline, and polars' NDJSON reader parses the lines into
typed columns on every core, while this thread prepares the next block. A separator found
inside a record (in a string, or between objects nested in args) leaves an unbalanced line,
which polars rejects: the file is then read again the general way, then the exact way.
Nothing this path accepts is read differently from the exact path (tests compare both).
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

import orjson
import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import AnyPath, MemberPath, cap_for
from trace_analyzer.inputs.limits import PARAM, too_large
from trace_analyzer.readers.kineto_records import ARG_COLUMNS, RAW_SCHEMA

BLOCK = 1 << 23
HEAD = re.compile(rb'"traceEvents"\s*:\s*\[')
KINETO_SEP = b"},   {"  # libkineto writes "},\n  {" between records
ANY_SEP = re.compile(rb"\}\s*,\s*\{")
ID = pl.String()  # pids and flow ids may be numbers or strings; cast like as_i64 afterwards
ARG_KEYS = (*ARG_COLUMNS, "device", "stream", "stream_id")
# Args are read as integers, and a block where one is not is read again with strings.
ARGS, ARGS_ANY = (
    pl.Struct(dict.fromkeys(ARG_KEYS, pl.Int64)),
    pl.Struct(dict.fromkeys(ARG_KEYS, ID)),
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


class NotFast(Exception):
    """The streaming path cannot read this file; the exact path will."""


Split = Callable[[bytes], bytes]  # a block's record separators -> newlines


def split_kineto(buf: bytes) -> bytes:
    """Cut at the separator libkineto writes: the fast way, for traces as Kineto wrote them."""
    return buf.replace(KINETO_SEP, b"}\n{")


def split_any(buf: bytes) -> bytes:
    """Cut at any separator between two records, however spaced."""
    return ANY_SEP.sub(b"}\n{", buf)


def _open(path: AnyPath) -> IO[bytes] | gzip.GzipFile:
    raw: IO[bytes] = (
        io.BytesIO(path.read_bytes()) if isinstance(path, MemberPath) else open(path, "rb")
    )
    return gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw


def scan(
    path: AnyPath,
    split: Split = split_kineto,
    keep_args: bool = False,
    *,
    max_bytes: int | None = None,
) -> tuple[dict[str, Any], pl.DataFrame]:
    """Return the trace's top-level keys but traceEvents, and its records as the raw table.

    NotFast when this path cannot read the file; a ``.gz`` file that inflates past
    ``max_bytes`` (limits.py; an archive member's own cap when None) is an InputError.
    """
    cap = cap_for(path, max_bytes) if path.name.endswith(".gz") else None
    try:
        with _open(path) as f, ThreadPoolExecutor(1) as pool:
            return _scan(f, split, keep_args, pool, (path, cap))
    except (
        OSError,
        EOFError,
        zlib.error,
        pl.exceptions.PolarsError,
        orjson.JSONDecodeError,
        UnicodeDecodeError,
    ) as e:
        raise NotFast(str(e)) from e


def _scan(
    f: IO[bytes] | gzip.GzipFile,
    split: Split,
    keep_args: bool,
    pool: ThreadPoolExecutor,
    limit: tuple[AnyPath, int | None],
) -> tuple[dict[str, Any], pl.DataFrame]:
    path, cap = limit  # the file, and what it may inflate to (None: not compressed)
    block = f.read(BLOCK)
    seen = len(block)
    if block.startswith(b"\xef\xbb\xbf"):
        block = block[3:]
    m = HEAD.search(block)
    if m is None:
        raise NotFast("no traceEvents array in the first block")
    meta = orjson.loads(block[: m.start()] + b'"traceEvents": null}')
    if not isinstance(meta, dict):
        raise NotFast("not an object")
    schema = {**LINE_SCHEMA, "args": pl.String() if keep_args else ARGS}
    parts: list[pl.DataFrame] = []
    pending: Future[pl.DataFrame] | None = None
    carry = b""
    block = block[m.end() :]
    while block:
        block = block.replace(b"\n", b" ")
        if b"\r" in block:
            block = block.replace(b"\r", b" ")
        buf = split(carry + block)
        cut = buf.rfind(b"\n")
        if cut < 0:
            if split is split_kineto and len(buf) > BLOCK:
                raise NotFast("no Kineto record separator in a whole block")
            carry = buf
        else:
            carry = buf[cut + 1 :]
            if pending is not None:
                parts.append(pending.result())
            pending = pool.submit(_parse, buf[:cut], schema, keep_args)
        block = f.read(BLOCK)
        seen += len(block)
        if cap is not None and seen > cap:
            raise InputError(str(path), too_large("the file", cap), param=PARAM)
    if pending is not None:
        parts.append(pending.result())
    last, tail = _array_end(carry, schema, keep_args)
    if last is not None:
        parts.append(last)
    meta.update(tail)
    raw = pl.concat(parts) if parts else pl.DataFrame(schema=RAW_SCHEMA)
    return meta, raw


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
                return (_parse(last, schema, keep_args) if last.strip() else None), tail
        except (orjson.JSONDecodeError, pl.exceptions.PolarsError):
            pass
    raise NotFast("no end of the traceEvents array")


def _parse(lines: bytes, schema: dict[str, pl.DataType], keep_args: bool) -> pl.DataFrame:
    """Return the raw table of NDJSON ``lines``, one record per line."""
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
    a = pl.col("args").struct

    def i64(e: pl.Expr) -> pl.Expr:
        return e.cast(pl.Int64, strict=False)

    return df.select(
        "ph",
        pl.col("cat").alias("category"),
        "name",
        i64(pl.col("pid")).alias("pid"),
        i64(pl.col("tid")).alias("tid"),
        "ts",
        pl.col("dur").fill_null(0.0),
        i64(pl.col("id")).alias("flow_id"),
        i64(a.field("device")).alias("device"),
        i64(pl.coalesce(a.field("stream"), a.field("stream_id"))).alias("stream"),
        i64(pl.coalesce(a.field("External id"), a.field("external id"))).alias("external_id"),
        i64(a.field("correlation")).alias("correlation"),
        i64(a.field("nrt_sequence_id")).alias("seq_id"),
        i64(a.field("exec_id")).alias("exec_id"),
        (pl.col("args_json") if keep_args else pl.lit(None, pl.String)).alias("args_json"),
    )
