"""A device profile: the Parquet tables Neuron Explorer exports for one NTFF and its NEFFs,
read into traceana's conventions (docs/device.md).

A device-profile export is a folder of ``<Table>.parquet`` files (a large table split into
``<Table>_0.parquet``, ``<Table>_1.parquet``, ...), written by ``neuron-explorer view -n X.neff
-s X.ntff --output-format parquet`` or listed by a system profile's ``DeviceProfileList``
(``../shared/docs/neuron-explorer-schema-7.4.0.csv``: every table and column of schema 7.4.0).
The reader (``readers/device_profile.py``) turns it into a ``DeviceProfile``: its tables with
the columns below, whatever the export's own spelling, so that the analyses
(``questions/engines/analysis.py``) never look at the files.

Conventions, as in the events table (docs/formats.md):

- times are integer ns, on the device profile's own clock, as exported (``ExecutionInfo``'s
  times are relative to the device-profile start; the other tables' as Explorer writes them);
- ``engine`` is lower case, ActiveTime's spelling (``tensor``, ``vector``, ``scalar``,
  ``gpsimd``, ``sync``, ...): ``Instruction.engine`` is capitalised in AWS's own example output
  (``Tensor``) and is lowered on read;
- ``pcore`` is the physical core (``pcore_idx``; 0 where the export has no such column);
- ``lane`` names the hardware lane as the events table does, one level down:
  ``<instance>/PID:<pid>/neuron_hw/NC<lnc>:<pcore>/<engine>`` (the prefix from the
  ``DeviceProfileList`` row of the profile, else from its name when it follows Explorer's
  ``..._<instance>_pid_<pid>_nc_<n>_session_<s>``, else ``device/<name>``); DMA rows end in
  ``/dma``;
- ``neff`` is the NEFF an instruction or DMA packet ran in: by ``ExecutionInfo`` time range
  (session mode: many NEFFs in one NTFF), else the export's one NEFF, else null.
- ``EVENT_SEMAPHORE`` instructions are waits, not work: they stay in ``instructions`` with
  ``wait`` true, and every figure of work leaves them out.
- A column the export lacks is null in every row, and named in ``notes``.

The ``Summary`` row is kept as exported, **times in seconds** as the schema has them; the
analyses convert.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

# The tables an export must hold, and those it may lack (the figures that need them are then
# null, and the table is named in ``DeviceProfile.missing``).
REQUIRED_TABLES = ("Instruction",)
OPTIONAL_TABLES = (
    "ActiveTime",
    "DmaPacketAggregated",
    "DmaPacket",
    "Summary",
    "OpcodeSummary",
    "Throttle",
    "ThrottleSummary",
    "Metadata",
    "ExecutionInfo",
)
# The schema major versions the reader knows; another warns and is read by column name.
KNOWN_MAJORS = (7,)
WAIT_OPCODE_PREFIX = "EVENT_SEMAPHORE"

_I, _S, _B = pl.Int64, pl.String, pl.Boolean
_SPAN: dict[str, type[pl.DataType]] = {"start_ns": _I, "end_ns": _I, "duration_ns": _I}
BYTE_COLUMNS = (
    "hbm_read_bytes",
    "hbm_write_bytes",
    "sbuf_read_bytes",
    "sbuf_write_bytes",
    "spill_save_bytes",
    "spill_reload_bytes",
    "psum_read_bytes",
    "psum_write_bytes",
)
FLOP_COLUMNS = ("raw_flops", "adjusted_flops", "flops_transpose", "adjusted_flops_transpose")

INSTRUCTION_COLUMNS: dict[str, type[pl.DataType]] = {
    **_SPAN,
    "engine": _S,
    "pcore": _I,
    "lane": _S,
    "opcode": _S,
    "wait": _B,  # an EVENT_SEMAPHORE wait
    "neff": _S,
    "execution": _I,  # ExecutionInfo.execution_index, null without ExecutionInfo
    "hlo_name": _S,
    "nki_source_location": _S,
    **dict.fromkeys(BYTE_COLUMNS, _I),
    **dict.fromkeys(FLOP_COLUMNS, _I),
}
ACTIVE_COLUMNS: dict[str, type[pl.DataType]] = {
    **_SPAN,
    "engine": _S,
    "pcore": _I,
    "lane": _S,
}
DMA_COLUMNS: dict[str, type[pl.DataType]] = {
    **_SPAN,
    "pcore": _I,
    "lane": _S,
    "neff": _S,
    "queue_name": _S,
    "queue_type": _S,
    "read_bytes": _I,
    "write_bytes": _I,
    "transfer_bytes": _I,
}
THROTTLE_COLUMNS: dict[str, type[pl.DataType]] = {
    "timestamp_ns": _I,
    "duration_ns": _I,
    "type": _S,
    "pcore": _I,
}
EXECUTION_COLUMNS: dict[str, type[pl.DataType]] = {
    "execution": _I,
    "neff": _S,
    "start_ns": _I,
    "end_ns": _I,
}


def empty(columns: dict[str, type[pl.DataType]]) -> pl.DataFrame:
    """Return a table with ``columns`` and no rows."""
    return pl.DataFrame(schema=columns)


@dataclass(frozen=True)
class DeviceProfile:
    """One device-profile export, read (see the module's docstring for the columns).

    ``name``: ``DeviceProfileList.device_profile_name`` when the profile is listed, else the
    folder's name. ``instance_id``, ``process_id``, ``nc_id``: from that list, or from the
    name, or None. ``metadata``: the ``Metadata`` row (peaks and clocks; {} when absent).
    ``summary``: the ``Summary`` row as exported, times in seconds (None when absent).
    ``opcodes``: ``OpcodeSummary`` as exported (None when absent). ``missing``: the optional
    tables the export lacks; ``notes``: what the reader noticed (an unknown schema major, the
    columns it lacks); ``absent``: per table, the export's columns it lacks (null here: a
    figure summing one is unknown, not 0; a column present with nulls sums to its values).
    ``network``: the network name its NEFF header records (``NeffHeader.network_name``; the
    JSON export's ``neff_header``), None where the export has none: what matches a NEFF
    across a rename (questions/engines/matching.py).
    """

    root: Path
    name: str
    instance_id: str | None = None
    process_id: int | None = None
    nc_id: int | None = None
    schema_version: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] | None = None
    executions: pl.DataFrame = field(default_factory=lambda: empty(EXECUTION_COLUMNS))
    instructions: pl.DataFrame = field(default_factory=lambda: empty(INSTRUCTION_COLUMNS))
    active: pl.DataFrame = field(default_factory=lambda: empty(ACTIVE_COLUMNS))
    dma: pl.DataFrame = field(default_factory=lambda: empty(DMA_COLUMNS))
    throttle: pl.DataFrame = field(default_factory=lambda: empty(THROTTLE_COLUMNS))
    opcodes: pl.DataFrame | None = None
    missing: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    absent: dict[str, tuple[str, ...]] = field(default_factory=dict)  # table -> columns lacked
    network: str | None = None  # the NEFF header's network_name (NeffHeader), when exported


@dataclass(frozen=True)
class DeviceRun:
    """What a path holds below the system view: its device-profile exports, read, and the
    NEFF/NTFF pairs that have none (each with the ``neuron-explorer`` command exporting it:
    ``inputs/neff.py``)."""

    root: Path
    profiles: list[DeviceProfile] = field(default_factory=list)
    unexported: list[dict[str, str | None]] = field(default_factory=list)  # ntff, neff, command
    passed: list[tuple[Path, str]] = field(default_factory=list)  # what the search passed by
