"""The args of a Kineto trace read by the compiled scanner (kineto_native.py), which keeps
none: read again by the polars streaming path (kineto_stream.py) with only the columns that
place each record beside its args, and set on the scanner's events (``ArgsOf``). A read that
keeps args (``traceana export``, ``tables``, ``ta.load(args=True)``) so holds the events and
a narrow table, not the polars path's whole table with its args beside the events it makes
(docs/benchmarks.md, "Export: streaming the document")."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from trace_analyzer.inputs.archive import AnyPath
from trace_analyzer.readers import kineto_stream as stream
from trace_analyzer.readers.kineto_bytes import NotFast


class ArgsOf:
    """The ``args_json`` of the compiled scanner's events, read again by the polars path with
    only the events' name and ts, which place each beside the scanner's, and their args: the
    scanner keeps no args, and the polars path's whole table with them took twice the memory
    of the events (docs/benchmarks.md, "Export"). The events of both are the X records of
    event categories in file order; where the names or starts of the two differ, NotFast, and
    the file is read the polars path's way."""

    def __init__(
        self,
        path: AnyPath,
        cap: int | None,
        ns: Callable[[str, int], pl.Expr],
        events: pl.Expr,
        only: str | None = None,
    ):
        # ns: a µs column as ns after a base; events: the raw records that are events; only:
        # a regex of the names whose args are kept (the others' are null), None for all
        self.path, self.cap, self.ns, self.events = path, cap, ns, events
        self.only = only

    def __call__(self, rows: pl.DataFrame, base: int) -> pl.DataFrame:
        """Return ``rows`` (the scanner's events, ``base`` their clock) with their args."""
        for split in (stream.split_kineto, stream.split_any):
            try:
                _, raw = stream.scan(self.path, split, True, max_bytes=self.cap, keep=self._events)
                break
            except NotFast:
                continue
        else:
            raise NotFast("the polars path does not read it either")
        ev = raw.select(name=pl.col("name").cast(pl.String), start_ns=self.ns("ts", base))
        args = raw["args_json"]
        del raw
        placed = ev.height == rows.height and (
            ev["name"].equals(rows["name"].cast(pl.String))
            and ev["start_ns"].equals(rows["start_ns"])
        )
        if not placed:
            raise NotFast("the args' records are not the scanner's events")
        return rows.with_columns(args_json=args)

    def _events(self, block: pl.DataFrame) -> pl.DataFrame:
        """What is kept of a block's records: the events' name, ts and args (``only``: of the
        names it matches)."""
        kept = block.filter(self.events.fill_null(False)).select("name", "ts", "args_json")
        if self.only is None:
            return kept
        named = pl.col("name").cast(pl.String).str.contains(self.only).fill_null(False)
        return kept.with_columns(args_json=pl.when(named).then("args_json"))
