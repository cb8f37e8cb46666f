"""A Perfetto protobuf trace's bytes as its packets: gzip undone, ``compressed_packets`` inflated.

A trace file is one ``perfetto.protos.Trace`` message: field 1 (``packet``) repeated, each a
``TracePacket`` (docs/formats.md). The file may be gzip-compressed whole (PyTorch's
``.pftrace.gz``, ``perfetto --compress``), and a packet may hold further packets as Perfetto's
own ``compressed_packets``: the bytes of a ``Trace`` message, deflated with zlib. Both are
inflated here, bounded by ``max_bytes`` together (limits.py).

The messages are decoded by the protobuf runtime with the ``perfetto`` package's generated
classes (the ``perfetto`` extra): neither is a run-time dependency of traceana, and without
them a trace is refused in one line that says what to install (``Missing``).
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator
from typing import Any

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import AnyPath
from trace_analyzer.inputs.limits import PARAM, too_large

INSTALL = "pip install 'traceana[perfetto]' (the perfetto and protobuf packages)"
MISSING = f"a Perfetto protobuf trace, not read without the perfetto extra: {INSTALL}"
DEPTH = 4  # compressed_packets inside compressed_packets: Perfetto writes one level


class Missing(Exception):
    """The protobuf runtime or the perfetto package's protos are not installed."""


def protos() -> Any:
    """Return the module of Perfetto's generated ``Trace`` classes; Missing without them."""
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError as e:  # no perfetto, no protobuf, or a protobuf too old for them
        raise Missing(str(e)) from e
    return perfetto_trace_pb2


def trace_bytes(path: AnyPath, cap: int) -> bytes:
    """Return the bytes of the trace at ``path``, gzip undone (by its magic, whatever its
    name), at most ``cap`` of them; InputError when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from e
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                data = f.read(cap + 1)  # bounded, however far the stream would inflate
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(str(path), f"not a readable gzip file ({e})") from e
        if len(data) > cap:
            raise InputError(str(path), too_large("the file", cap), param=PARAM)
    if not data:
        raise InputError(str(path), "empty file")
    return data


def packets(data: bytes, path: AnyPath, cap: int) -> Iterator[Any]:
    """Yield the trace's TracePackets in file order, those of ``compressed_packets`` in place
    of the packet that held them; InputError when the bytes are not a trace."""
    pb = protos()
    budget = [cap]  # what compressed packets may still inflate to, all together
    yield from _packets(pb, data, path, budget, 0)


def _packets(pb: Any, data: bytes, path: AnyPath, budget: list[int], depth: int) -> Iterator[Any]:
    from google.protobuf.message import DecodeError

    trace = pb.Trace()
    try:
        trace.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        where = " (in compressed_packets)" if depth else ""
        raise InputError(str(path), diagnose(data) + where) from e
    if depth == 0 and not trace.packet:
        raise InputError(str(path), f"{diagnose(data)}: no TracePacket in it")
    for packet in trace.packet:
        if packet.WhichOneof("data") != "compressed_packets":
            yield packet
            continue
        if depth >= DEPTH:
            raise InputError(str(path), f"compressed_packets nested deeper than {DEPTH}")
        inner = _inflate(packet.compressed_packets, path, budget)
        yield from _packets(pb, inner, path, budget, depth + 1)


def _inflate(blob: bytes, path: AnyPath, budget: list[int]) -> bytes:
    """Return ``compressed_packets`` inflated (zlib, or raw deflate), within ``budget``."""
    for wbits in (zlib.MAX_WBITS | 32, -zlib.MAX_WBITS):  # zlib or gzip header, else raw
        d = zlib.decompressobj(wbits)
        try:
            out = d.decompress(blob, max(budget[0], 0) + 1)
        except zlib.error:
            continue
        if len(out) > budget[0]:
            raise InputError(str(path), too_large("the trace", budget[0]), param=PARAM)
        if not d.eof:
            raise InputError(str(path), "compressed_packets cut short (truncated?)")
        budget[0] -= len(out)
        return out
    raise InputError(str(path), "compressed_packets that do not inflate (not deflate data)")


def diagnose(data: bytes) -> str:
    """Say what bytes that do not decode as a Trace are: JSON or text named as a protobuf
    trace, a trace cut short (its packets framed up to the end), or not a Perfetto trace."""
    head = data.lstrip()[:1]
    if head in (b"{", b"["):
        return "JSON, not a Perfetto protobuf trace (a Chrome trace named .pftrace?)"
    complete, cut = framing(data)
    if cut and complete:
        return f"a Perfetto trace cut short after {complete} packets (truncated?)"
    return "not a Perfetto protobuf trace"


def framing(data: bytes) -> tuple[int, bool]:
    """Return how many packets (field 1, length-delimited) frame cleanly from the start of
    ``data``, and whether the bytes end inside one; (0, False) where the framing breaks."""
    pos, n, end = 0, 0, len(data)
    while pos < end:
        tag, pos = _varint(data, pos)
        if tag != 0x0A:  # field 1, wire type 2: all a Trace holds
            return (n, False) if tag is not None else (n, n > 0)
        size, pos = _varint(data, pos)
        if size is None:
            return n, True
        if pos + size > end:
            return n, True
        pos, n = pos + size, n + 1
    return n, False


def _varint(data: bytes, pos: int) -> tuple[int | None, int]:
    """Return the varint at ``pos`` and the position after it; None when the bytes end first
    or it runs past ten bytes."""
    value = shift = 0
    for i in range(pos, min(pos + 10, len(data))):
        b = data[i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i + 1
        shift += 7
    return None, len(data)
