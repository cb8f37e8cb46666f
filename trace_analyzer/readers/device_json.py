"""The ``neuron-profile view --output-format json`` device export: one JSON object for one
NEFF/NTFF pair, read into model/device.py's ``DeviceProfile``, the same tables the Explorer
Parquet export gives (readers/device_profile.py), so that ``traceana engines`` reads either.

The mapping, field by field, and what each rests on (documented, observed in the real
Trainium2 exports of ``../shared/corpus/real3/allenkchau/``, or inferred) is in
docs/formats.md, "The neuron-profile JSON export". In short: ``instruction`` rows are
``Instruction`` (``timestamp``/``duration`` → start and duration, ``subgroup`` → engine),
``active_time`` rows are ``ActiveTime`` (the same field names), ``dma`` rows are per-packet
``DmaPacket``; ``summary``, ``metadata`` are their tables' one row; a row's physical core is
its ``subgraph``'s (``sg00`` → 0, as ``active_time`` pairs them). What the export lacks next
to the Parquet tables (``ExecutionInfo``, ``OpcodeSummary``, ``Throttle``, the FLOP columns,
...) is named in one note, never an error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.device import find_json_exports, neffs_near
from trace_analyzer.inputs.discover import Source
from trace_analyzer.model import device as contract
from trace_analyzer.model.device import (
    BYTE_COLUMNS,
    FLOP_COLUMNS,
    OPTIONAL_TABLES,
    DeviceProfile,
)
from trace_analyzer.readers.common import ReadResult, load_json
from trace_analyzer.readers.device_profile import (
    assign,
    engine_lane,
    instruction_rows,
    lane_prefix,
)
from trace_analyzer.readers.format import Format

NAME = "neuron-profile-json"
NOTE = (
    "a neuron-profile device-profile JSON export (one NEFF/NTFF pair's engines, instructions "
    "and DMA): no system events; `traceana engines` reads it"
)
# The top level that makes a document this export (docs/formats.md): what the sniff needs.
NEEDS = ("instruction", "active_time", "summary", "metadata")
# The Parquet tables it provides, the rest of model/device.OPTIONAL_TABLES being missing.
PROVIDES = ("ActiveTime", "DmaPacket", "Summary", "Metadata")
# Metadata's TensorEngine fields under the names the Parquet Metadata gives them (inferred:
# with them Summary's HFU is hardware_flops / (total_time × peak), to four digits).
METADATA_ALIASES = {
    "pe_num_rows": "tensor_engine_num_rows",
    "pe_num_cols": "tensor_engine_num_cols",
    "pe_clock_freq": "tensor_engine_clock_freq",
}
SUBGRAPH = re.compile(r"^sg0*(\d+)$")
_I, _S = pl.Int64(), pl.String()


def sniff(doc: dict[str, Any]) -> bool:
    """Return True for the export's top level: ``instruction`` (a list), ``active_time``,
    ``summary`` and ``metadata``."""
    return isinstance(doc.get("instruction"), list) and all(k in doc for k in NEEDS)


def read(src: Source, doc: dict[str, Any]) -> ReadResult:
    """The system view's answer (info, gaps): recognised, no system events, and the command
    that reads it."""
    return ReadResult.skipped(src, NAME, NOTE)


FORMAT = Format(
    NAME, "neuron-profile device-profile JSON export (read by `engines`)", "json",
    sniff=sniff, read=read,
)  # fmt: skip


def _rows(path: Path, doc: dict[str, Any], key: str) -> list[dict[str, Any]]:
    rows = doc.get(key, [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise InputError(path, f"{key} is not a list of objects: not a neuron-profile JSON export")
    return rows


def _column(
    path: Path, key: str, rows: list[dict[str, Any]], field: str, dtype: pl.DataType
) -> pl.Series:
    """One field of ``rows`` as a typed Series (null where a row has no such field)."""
    values = [r.get(field) for r in rows]
    if dtype == _S:
        values = [None if v in (None, "") else str(v) for v in values]
    try:
        return pl.Series(field, values, dtype=dtype, strict=True)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError) as e:
        raise InputError(path, f"{key}.{field} is not all {dtype}: {type(e).__name__}") from e


def _frame(path: Path, key: str, rows: list[dict[str, Any]], fields: dict[str, pl.DataType],
           required: tuple[str, ...]) -> tuple[pl.DataFrame, list[str]]:  # fmt: skip
    """``fields`` of ``rows`` (``key``'s), typed, and those no row has (null here); a
    ``required`` field that no row has is an InputError."""
    have = {f for r in rows for f in r}
    lacking = [f for f in required if rows and f not in have]
    if lacking:
        raise InputError(path, f"{key} rows lack {', '.join(lacking)}")
    frame = pl.DataFrame([_column(path, key, rows, f, t) for f, t in fields.items()])
    return frame, [f for f in fields if rows and f not in have and f not in required]


def pcores(doc: dict[str, Any]) -> dict[str, int]:
    """Each subgraph's physical core: as ``active_time`` rows pair them (observed: sg00 with
    pcore_idx 0, sg01 with 1), else the number in its name (``sgNN``)."""
    pairs: dict[str, int] = {}
    for r in doc.get("active_time") or []:
        if isinstance(r, dict) and isinstance(r.get("pcore_idx"), int):
            pairs.setdefault(str(r.get("subgraph")), r["pcore_idx"])
    return pairs


def _pcore(pairs: dict[str, int]) -> pl.Expr:
    def of(sg: str | None) -> int:
        if sg in pairs:
            return pairs[sg]
        m = SUBGRAPH.match(sg or "")
        return int(m[1]) if m else 0

    return pl.col("subgraph").map_elements(of, return_dtype=pl.Int64)


INSTRUCTION = {"timestamp": _I, "duration": _I, "subgroup": _S, "subgraph": _S, "opcode": _S,
               "hlo_name": _S, "nki_source_location": _S,
               **dict.fromkeys((*BYTE_COLUMNS, *FLOP_COLUMNS), _I)}  # fmt: skip
ACTIVE = {"start_ts": _I, "end_ts": _I, "duration_ns": _I, "engine": _S, "pcore_idx": _I}
DMA = {"timestamp": _I, "duration": _I, "subgraph": _S, "subgroup": _S, "queue_type": _S,
       "read_size": _I, "write_size": _I, "transfer_size": _I}  # fmt: skip


def _instructions(raw: pl.DataFrame, pairs: dict[str, int], prefix: str) -> pl.DataFrame:
    span = {
        "start_ns": pl.col("timestamp"),
        "end_ns": pl.col("timestamp") + pl.col("duration"),
        "duration_ns": pl.col("duration"),
    }
    return instruction_rows(raw, prefix, span, pl.col("subgroup").str.to_lowercase(), _pcore(pairs))


def _active(raw: pl.DataFrame, prefix: str) -> pl.DataFrame:
    return raw.select(
        start_ns=pl.col("start_ts"),
        end_ns=pl.col("end_ts"),
        duration_ns=pl.col("duration_ns").fill_null(pl.col("end_ts") - pl.col("start_ts")),
        engine=pl.col("engine").str.to_lowercase(),
        pcore=pl.col("pcore_idx").fill_null(0),
    ).with_columns(lane=engine_lane(prefix, pl.col("engine")))


def _dma(raw: pl.DataFrame, pairs: dict[str, int], prefix: str) -> pl.DataFrame:
    return raw.select(
        start_ns=pl.col("timestamp"),
        end_ns=pl.col("timestamp") + pl.col("duration"),
        duration_ns=pl.col("duration"),
        pcore=_pcore(pairs),
        queue_name=pl.col("subgroup"),
        queue_type=pl.col("queue_type"),
        read_bytes=pl.col("read_size"),
        write_bytes=pl.col("write_size"),
        transfer_bytes=pl.col("transfer_size"),
    ).with_columns(lane=engine_lane(prefix, pl.lit("dma")))


def _first(path: Path, doc: dict[str, Any], key: str) -> dict[str, Any]:
    rows = _rows(path, doc, key) if isinstance(doc.get(key), list) else []
    return dict(rows[0]) if rows else {}


def _summary(row: dict[str, Any]) -> dict[str, Any] | None:
    """The ``summary`` row, its ``*_percent`` fields as % (the export writes fractions:
    observed, ``tensor_engine_active_time_percent`` = ``tensor_engine_active_time`` /
    ``total_time``), its times in seconds as exported."""
    if not row:
        return None
    out = dict(row)
    for k, v in row.items():
        if k.endswith("_percent") and isinstance(v, int | float) and not isinstance(v, bool):
            out[k] = 100 * v
    return out


def _metadata(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for theirs, ours in METADATA_ALIASES.items():
        if theirs in row and ours not in row:
            out[ours] = row[theirs]
    return out


def _neff(path: Path, doc: dict[str, Any]) -> str | None:
    """The NEFF: ``neff_header.network_name``, else ``profile_info.neff_name`` (empty in the
    files seen), else the one NEFF beside the file or in its parent folder."""
    for key, field in (("neff_header", "network_name"), ("profile_info", "neff_name")):
        name = _first(path, doc, key).get(field)
        if isinstance(name, str) and name:
            return Path(name).name
    near = neffs_near(path.parent)
    return near[0] if len(near) == 1 else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def lacks_note(path: Path, missing: tuple[str, ...], absent: tuple[str, ...]) -> str:
    """The one note naming what the export lacks next to the Parquet tables."""
    cols = f"; its instructions have no {', '.join(absent)}" if absent else ""
    return (
        f"{path}: a neuron-profile JSON export: it has no {', '.join(missing)} table{cols} "
        "(a NEFF's window is its instructions' span; what needs a missing field is null)"
    )


def read_device_json(
    path: Path, doc: object | None = None, *, max_bytes: int | None = None
) -> DeviceProfile:
    """Return the device profile of the export ``path`` (``doc``: its parsed JSON, when
    already parsed; ``max_bytes``: the most a ``.json.gz`` export may inflate to)."""
    path = Path(path)
    doc = load_json(path, max_bytes=max_bytes) if doc is None else doc
    if not isinstance(doc, dict) or not sniff(doc):
        what = f"a JSON object with {', '.join(NEEDS)}: neuron-profile view --output-format json"
        raise InputError(path, f"not a neuron-profile device-profile JSON export ({what})")
    info = _first(path, doc, "profile_info")
    name = str(info.get("profile_name") or path.name.split(".")[0])
    prefix = lane_prefix(name, {})
    pairs = pcores(doc)
    raw, absent = _frame(path, "instruction", _rows(path, doc, "instruction"), INSTRUCTION,
                         ("timestamp", "duration", "subgroup", "opcode"))  # fmt: skip
    act, _ = _frame(path, "active_time", _rows(path, doc, "active_time"), ACTIVE,
                    ("start_ts", "end_ts", "engine"))  # fmt: skip
    dma, _ = _frame(path, "dma", _rows(path, doc, "dma"), DMA,
                    ("timestamp", "duration", "transfer_size"))  # fmt: skip
    absent = [c for c in absent if c in contract.INSTRUCTION_COLUMNS]
    neff = _neff(path, doc)
    ins = assign(_instructions(raw, pairs, prefix), None, neff)
    dmas = assign(_dma(dma, pairs, prefix), None, neff).drop("execution")
    missing = tuple(t for t in OPTIONAL_TABLES if t not in PROVIDES)
    return DeviceProfile(
        root=path,
        name=name,
        metadata=_metadata(_first(path, doc, "metadata")),
        summary=_summary(_first(path, doc, "summary")),
        network=_text(_first(path, doc, "neff_header").get("network_name")),
        instructions=ins.select(list(contract.INSTRUCTION_COLUMNS)),
        active=_active(act, prefix).select(list(contract.ACTIVE_COLUMNS)),
        dma=dmas.select(list(contract.DMA_COLUMNS)),
        missing=missing,
        notes=(lacks_note(path, missing, tuple(absent)),),
        absent={"Instruction": tuple(absent)} if absent else {},
    )


def json_exports(top: Path, *, max_bytes: int | None = None) -> list[DeviceProfile]:
    """Return the neuron-profile JSON exports under ``top`` (inputs/device.find_json_exports),
    read (a ``.json.gz`` one inflating to ``max_bytes`` at most); a candidate whose whole
    document is not one is passed by."""
    out = []
    for f in find_json_exports(top):
        doc = load_json(f, max_bytes=max_bytes)
        if isinstance(doc, dict) and sniff(doc):
            out.append(read_device_json(f, doc))
    return out
