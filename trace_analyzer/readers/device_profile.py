"""Device-profile exports: the Explorer Parquet tables of one NTFF and its NEFFs, read into
model/device.py's ``DeviceProfile`` (docs/formats.md, "Device profiles").

Every table is read by column name (``<Table>.parquet``, or its parts ``<Table>_<n>.parquet``
concatenated), never by position, so that an export of another schema version reads as far as
its columns allow: an unknown ``Metadata.profile_schema_version`` major is a note, a column
the reader uses and the schema marks required is an error naming it, an optional one absent is
null and named in the notes, an optional table absent is named in ``missing``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import is_archive
from trace_analyzer.inputs.device import (
    DEVICE_LIST,
    JSON_NAME,
    find_exports,
    find_lists,
    neffs_near,
    parse_name,
    profile_name,
    table_files,
    table_pattern,
    unexported,
)
from trace_analyzer.inputs.limits import PARAM, refuse_inflating_parquet
from trace_analyzer.model import device as contract
from trace_analyzer.model.device import (
    BYTE_COLUMNS,
    FLOP_COLUMNS,
    KNOWN_MAJORS,
    OPTIONAL_TABLES,
    WAIT_OPCODE_PREFIX,
    DeviceProfile,
    DeviceRun,
)

_I, _S, _F = pl.Int64(), pl.String(), pl.Float64()
Columns = dict[str, pl.DataType]

# Per table: the columns read (schema 7.4.0 names, the type read as), and those of them the
# schema marks required that the reader cannot do without (an error when absent). Required
# columns the reader derives or defaults (duration_ns, pcore_idx) are noted when absent.
INSTRUCTION: Columns = {
    "start_ts": _I,
    "end_ts": _I,
    "duration_ns": _I,
    "engine": _S,
    "pcore_idx": _I,
    "opcode": _S,
    "hlo_name": _S,
    "nki_source_location": _S,
    **dict.fromkeys(BYTE_COLUMNS, _I),
    **dict.fromkeys(FLOP_COLUMNS, _I),
}
ACTIVE: Columns = {"start_ts": _I, "end_ts": _I, "duration_ns": _I, "engine": _S, "pcore_idx": _I}
DMA: Columns = {
    "start_ts": _I,
    "end_ts": _I,
    "duration_ns": _I,
    "pcore_idx": _I,
    "queue_name": _S,
    "queue_type": _S,
    "read_bytes": _I,
    "write_bytes": _I,
    "transfer_bytes": _I,
}
THROTTLE: Columns = {"timestamp": _I, "duration": _I, "type": _S, "pcore_idx": _I}
EXECUTION: Columns = {
    "execution_index": _I,
    "neff_name": _S,
    "execution_start_ts": _I,
    "execution_end_ts": _I,
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "Instruction": ("start_ts", "end_ts", "engine", "opcode"),
    "ActiveTime": ("start_ts", "end_ts", "engine"),
    "DmaPacketAggregated": ("start_ts", "end_ts", "transfer_bytes"),
    "DmaPacket": ("start_ts", "end_ts", "transfer_bytes"),
    "Throttle": ("timestamp", "duration"),
    "ExecutionInfo": ("execution_index",),
}


class _Every:
    """Every column: what a table read whole inflates to counts all of its columns."""

    def __contains__(self, name: object) -> bool:
        return True


# The tables read and the columns read of each (``_Every``: the table whole), as the cap on
# what they inflate to counts them (``refuse_inflating``).
READ: dict[str, Any] = {
    "Instruction": INSTRUCTION,
    "DmaPacketAggregated": DMA,
    "ActiveTime": ACTIVE,
    "Throttle": THROTTLE,
    "ExecutionInfo": EXECUTION,
    **dict.fromkeys(("Metadata", "Summary", "OpcodeSummary", "NeffHeader"), _Every()),
}


def refuse_inflating(folder: Path, max_bytes: int | None) -> None:
    """Refuse (an InputError naming ``max_bytes``) an export whose tables, the columns read,
    inflate past the cap (``max_bytes``; None: the default), as a system profile's Parquet
    is refused (``inputs.limits``). A table whose footer cannot be parsed is left for the
    read to say so."""
    read = dict(READ)
    if not table_files(folder, "DmaPacketAggregated"):
        read["DmaPacket"] = DMA
    for table, columns in read.items():
        try:
            refuse_inflating_parquet(table_files(folder, table), max_bytes, columns)
        except InputError as e:
            if e.param == PARAM:
                raise


def _read_files(files: list[Path], columns: Columns | None = None) -> list[pl.DataFrame]:
    """Return each file's table (only ``columns`` that it has, when given)."""
    frames = []
    for f in files:
        try:
            have = pl.read_parquet_schema(f)
            wanted = None if columns is None else [c for c in columns if c in have]
            frames.append(pl.read_parquet(f, columns=wanted))
        except (Exception, pl.exceptions.PanicException) as e:  # a bad file; a decoder panic
            first = (str(e).splitlines() or ["?"])[0]
            problem = f"not a readable Parquet table ({type(e).__name__}: {first})"
            raise InputError(f, problem) from e
    return frames


