"""A run's tables (``questions.tables.analysis``) written as Parquet files in one folder, and a
manifest.

Each table goes to ``<name>.parquet``, written by polars (no pyarrow), with traceana's
version, the tables' schema version, the table's name and the profile it came from in the
file's key-value metadata. ``tables.json`` beside them lists each file's rows and columns
(name and type) with the same version and source (docs/tables.md). Every file is written
beside itself and renamed into place (``atomic.write_atomic``); a write that fails removes
the files this call wrote before it, so the folder is left as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from trace_analyzer._version import __version__
from trace_analyzer.atomic import write_atomic
from trace_analyzer.questions.tables.analysis import NAMES, SCHEMA_VERSION

MANIFEST = "tables.json"


def files(folder: Path) -> list[Path]:
    """Return the files ``write`` writes in ``folder``: one per table, then the manifest."""
    return [folder / f"{name}.parquet" for name in NAMES] + [folder / MANIFEST]


def manifest(frames: dict[str, pl.DataFrame], source: str) -> dict[str, Any]:
    """Return the manifest of ``frames`` (by table name) read from ``source``."""
    return {
        "traceana_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "source": source,
        "tables": {
            name: {
                "file": f"{name}.parquet",
                "rows": frame.height,
                "columns": {c: str(t) for c, t in frame.schema.items()},
            }
            for name, frame in frames.items()
        },
    }


def write(frames: dict[str, pl.DataFrame], folder: Path, source: str) -> None:
    """Write ``frames`` (by table name) and their manifest in ``folder``, which exists.

    Any exception (a full disk) removes what this call wrote and propagates.
    """
    written: list[Path] = []
    try:
        for name, frame in frames.items():
            target = folder / f"{name}.parquet"
            meta = {
                "traceana_version": __version__,
                "traceana_schema_version": str(SCHEMA_VERSION),
                "traceana_table": name,
                "traceana_source": source,
            }
            write_atomic(target, _writer(frame, meta))
            written.append(target)
        doc = orjson.dumps(manifest(frames, source), option=orjson.OPT_INDENT_2) + b"\n"
        write_atomic(folder / MANIFEST, lambda tmp: tmp.write_bytes(doc))
    except BaseException:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        raise


def _writer(frame: pl.DataFrame, meta: dict[str, str]) -> Callable[[Path], None]:
    """Return what writes ``frame`` as Parquet, with ``meta`` in its key-value metadata."""
    return lambda tmp: frame.write_parquet(tmp, metadata=meta)
