"""The compiled path of the Kineto reader, and the choice between the three ways to read.

``_kscan`` (a C extension, _kscan.c, built by ``pip install`` where a compiler is) reads the
records of the traceEvents array in one pass over the bytes, as the raw table's columns, and
counts the metadata records (``"ph": "M"``) instead of keeping them. It reads a record exactly
as the exact path does or declines the file, which the polars path (kineto_stream.py) then
reads, and where that declines, the exact path. The file is read as the polars path reads it
(its ``Reader``: gzip, the inflation cap), and a record longer than ``MAX_RECORD`` is left to
that path too, which words the error. With ``keep_args`` (args_json) this path declines: the
args' JSON text is the polars path's work (kineto_args.py); what it keeps of a plain file is
where each event's args lie (``args_at``: loading/args_at.py reads them when asked).

``TRACEANA_KINETO_SCAN`` (``ENV``) chooses: ``native`` (the default where the extension is
built; without it, the polars path), ``polars`` (the streaming path only), ``exact`` (neither
streaming path: every trace parsed whole by orjson).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import polars as pl

import trace_analyzer.readers.kineto_stream as stream
from trace_analyzer.errors import UsageError
from trace_analyzer.inputs.archive import AnyPath, cap_for
from trace_analyzer.model.arrow import frame
from trace_analyzer.model.schema import Text
from trace_analyzer.readers.ahead import taken
from trace_analyzer.readers.common import out_of_memory
from trace_analyzer.readers.kineto_bytes import NotFast, Reader, feed, open_trace
from trace_analyzer.readers.kineto_records import LINK_COLUMNS, RAW_SCHEMA

_kscan: ModuleType | None
try:
    import trace_analyzer.readers._kscan as _kscan  # type: ignore[import-not-found,no-redef]
except ImportError:  # built without a compiler: the polars path reads every trace
    _kscan = None

ENV = "TRACEANA_KINETO_SCAN"
CHOICES = ("native", "polars", "exact")
TEXTS = ("ph", "category", "name")  # columns the scanner writes as indexes into its names


class Records:
    """The records the compiled scanner read, still in its memory, for kineto.py to take out
    either as the raw table (``table``) or, split in C, as the events alone with their device
    flows already bound (``split``): the raw table's rows of flows and skipped records, and
    the joins that bind flows, are never made. One or the other, once."""

    def __init__(self, scanner: Any, rows: int, spans: bool = False) -> None:
        # spans: each event's args_at says where its args lie in the file (loading/args_at.py)
        self.scanner, self.rows, self.spans = scanner, rows, spans

    def names(self) -> list[str]:
        """The strings the texts index (what ``kinds`` describes, a byte each)."""
        return list(self.scanner.names())

    def table(self) -> pl.DataFrame:
        """The raw table (RAW_SCHEMA), as the other paths make it."""
        return _table(self.scanner, self.rows)

    def survey(self, kinds: bytes) -> tuple[bool, float | None]:
        """Whether a record is a B or E one (pairs: the raw table's work), and the ts of the
        first X record (None where there is none, or it has none)."""
        paired, first = self.scanner.survey(kinds)
        return bool(paired), first

    def split(
        self, kinds: bytes, base: int
    ) -> tuple[pl.DataFrame, list[tuple[str | None, str | None, int]], Binding | None, int]:
        """Return the events (the columns kineto._split_records gives them, times as ns after
        ``base``), the records skipped as (ph, category, count), the device flows' binding
        (None where there are none): each event's flow ids (sorted, unique; null where none),
        and the count of (flow id, phase) keys bound to no event; and the count of events of
        X records without dur (read as 0 ns)."""
        names = self.scanner.names()
        skipped, keys, bound, flow_ids, no_dur = self.scanner.split(kinds, base)
        counts = [
            (None if p is None else names[p], None if c is None else names[c], n)
            for p, c, n in skipped
        ]
        binding = (frame(flow_ids)["flow_ids"], keys - bound) if keys else None
        rows = self.scanner.counts()[0]
        if not rows:
            return pl.DataFrame(schema=EVENT_COLUMNS), counts, binding, no_dur
        cols = pl.DataFrame(self.scanner)
        text = pl.Series(names, dtype=pl.String).cast(Text)
        texts = {c: text.gather(cols[c]) for c in ("name", "category")}
        at = pl.col("args_at") if self.spans else pl.lit(None, pl.Int64)
        events = cols.with_columns(**texts, args_json=pl.lit(None, pl.String), args_at=at)
        return events.select(*EVENT_COLUMNS), counts, binding, no_dur


Binding = tuple[pl.Series, int]  # each event's flow ids, and the flow keys left unbound
# The columns of the events split() keeps, as kineto._split_records selects them.
EVENT_COLUMNS: dict[str, pl.DataType] = {
    "name": Text,
    "category": Text,
    "start_ns": pl.Int64(),
    "duration_ns": pl.Int64(),
    **{c: RAW_SCHEMA[c] for c in ("pid", "tid", "device", "stream", *LINK_COLUMNS)},
    "args_json": pl.String(),
    "args_at": pl.Int64(),
}

# A scan: (path, keep_args, max_bytes) -> the top-level keys, the raw table (or the compiled
# scanner's Records), metadata records counted rather than kept; NotFast when it declines.
Scan = Callable[..., tuple[dict[str, Any], "pl.DataFrame | Records", int]]


def choice() -> str:
    """Return the path ``TRACEANA_KINETO_SCAN`` asks for (native, polars or exact)."""
    value = os.environ.get(ENV, "").strip().lower() or "native"
    if value not in CHOICES:
        raise UsageError(f"{ENV} must be one of {', '.join(CHOICES)}, not {value!r}")
    return value


def scans() -> list[Scan]:
    """Return the scans to try in turn, as ``TRACEANA_KINETO_SCAN`` chooses; none for exact."""
    chosen = choice()
    if chosen == "exact":
        return []
    polars = [_polars(stream.split_kineto), _polars(stream.split_any)]
    return [_native, *polars] if chosen == "native" and _kscan is not None else polars


def native_with_args() -> bool:
    """True where the compiled scanner reads the events of a read that keeps args (their args
    then read by the polars path alone: kineto.ArgsOf): it is built and chosen."""
    return _kscan is not None and choice() == "native"


def _native(
    path: AnyPath, keep_args: bool, *, max_bytes: int | None
) -> tuple[dict[str, Any], pl.DataFrame | Records, int]:
    return native_scan(path, bool(keep_args), max_bytes=max_bytes, table=False)


def _polars(split: stream.Split) -> Scan:
    def run(
        path: AnyPath, keep_args: bool, *, max_bytes: int | None
    ) -> tuple[dict[str, Any], pl.DataFrame, int]:
        return (*stream.scan(path, split, keep_args, max_bytes=max_bytes), 0)

    return run


def native_scan(
    path: AnyPath,
    keep_args: bool,
    *,
    max_bytes: int | None,
    table: bool = True,
    spans: bool = False,
) -> tuple[dict[str, Any], Any, int]:
    """Return the trace's top-level keys but traceEvents, its records but the metadata ones as
    the raw table (or, not ``table``, as the scanner's Records: with ``spans``, where each
    event's args lie, where it can say), and the count of metadata records; NotFast where the
    scanner declines."""
    if _kscan is None or keep_args:
        raise NotFast("the compiled scanner is not built, or args_json is asked for")
    cap = cap_for(path, max_bytes) if path.name.endswith(".gz") else None
    scanner = _kscan.Scanner()
    early = taken(path)  # the scan begun while polars loaded (ahead.py), if any
    try:
        if early is not None:
            meta, scanner = early.result()
        else:
            with open_trace(path) as f:
                meta = feed(Reader(f, path, cap), scanner)
    except (OSError, EOFError, zlib.error, orjson.JSONDecodeError, _kscan.Decline) as e:
        if isinstance(e, orjson.JSONDecodeError):
            out_of_memory(e)
        raise NotFast(str(e)) from e
    rows, metadata = scanner.counts()
    # where each record's args lie is known of a plain file's bytes (not inflated, not an
    # archive member's), every block fed with its offset (kineto_bytes.feed)
    plain = isinstance(path, Path) and not path.name.endswith(".gz") and scanner.placed()
    records = Records(scanner, rows, spans=spans and plain)
    return meta, records.table() if table else records, metadata


def _table(scanner: Any, rows: int) -> pl.DataFrame:
    """Return the raw table of what ``scanner`` read: its columns, taken without a copy, with
    the three texts looked up in its names (dictionary-encoded, as the other paths keep them)."""
    if not rows:
        return pl.DataFrame(schema=RAW_SCHEMA)
    cols = pl.DataFrame(scanner)  # the Arrow C data interface: the scanner's own buffers
    names = pl.Series(scanner.names(), dtype=pl.String).cast(Text)
    texts = {c: names.gather(cols[c]) for c in TEXTS}
    return cols.with_columns(**texts, args_json=pl.lit(None, pl.String)).select(*RAW_SCHEMA)
