"""Neuron Explorer Parquet export: ``SystemProfileEvents[_N].parquet`` and its companions.

Columns are those of schema 7.4.0 (format notes §2.1). The version is read from
``Metadata.parquet`` when present; an unknown major version is a warning, and the tables are
then read by column name. A missing required column is an error that names it.
"""

from __future__ import annotations

import polars as pl

from ..archive import parquet_input
from ..discover import PARQUET_EVENTS, Source
from ..errors import InputError
from ..schema import conform
from .common import ReadResult, assign_steps
from .neuron import EXTRA_COLUMNS, label, mark_dispatch

KNOWN_MAJOR = 7
REQUIRED = {"id": pl.Int64, "name": pl.String, "start_ts": pl.Int64, "end_ts": pl.Int64,
            "trace_event_source": pl.String, "process_id": pl.Int64}
OPTIONAL = {"duration_ns": pl.Int64, "instance_id": pl.String, "thread_id": pl.Int64,
            "nc_idx": pl.Int64, "pcore_idx": pl.Int64, "flow_id": pl.List(pl.String),
            "framework_stream_id": pl.String, "extra_attributes_json": pl.String}
COMPANIONS = ("SystemProfileMetadata", "Metadata", "SchemaFields", "CpuUsage", "HostMemUsage")


def tables(folder) -> list:
    """Return the SystemProfileEvents files of an export folder, split parts in order."""
    parts = [(m[1], p) for p in folder.iterdir() if (m := PARQUET_EVENTS.match(p.name))]
    return [p for _, p in sorted(parts, key=lambda mp: int(mp[0][1:]) if mp[0] else -1)]


def read(src: Source) -> ReadResult:
    """Return the events of one Parquet export folder."""
    result = ReadResult(source=src, format="explorer-parquet")
    result.schema_version = _schema_version(src, result)
    frames = [_read_table(p) for p in tables(src.path)]
    raw = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
    present = [c for c in COMPANIONS if any(src.path.glob(f"{c}*.parquet"))]
    result.notes.append(f"{len(frames)} SystemProfileEvents file(s); companions: {', '.join(present) or 'none'}")
    events = mark_dispatch(label(_columns(raw)).with_columns(file=pl.lit(str(src.path))))
    result.events = assign_steps(conform(events))
    return result


def _read_table(path) -> pl.DataFrame:
    try:
        df = pl.read_parquet(parquet_input(path))
    except Exception as e:  # polars raises several error types for a bad file
        raise InputError(path, f"not a readable Parquet table ({type(e).__name__}: {str(e).splitlines()[0]})") from e
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(path, f"missing required column{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    casts = []
    for col, dtype in {**REQUIRED, **OPTIONAL}.items():
        if col not in df.columns:
            casts.append(pl.lit(None, dtype=dtype).alias(col))
            continue
        try:
            df.select(pl.col(col).cast(dtype, strict=True))
        except Exception as e:
            raise InputError(path, f"column {col} has type {df.schema[col]}, expected {dtype}") from e
        casts.append(pl.col(col).cast(dtype))
    return df.select(casts)


def _columns(raw: pl.DataFrame) -> pl.DataFrame:
    extra = pl.col("extra_attributes_json")
    return raw.select(
        orig_id=pl.col("id"),
        name=pl.col("name"),
        source=pl.col("trace_event_source"),
        start_ns=pl.col("start_ts"),
        end_ns=pl.col("end_ts"),
        duration_ns=pl.col("duration_ns").fill_null(pl.col("end_ts") - pl.col("start_ts")),
        host=pl.col("instance_id"),
        pid=pl.col("process_id"),
        tid=pl.col("thread_id"),
        device=pl.col("nc_idx"),
        core=pl.col("pcore_idx"),
        stream=pl.col("framework_stream_id").cast(pl.Int64, strict=False),
        flow_ids=pl.col("flow_id").list.eval(pl.element().cast(pl.Int64, strict=False)),
        args_json=extra,
        **{col: extra.str.json_path_match(f"$.{key}").cast(pl.Int64, strict=False)
           for key, col in EXTRA_COLUMNS.items()},
    )


def _schema_version(src: Source, result: ReadResult) -> str | None:
    meta = sorted(src.path.glob("Metadata*.parquet"))
    if not meta:
        result.notes.append("schema version unknown (no Metadata table); read by column name")
        return None
    try:
        col = pl.read_parquet(parquet_input(meta[0]), columns=["profile_schema_version"])["profile_schema_version"]
    except Exception:
        result.notes.append(f"{meta[0].name} has no profile_schema_version; read by column name")
        return None
    version = str(col.drop_nulls()[0]) if col.drop_nulls().len() else None
    major = version.split(".")[0] if version else None
    if version and (not major.isdigit() or int(major) != KNOWN_MAJOR):
        result.warnings.append(
            f"{src.path}: Explorer schema {version} is not the {KNOWN_MAJOR}.x traceana knows; read by column name"
        )
    return version