def read_table(
    folder: Path,
    table: str,
    columns: Columns,
    notes: list[str],
    absent_out: dict[str, tuple[str, ...]] | None = None,
) -> pl.DataFrame | None:
    """Return ``table``'s ``columns`` (typed; absent optional ones null, noted, and named in
    ``absent_out[table]``), its parts concatenated; None when the export has no such table."""
    files = table_files(folder, table)
    if not files:
        return None
    frames, absent = [], set()
    for f, df in zip(files, _read_files(files, columns), strict=True):
        lacking = [c for c in REQUIRED.get(table, ()) if c not in df.columns]
        if lacking:
            plural = "s" * (len(lacking) > 1)
            raise InputError(f, f"{table} lacks the required column{plural} {', '.join(lacking)}")
        casts = []
        for col, dtype in columns.items():
            if col not in df.columns:
                absent.add(col)
                casts.append(pl.lit(None, dtype=dtype).alias(col))
                continue
            try:
                df.select(pl.col(col).cast(dtype, strict=True))
            except (Exception, pl.exceptions.PanicException) as e:
                raise InputError(
                    f, f"{table} column {col} has type {df.schema[col]}, expected {dtype}"
                ) from e
            casts.append(pl.col(col).cast(dtype))
        frames.append(df.select(casts))
    if absent:
        names = ", ".join(c for c in columns if c in absent)
        notes.append(f"{folder}: {table} has no {names} column{'s' * (len(absent) > 1)}: null")
        if absent_out is not None:
            absent_out[table] = tuple(c for c in columns if c in absent)
    return pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]


def read_whole(folder: Path, table: str) -> pl.DataFrame | None:
    """Return every column of ``table`` as exported (parts concatenated), or None."""
    files = table_files(folder, table)
    if not files:
        return None
    frames = _read_files(files)
    return pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]


def _first_row(df: pl.DataFrame | None) -> dict[str, Any] | None:
    return df.row(0, named=True) if df is not None and df.height else None


def _schema_notes(folder: Path, metadata: dict[str, Any], notes: list[str]) -> str | None:
    """Return Metadata's schema version; an unknown major, or none at all, is noted."""
    version = metadata.get("profile_schema_version")
    if version is None:
        if metadata:
            notes.append(f"{folder}: Metadata has no profile_schema_version: read by column name")
        return None
    major = str(version).split(".")[0]
    if not (major.isdigit() and int(major) in KNOWN_MAJORS):
        known = ", ".join(map(str, KNOWN_MAJORS))
        notes.append(
            f"{folder}: profile schema {version} (major {major}) is not one traceana knows "
            f"({known}.x): its tables are read by column name, and what they lack is named"
        )
    return str(version)


def _ids(name: str, listed: dict[str, Any] | None) -> dict[str, Any]:
    """instance_id, process_id, nc_id (and session_id): the list's row, else the name's."""
    if listed:
        return {k: listed.get(k) for k in ("instance_id", "process_id", "nc_id", "session_id")}
    return dict(parse_name(name) or {})


