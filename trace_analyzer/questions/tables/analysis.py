"""The tables ``traceana tables`` writes as Parquet: what the other commands compute, per row.

Nothing is computed here that another analysis does not compute already: the events and
links of the profile, the chain of every hardware execution (``chain.chains``), every idle
gap with its cause, evidence and the hint of its cause (``gaps.gaps``, ``hints.cause_hint``)
and the ops table (``ops.ops``). Each is made plain for other tools (docs/tables.md): the
categorical and enum columns are strings, and every column is an integer, a float, a
boolean, a string or a list of integers, never an object. The gaps table keeps its columns
when a run has no gaps (a CPU-only run), so that queries over it still run.
"""

from __future__ import annotations

import polars as pl

from trace_analyzer.loading.profile import Profile
from trace_analyzer.questions.chain.analysis import chains
from trace_analyzer.questions.gaps.analysis import GapsResult
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.questions.gaps.hints import cause_hint
from trace_analyzer.questions.ops.analysis import ops

SCHEMA_VERSION = 4  # raised when a column of a table changes (docs/tables.md)
NAMES = ("events", "edges", "chains", "gaps", "devices", "ops")  # one file each: NAME.parquet

_I, _S, _B = pl.Int64(), pl.String(), pl.Boolean()
# The gaps table's columns (``GapsResult.gaps`` made plain, and ``hint``): those of a run
# with no gaps. tests/cli/test_tables.py holds them equal to a run's that has gaps.
GAP_SCHEMA: dict[str, pl.DataType] = {
    "lane": _S, "pid": _I, "start_ns": _I, "end_ns": _I, "prev_event": _I, "next_event": _I,
    "duration_ns": _I, "prev_name": _S, "next_name": _S, "next_op": _S, "next_runtime": _S,
    "link_method": _S, "next_dispatch_ns": _I, "next_op_event": _I, "prev_op": _S,
    "launch_event": _I, "launch_pid": _I, "launch_tid": _I, "launch_typical_ns": _I,
    "launch_ns": _I, "launch_call_ns": _I, "neuron": _B, "same_graph": _B,
    "next_collective": _B, "device_wait_ns": _I, "comm_ns": _I, "comm_event": _S,
    "wait_call": _S, "wait_call_ns": _I, "transfer_ns": _I, "transfer_event": _S, "sync_ns": _I,
    "sync_event": _S, "comm_lane": _B, "cause": _S, "host_sync_ns": _I, "host_runtime_ns": _I,
    "host_framework_ns": _I, "host_untraced_ns": _I, "host_call": _S, "host_call_ns": _I,
    "host_frame": _S, "host_frame_ns": _I, "host_caller": _S, "host_data_loader_ns": _I,
    "host_compiled_ns": _I,
    "evidence": _S, "device": _S, "hint": _S,
}  # fmt: skip

_SCALARS = (pl.Int64, pl.Int32, pl.UInt32, pl.UInt64, pl.Float64, pl.Boolean, pl.String)


def tables(profile: Profile, gaps: GapsResult) -> dict[str, pl.DataFrame]:
    """Return the tables of one run (``profile``) by name (``NAMES``), made plain.

    ``gaps``: the run's gaps (``gaps.gaps(profile)``, or the cache's copy of them), computed
    with the options the caller chose; the chains and ops are computed here, unfiltered.
    """
    frames = {
        "events": profile.events,
        "edges": profile.edges,
        "chains": chains(profile).table,
        "gaps": gap_rows(gaps),
        "devices": gaps.devices,  # each device's states (analyses/states.py): gaps' own rows
        "ops": ops(profile).main_frame(),
    }
    return {name: plain(frames[name]) for name in NAMES}


def gap_rows(result: GapsResult) -> pl.DataFrame:
    """Return every gap of ``result`` (one per lane), with ``hint``, the next step: the hint
    of ``traceana gaps`` for the gap's op and cause where it gives one (``GapsResult.hints``,
    the top ops), else its hint for the cause in this run, else the cause's general hint in
    Trainium words on a NeuronCore (``hints.cause_hint``). No gaps: no rows, with the
    columns of ``GAP_SCHEMA``. The export's gap slices carry the same hint."""
    found = result.gaps
    if found.is_empty():
        return pl.DataFrame(schema=GAP_SCHEMA)
    words = {
        neuron: pl.col("cause").replace_strict(
            list(CAUSES), [cause_hint(c, neuron) for c in CAUSES], default=None
        )
        for neuron in (False, True)
    }
    general = pl.when(pl.col("neuron")).then(words[True]).otherwise(words[False])
    per_op = {(h["op"], h["cause"]): h["hint"] for h in result.hints if h["op"] is not None}
    per_cause = {h["cause"]: h["hint"] for h in result.hints if h["op"] is None}
    cause = pl.col("cause").cast(pl.String)
    key = pl.concat_str(pl.col("next_op").cast(pl.String), cause, separator="\x00")
    by_op = key.replace_strict({f"{o}\x00{c}": h for (o, c), h in per_op.items()}, default=None)
    by_cause = cause.replace_strict(per_cause, default=None)
    hint = pl.coalesce(by_op.cast(pl.String), by_cause.cast(pl.String), general)
    return found.with_columns(hint=hint.cast(pl.String))


def plain(frame: pl.DataFrame) -> pl.DataFrame:
    """Return ``frame`` with its categorical and enum columns as strings; a column of any
    type but an integer, float, boolean, string or list of integers is a TypeError (a bug:
    no table of traceana holds one)."""
    cast = {
        c: pl.String for c, t in frame.schema.items() if isinstance(t, pl.Categorical | pl.Enum)
    }
    out = frame.cast(cast) if cast else frame  # type: ignore[arg-type]
    for column, dtype in out.schema.items():
        inner = dtype.inner if isinstance(dtype, pl.List) else dtype
        if not any(inner == t for t in _SCALARS):
            raise TypeError(f"column {column!r} is {dtype}, not a plain type")
    return out
