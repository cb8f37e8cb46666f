"""The args of a Kineto trace's events read from its file when they are written, not held.

The compiled scanner (_kscan.c) says where each record's args object lies in a plain file's
bytes (``args_at``: its offset shifted past its length, ``SPAN_LEN_BITS``); a read that asks
for args ``LATER`` (model/schema.py: ``traceana export``) keeps that instead of their text,
and ``ArgsAt.texts`` reads the args of the rows it is given, a batch at a time, with one
``pread`` each. A run's args are as large as its events (180 bytes an event in a 457 MB
trace): so the export holds neither (docs/benchmarks.md, "Export"). A file whose size,
modification time or inode has changed since ``ArgsAt`` was made (as the run was read) is an
InputError, as is a span that is not an object's bytes.
"""

from __future__ import annotations

import os

import polars as pl

from trace_analyzer.errors import InputError

SPAN_LEN_BITS = 24  # _kscan.c: an args_at's low bits are its object's length
LEN_MASK = (1 << SPAN_LEN_BITS) - 1
CHANGED = "changed since it was read: read it again (its args are read from it as written)"


class ArgsAt:
    """The files of a run's events that hold their args (``args_at``), as they were when this
    was made (their size and modification time): made as the run is read."""

    def __init__(self, events: pl.DataFrame):
        files = events.filter(pl.col("args_at").is_not_null())["file"].unique()
        self._files = {name: _stat(os.stat(name)) for name in files.cast(pl.String).to_list()}

    def texts(self, rows: pl.DataFrame) -> list[str | None]:
        """The args JSON of each of ``rows`` (``file``, ``args_at``): its text where it lies in
        a file, else None."""
        out: list[str | None] = [None] * rows.height
        if not self._files:
            return out
        at = rows.select(pl.col("file").cast(pl.String), "args_at").with_row_index("i")
        for (name,), part in at.drop_nulls("args_at").group_by("file"):
            with open(str(name), "rb") as f:
                fd = f.fileno()
                if _stat(os.fstat(fd)) != self._files[str(name)]:
                    raise InputError(str(name), CHANGED)
                for i, span in part.select("i", "args_at").iter_rows():
                    data = os.pread(fd, span & LEN_MASK, span >> SPAN_LEN_BITS)
                    if data[:1] != b"{" or data[-1:] != b"}":
                        raise InputError(str(name), CHANGED)
                    out[i] = data.decode()
        return out


def _stat(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ino