def lane_prefix(name: str, ids: dict[str, Any]) -> str:
    """The lane of a profile's hardware, up to ``NC<lnc>``: ``<instance>/PID:<pid>/neuron_hw
    /NC<lnc>`` when known, else ``device/<name>/NC``; a lane adds ``:<pcore>/<engine>``."""
    inst, pid, nc = ids.get("instance_id"), ids.get("process_id"), ids.get("nc_id")
    if inst is not None and pid is not None and nc is not None:
        return f"{inst}/PID:{pid}/neuron_hw/NC{nc}"
    return f"device/{name}/NC"


def engine_lane(prefix: str, engine: pl.Expr) -> pl.Expr:
    """A device row's lane: its profile's ``prefix``, ``:<pcore>/<engine>``."""
    return pl.concat_str(pl.lit(f"{prefix}:"), pl.col("pcore").cast(pl.String), pl.lit("/"), engine)


def instruction_rows(
    raw: pl.DataFrame, prefix: str, span: dict[str, pl.Expr], engine: pl.Expr, pcore: pl.Expr
) -> pl.DataFrame:
    """The Instruction contract's rows (model/device.py) of ``raw``, an export's instructions
    (the Parquet table, or the JSON export's list), given how its rows say their ``span``
    (start, end, duration), ``engine`` and physical core; the other columns keep their names."""
    return raw.select(
        **span,
        engine=engine,
        pcore=pcore,
        opcode=pl.col("opcode"),
        wait=pl.col("opcode").str.starts_with(WAIT_OPCODE_PREFIX).fill_null(False),
        hlo_name=pl.col("hlo_name"),
        nki_source_location=pl.col("nki_source_location"),
        **{c: pl.col(c) for c in (*BYTE_COLUMNS, *FLOP_COLUMNS)},
    ).with_columns(lane=engine_lane(prefix, pl.col("engine")))


def _executions(folder: Path, notes: list[str]) -> pl.DataFrame | None:
    df = read_table(folder, "ExecutionInfo", EXECUTION, notes)
    if df is None:
        return None
    return df.select(
        execution=pl.col("execution_index"),
        neff=pl.col("neff_name"),
        start_ns=pl.col("execution_start_ts"),
        end_ns=pl.col("execution_end_ts"),
    ).sort("start_ns", nulls_last=True)


def _only_neff(folder: Path, execs: pl.DataFrame | None) -> str | None:
    """The NEFF of every row when no execution has times: ExecutionInfo's one NEFF name,
    else the one NEFF file in the folder or beside it, else None."""
    if execs is not None:
        names = execs["neff"].drop_nulls().unique()
        return str(names[0]) if names.len() == 1 else None
    near = neffs_near(folder)
    return near[0] if len(near) == 1 else None


def assign(df: pl.DataFrame, execs: pl.DataFrame | None, only: str | None) -> pl.DataFrame:
    """Add ``neff`` and ``execution`` to rows with ``start_ns``: the execution whose
    [start, end) holds the row's start; ``only`` (and no execution) when none has times."""
    timed = None if execs is None else execs.filter(pl.col("start_ns").is_not_null())
    if timed is None or timed.height == 0:
        return df.with_columns(neff=pl.lit(only, dtype=pl.String), execution=pl.lit(None, _I))
    right = timed.select(
        _xs=pl.col("start_ns"), _xe=pl.col("end_ns"), _x=pl.col("execution"), _n=pl.col("neff")
    ).sort("_xs")
    joined = (
        df.with_row_index("_row")
        .sort("start_ns")
        .join_asof(right, left_on="start_ns", right_on="_xs", strategy="backward")
    )
    inside = pl.col("_xe").is_null() | (pl.col("start_ns") < pl.col("_xe"))
    return (
        joined.with_columns(
            neff=pl.when(inside).then(pl.col("_n")),
            execution=pl.when(inside).then(pl.col("_x")),
        )
        .sort("_row")
        .drop("_row", "_xs", "_xe", "_x", "_n")
    )


