"""A Kineto trace's bytes, block by block, and the records of its traceEvents array fed to the
compiled scanner: what both streaming paths (kineto_stream.py, kineto_native.py) read with,
and what ``ahead`` runs before polars is loaded. Imports no polars.
"""

from __future__ import annotations

import gzip
import io
import re
from typing import Any

import orjson

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import AnyPath, MemberPath
from trace_analyzer.inputs.limits import PARAM, too_large

BLOCK = 1 << 23
MAX_RECORD = 64 << 20  # bytes: the longest record (or run without a record boundary) read
WS = b" \t\n\r"  # JSON's whitespace
HEAD = re.compile(rb'"traceEvents"\s*:\s*\[')
SLACK = 1 << 20  # the room feed()'s buffer keeps beyond a block, for the record cut before it


class NotFast(Exception):
    """The streaming path cannot read this file; the exact path will."""


def open_trace(path: AnyPath) -> io.BufferedIOBase:
    raw: io.BufferedIOBase = (
        io.BytesIO(path.read_bytes()) if isinstance(path, MemberPath) else open(path, "rb")
    )
    return gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw


class Reader:
    """The decompressed bytes of a trace, block by block, counted against its cap."""

    def __init__(self, f: io.BufferedIOBase, path: AnyPath, cap: int | None) -> None:
        self.f, self.path, self.cap = f, path, cap
        self.seen = 0  # bytes read so far: the offset, in the file as written, of the next

    def read(self) -> bytes:
        block = self.f.read(BLOCK)
        self.seen += len(block)
        if self.cap is not None and self.seen > self.cap:
            raise InputError(str(self.path), too_large("the file", self.cap), param=PARAM)
        return block

    def read_into(self, view: memoryview) -> int:
        """Read the next bytes into ``view`` (a block's room, at most), as ``read`` does but
        into a buffer the caller keeps: their count, 0 at the end."""
        got = self.f.readinto(view)
        self.seen += got
        if self.cap is not None and self.seen > self.cap:
            raise InputError(str(self.path), too_large("the file", self.cap), param=PARAM)
        return got


def _in_string(text: bytes) -> bool:
    """Whether ``text``, which starts outside any string, ends inside one.

    Quotes open and close strings but escaped ones (an odd run of backslashes before them);
    dropping every escaped backslash first leaves one backslash before just those.
    """
    t = text.replace(b"\\\\", b"")
    return (t.count(b'"') - t.count(b'\\"')) % 2 == 1


def _blank(block: bytes) -> bool:
    """Whether ``block`` is JSON whitespace only (its ends looked at first: no copy)."""
    return block[:1].isspace() and block[-1:].isspace() and not block.strip(WS)


def _compact(text: bytes) -> tuple[bytes, int]:
    """Return ``text`` (which starts outside strings, between JSON values or tokens) without
    its leading whitespace and with its trailing whitespace, when outside a string, cut to
    one blank; and the count of bytes cut from its end. The JSON means the same."""
    text = text.lstrip(WS)
    body = text.rstrip(WS)
    cut = len(text) - len(body) - 1
    if cut < 1 or _in_string(body):
        return text, 0
    return body + b" ", cut


def _head(r: Reader) -> tuple[dict[str, Any], bytes]:
    """Return the trace's keys before traceEvents, and what follows the array's ``[``.

    The text before the array may be longer than a block only by whitespace."""
    meta, block, start, _ = head_at(r)
    return meta, block[start:]


def head_at(r: Reader) -> tuple[dict[str, Any], bytes, int, int]:
    """Return the trace's keys before traceEvents, the text read so far, where in it the
    array's records begin (after its ``[``): ``_head`` without the copy of the rest; and the
    offset of the text's first byte in the file (-1 where the text is not the file's bytes:
    whitespace cut from a long head)."""
    block, at = r.read(), 0
    if block.startswith(b"\xef\xbb\xbf"):
        block, at = block[3:], 3
    m = HEAD.search(block)
    while m is None:
        block, at = _compact(block)[0], -1
        more = r.read() if len(block) < BLOCK else b""
        if not more:
            raise NotFast("no traceEvents array in the first block")
        block += more
        m = HEAD.search(block)
    meta = orjson.loads(block[: m.start()] + b'"traceEvents": null}')
    if not isinstance(meta, dict):
        raise NotFast("not an object")
    return meta, block, m.end(), at


def feed(r: Reader, scanner: Any) -> dict[str, Any]:
    """Feed the array's records to ``scanner`` (``_kscan.Scanner``) block by block; return the
    top-level keys. NotFast (or the scanner's Decline) where the compiled scan declines.

    The blocks are read into one buffer, kept for the whole file: a record cut by a block's
    end moves to its start and the next block is read after it (no new memory, and no copy
    of the block, per block; a new buffer only for a cut record longer than SLACK).

    Each block is fed with its offset in the text read (the file's, or a gzip file's inflated
    text), so that each record's ``args_at`` says where its args lie (loading/args_at.py); none
    where the head's whitespace was cut."""
    meta, head, start, at = head_at(r)
    buf: bytes | bytearray = head  # the first block's bytes, fed as they are
    n = len(buf)
    while True:
        where = -1 if at < 0 else at + start
        used, done = scanner.feed(memoryview(buf)[start:n], MAX_RECORD, where)
        used, start = used + start, 0
        at = -1 if at < 0 else at + used  # buf[used] is the next block's first byte
        if done:
            break
        left = n - used  # a record cut by the block's end (or the text after the array)
        room = (
            buf
            if isinstance(buf, bytearray) and len(buf) >= left + BLOCK
            else bytearray(left + BLOCK + SLACK)
        )
        room[:left] = buf[used:n]  # the same length: the buffer is not resized
        buf = room
        got = r.read_into(memoryview(buf)[left : left + BLOCK])
        if not got:
            raise NotFast("the traceEvents array does not end")
        if left > MAX_RECORD:  # the polars path says why, or reads it
            raise NotFast("a record longer than MAX_RECORD")
        n = left + got
    rest = bytes(buf[used:n])
    del buf
    while more := r.read():  # the keys after the array
        rest += more
        if len(rest) > MAX_RECORD:
            raise NotFast("more than MAX_RECORD bytes after the traceEvents array")
    rest = rest.strip(WS)
    tail = {} if rest == b"}" else orjson.loads(b"{" + rest[1:]) if rest[:1] == b"," else None
    if not isinstance(tail, dict) or "traceEvents" in tail:  # the last traceEvents wins
        raise NotFast("not the end of an object after the traceEvents array")
    meta.update(tail)
    return meta