def _span() -> dict[str, pl.Expr]:
    """The start, end and duration (ns) of a row of a timed table: its ``start_ts``,
    ``end_ts`` and ``duration_ns`` (computed where the export has none)."""
    return {
        "start_ns": pl.col("start_ts"),
        "end_ns": pl.col("end_ts"),
        "duration_ns": pl.col("duration_ns").fill_null(pl.col("end_ts") - pl.col("start_ts")),
    }


def _instructions(raw: pl.DataFrame, prefix: str) -> pl.DataFrame:
    engine, pcore = pl.col("engine").str.to_lowercase(), pl.col("pcore_idx").fill_null(0)
    return instruction_rows(raw, prefix, _span(), engine, pcore)


def _active(raw: pl.DataFrame, prefix: str) -> pl.DataFrame:
    return raw.select(
        **_span(),
        engine=pl.col("engine").str.to_lowercase(),
        pcore=pl.col("pcore_idx").fill_null(0),
    ).with_columns(lane=engine_lane(prefix, pl.col("engine")))


def _dma(raw: pl.DataFrame, prefix: str) -> pl.DataFrame:
    return raw.select(
        **_span(),
        pcore=pl.col("pcore_idx").fill_null(0),
        queue_name=pl.col("queue_name"),
        queue_type=pl.col("queue_type"),
        read_bytes=pl.col("read_bytes"),
        write_bytes=pl.col("write_bytes"),
        transfer_bytes=pl.col("transfer_bytes"),
    ).with_columns(lane=engine_lane(prefix, pl.lit("dma")))


def _throttle(raw: pl.DataFrame) -> pl.DataFrame:
    return raw.select(
        timestamp_ns=pl.col("timestamp"),
        duration_ns=pl.col("duration"),
        type=pl.col("type"),
        pcore=pl.col("pcore_idx").fill_null(0),
    )


def _order(df: pl.DataFrame, columns: dict[str, type[pl.DataType]]) -> pl.DataFrame:
    """The contract's columns, in its order (model/device.py)."""
    return df.select(list(columns))


def _network(folder: Path) -> str | None:
    """The network name of the NEFF header (``NeffHeader.network_name``; not one of the tables
    the figures read, so its absence is not noted), else None."""
    header = _first_row(read_whole(folder, "NeffHeader")) or {}
    name = header.get("network_name")
    return str(name) if isinstance(name, str) and name else None


def read_device_profile(
    folder: Path, listed: dict[str, Any] | None = None, *, max_bytes: int | None = None
) -> DeviceProfile:
    """Return the device-profile export in ``folder``; ``listed``: its ``DeviceProfileList``
    row, when a system profile lists it (its name, instance, process and core);
    ``max_bytes``: the most its tables may inflate to (``refuse_inflating``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, "not a folder: a device-profile export is a folder of tables")
    refuse_inflating(folder, max_bytes)
    notes: list[str] = []
    absent: dict[str, tuple[str, ...]] = {}
    raw = read_table(folder, "Instruction", INSTRUCTION, notes, absent)
    if raw is None:
        raise InputError(
            folder, "no Instruction table (Instruction.parquet): not a device-profile export"
        )
    name = str(listed["device_profile_name"]) if listed else profile_name(folder.name)
    ids = _ids(name, listed)
    metadata = _first_row(read_whole(folder, "Metadata")) or {}
    version = _schema_notes(folder, metadata, notes)
    prefix = lane_prefix(name, ids)
    execs = _executions(folder, notes)
    only = _only_neff(folder, execs)
    ins = assign(_instructions(raw, prefix), execs, only)
    dma_raw = read_table(folder, "DmaPacketAggregated", DMA, notes)
    if dma_raw is None:
        dma_raw = read_table(folder, "DmaPacket", DMA, notes)
    active_raw = read_table(folder, "ActiveTime", ACTIVE, notes)
    throttle_raw = read_table(folder, "Throttle", THROTTLE, notes)
    optional: dict[str, Any] = {}
    if execs is not None:
        optional["executions"] = _order(execs, contract.EXECUTION_COLUMNS)
    if active_raw is not None:
        optional["active"] = _order(_active(active_raw, prefix), contract.ACTIVE_COLUMNS)
    if dma_raw is not None:
        dma = assign(_dma(dma_raw, prefix), execs, only).drop("execution")
        optional["dma"] = _order(dma, contract.DMA_COLUMNS)
    if throttle_raw is not None:
        optional["throttle"] = _throttle(throttle_raw)
    return DeviceProfile(
        root=folder,
        name=name,
        instance_id=ids.get("instance_id"),
        process_id=ids.get("process_id"),
        nc_id=ids.get("nc_id"),
        schema_version=version,
        metadata=metadata,
        summary=_first_row(read_whole(folder, "Summary")),
        network=_network(folder),
        instructions=_order(ins, contract.INSTRUCTION_COLUMNS),
        opcodes=read_whole(folder, "OpcodeSummary"),
        missing=tuple(t for t in OPTIONAL_TABLES if not table_files(folder, t)),
        notes=tuple(notes),
        absent=absent,
        **optional,
    )


def listed_profiles(top: Path, max_bytes: int | None = None) -> dict[str, dict[str, Any]]:
    """Return the DeviceProfileList rows found under ``top``, by device_profile_name (each
    table refused past ``max_bytes``, as ``refuse_inflating``)."""
    rows: dict[str, dict[str, Any]] = {}
    for f in find_lists(top):
        refuse_inflating_parquet([f], max_bytes, _Every())
        df = pl.concat(_read_files([f]), how="diagonal_relaxed")
        if "device_profile_name" not in df.columns:
            raise InputError(f, f"{DEVICE_LIST} lacks the required column device_profile_name")
        for row in df.iter_rows(named=True):
            rows.setdefault(str(row["device_profile_name"]), row)
    return rows


def load_device(path: Path, *, max_bytes: int | None = None) -> DeviceRun:
    """Return every device-profile export under ``path`` (or ``path`` itself, one export:
    an ``Instruction`` table of a Parquet export, or a neuron-profile JSON export),
    each matched to its ``DeviceProfileList`` row under ``path`` by name, and the NEFF/NTFF
    pairs under ``path`` that have no export, each with the command that exports it.
    ``max_bytes``: the most a ``.json.gz`` export, or an export's Parquet table, may inflate
    to (None: ``limits.default_max_bytes()``), as for the system profile (docs/reliability.md);
    what the search passed by (a folder it cannot read) is in the run's ``passed``."""
    from trace_analyzer.readers.device_json import json_exports, read_device_json

    top = Path(path)
    if not top.exists():
        raise InputError(top, "no such file or folder")
    if top.is_file():
        if is_archive(top):
            raise InputError(
                top, "device-profile exports are read from folders, not archives: extract it"
            )
        if JSON_NAME.search(top.name):  # a neuron-profile JSON export, or an error saying so
            return DeviceRun(root=top, profiles=[read_device_json(top, max_bytes=max_bytes)])
        if not table_pattern("Instruction").match(top.name):
            raise InputError(
                top, "not a device-profile export (a folder of Instruction.parquet, or the "
                "JSON of neuron-profile view --output-format json)"
            )  # fmt: skip
        top = top.parent
    listed = listed_profiles(top, max_bytes)
    passed: list[tuple[Path, str]] = []
    profiles = [
        read_device_profile(f, listed.get(profile_name(f.name)), max_bytes=max_bytes)
        for f in find_exports(top, passed)
    ]
    profiles += json_exports(top, max_bytes=max_bytes)
    keys = {_key(_ids(p.name, listed.get(profile_name(p.root.name)))) for p in profiles}
    stems = {p.root.name for p in profiles} | {p.name for p in profiles}
    missing = unexported(top, keys, stems, max_bytes=max_bytes)
    return DeviceRun(root=top, profiles=profiles, unexported=missing, passed=passed)


def _key(ids: dict[str, Any]) -> tuple[Any, Any, Any]:
    return ids.get("process_id"), ids.get("nc_id"), ids.get("session_id")
