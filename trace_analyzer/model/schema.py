"""The events table: one polars schema every reader produces, and the check at its boundary.

Times are integer nanoseconds on the host clock, epoch-aligned where the input allows.
Units are suffixes of column names. Missing values are nulls, never sentinels.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Final, Literal, TypeAlias

import polars as pl
from polars.datatypes import DataTypeClass

# A column type as polars takes it: a class (``pl.Int64``) or an instance (``pl.List(...)``).
ColumnType: TypeAlias = pl.DataType | DataTypeClass

# What an event is to the analyses. A lane may hold events of several kinds (a GPU stream
# carries kernels and memcpys); the kind belongs to the event.
LANE_KINDS = (
    "framework_op",  # aten ops and other cpu_op ranges
    "framework_dispatch",  # PrivateUse1 runtime: operator dispatch on the host thread
    "framework_stream",  # PrivateUse1 driver: device interaction, by stream
    "runtime",  # neuron_rt calls, cuda/mtia runtime and driver API calls
    "hardware",  # executions that keep a device lane busy: nc_exec_running, kernels
    "transfer",  # host<->device copies: dmem_buf_copyin/out, nrt_tensor_write/read, gpu_memcpy
    "sync",  # device-side synchronisation records: cuda_sync, cc_exec_barrier
    "annotation",  # ProfilerStep#N, record_function, python frames
    "other",  # anything else a reader keeps (timestamp_sync_point, nc_model_switch, ...)
)
LaneKind = pl.Enum(LANE_KINDS)

# Text columns that repeat (a lane, a file, a name shared by thousands of events) are
# dictionary-encoded: 4 bytes an event, not the text on every row (docs/architecture.md).
# polars' string functions want ``String``: ``text("name")`` casts first.
Text: pl.DataType = pl.Categorical()

EVENTS_SCHEMA: dict[str, ColumnType] = {
    "event_id": pl.Int64,  # unique within a profile (assigned on load)
    "orig_id": pl.Int64,  # the id the input gave the event, if any
    "name": Text,
    "category": Text,  # the input's own category: Kineto `cat`, Explorer trace_event_source
    "lane_kind": LaneKind,
    "lane": Text,
    "source": Text,  # framework, neuron_rt, neuron_hw, cuda, rocm, mtia, privateuse1
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "duration_ns": pl.Int64,
    "host": Text,  # Neuron instance id or host name, when known
    "pid": pl.Int64,
    "tid": pl.Int64,
    "rank": pl.Int64,
    "device": pl.Int64,  # GPU index, MTIA device, Neuron logical core (nc_idx)
    "core": pl.Int64,  # Neuron physical core (pcore_idx)
    "stream": pl.Int64,
    "correlation": pl.Int64,
    "external_id": pl.Int64,
    "seq_id": pl.Int64,  # nrt_sequence_id
    "exec_id": pl.Int64,
    "wait_stream": pl.Int64,  # a stream wait's (cuda_sync): the stream of the event it waits on
    "wait_record": pl.Int64,  # ... and the correlation of the call that recorded that event
    "flow_ids": pl.List(pl.Int64),
    "step": pl.Int64,  # the ProfilerStep#N the event falls in, if known
    "file": Text,  # the input file the row came from
    "args_json": pl.String,  # remaining attributes as JSON, not parsed on the hot path
    "args_at": pl.Int64,  # where the args lie in the file, read when asked (loading/args_at.py)
}

# What a read keeps of each event's args (``load(args=...)``): nothing, their JSON text in
# ``args_json``, or (``LATER``) where a Kineto trace's lie in its file in ``args_at`` and the
# text of the others, for what reads them as it writes (export: loading/args_at.py).
# ``COLLECTIVES``: as ``LATER``, but a Kineto trace whose args cannot be placed (gzip, an
# archive member) keeps the text of the events ``COLLECTIVE_ARGS`` names alone (the ranks'
# collectives: their kernels and the host ops that record their parameters).
LATER: Final = "later"
COLLECTIVES: Final = "collectives"
Args: TypeAlias = bool | Literal["later", "collectives"]
COLLECTIVE_ARGS = r"(?i)nccl|rccl|^record_param_comms$"

# Columns a reader must fill; the rest may be null.
REQUIRED = ("name", "lane_kind", "lane", "source", "start_ns", "end_ns", "duration_ns", "file")


def text(column: str) -> pl.Expr:
    """Return the dictionary-encoded column ``column`` as ``String``, for polars' ``str``
    functions."""
    return pl.col(column).cast(pl.String)


def matching(values: pl.Series, pattern: str) -> pl.Expr:
    """Return whether the column ``values`` came from matches the regex ``pattern``, the
    regex run once per distinct value rather than once per event (an export's ten million
    rows hold a few thousand names)."""
    distinct = values.unique().cast(pl.String)
    return pl.col(values.name).is_in(distinct.filter(distinct.str.contains(pattern)).implode())


def empty_events() -> pl.DataFrame:
    """Return an events table with no rows."""
    return pl.DataFrame(schema=EVENTS_SCHEMA)


def conform(df: pl.DataFrame) -> pl.DataFrame:
    """Return ``df`` with every schema column, in schema order and type; absent ones null."""
    exprs = []
    for col, dtype in EVENTS_SCHEMA.items():
        if col in df.columns:
            exprs.append(pl.col(col).cast(dtype))
        else:
            exprs.append(pl.lit(None, dtype=dtype).alias(col))
    return df.select(exprs)


def check_events(df: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Return the rows fit for analysis and the count of dropped rows by reason.

    A row is dropped when a required column is null or its end precedes its start.
    """
    missing = [c for c in EVENTS_SCHEMA if c not in df.columns]
    if missing:
        raise ValueError(f"{len(missing)} missing columns: {', '.join(repr(c) for c in missing)}")
    reasons = {f"null {c}": pl.col(c).is_null() for c in REQUIRED}
    reasons["end before start"] = pl.col("end_ns") < pl.col("start_ns")
    counts = df.select(**{k: v.sum() for k, v in reasons.items()}).row(0, named=True)
    dropped = {k: int(v) for k, v in counts.items() if v}
    if dropped:
        bad = pl.any_horizontal(list(reasons.values()))
        df = df.filter(~bad)
    return df, dropped


def numbered(held: list[pl.DataFrame]) -> pl.DataFrame:
    """Return the events table taken out of ``held`` (a one-item list) sorted by start, then
    end, and numbered in that order (``event_id``). The sort is stable: events of equal start
    and end keep the order of the rows given (a run's files in order, each file's events as
    its reader gives them), so a file's events are numbered among themselves as the file read
    alone numbers them (what ``gaps --jobs`` makes a run's ids from: ``gaps/per_rank.py``).

    The sort is made column by column, and each old column is let go once its sorted copy is
    made: with no other reference to the table (hence ``held``), the peak is the table and
    two columns, not two tables (at 5 million events, 0.8 GB less than ``DataFrame.sort``).
    A column that no event fills (a Kineto trace has no ``core``, ``seq_id``, ``exec_id`` ...)
    comes back as one null broadcast, not a column of nulls (at 3 million events, 0.24 GB).
    A table already in order (an Explorer export read alone, sorted as it is labelled) is
    neither sorted nor copied. The columns are gathered two at a time (``gather_each``).
    """
    events = held.pop()
    names, n = events.columns, events.height
    in_order = _in_order(events)
    if not in_order:
        order = events.select(pl.arg_sort_by("start_ns", "end_ns", maintain_order=True)).to_series()
    columns, empty = {}, {}
    for name in names:
        column = events.get_column(name)
        events = events.drop(name)
        if n and column.null_count() == n and name != "event_id":  # one null, not n of them
            empty[name] = column.dtype
        else:
            columns[name] = column
        del column
    if not in_order:
        columns = gather_each(columns, order)
    out = pl.DataFrame(list(columns.values())) if columns else events
    return out.with_columns(
        *(pl.lit(None, dtype).alias(name) for name, dtype in empty.items()),
        event_id=pl.int_range(pl.len(), dtype=pl.Int64),
    ).select(names)


def gather_each(columns: dict[str, pl.Series], order: pl.Series) -> dict[str, pl.Series]:
    """Return each of ``columns`` gathered by ``order``, two at a time, each taken out of
    ``columns`` (emptied) and let go once its copy is made: with no other reference to them,
    the peak is the columns and two copies, not twice the columns.

    A column in several chunks is made one before the gather, its chunks let go before the
    sorted copy is made: a gather across chunks looks up each row's chunk, seven times slower
    for a list column than the copy into one (an Explorer export is cut at its row groups,
    about 80 chunks at 10 million rows: copying first measured 0.62-0.75 s at 3 million,
    gathering across the chunks 0.82-1.0 s). Polars lets the interpreter go in both, so two
    threads take half the time on two cores (10 columns of 10 million rows: 0.38 s, 0.72-0.85
    s one by one).
    """

    def gathered(name: str) -> pl.Series:
        return columns.pop(name).rechunk().gather(order)

    names = list(columns)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(names, pool.map(gathered, names), strict=True))


def _in_order(events: pl.DataFrame) -> bool:
    """Whether ``events``' rows are in order of start, then end (rows with both equal in any
    order: no sort would put one before another; no start or end is null here)."""
    start, end = pl.col("start_ns"), pl.col("end_ns")
    later = start.diff()
    return bool(events.select(((later > 0) | ((later == 0) & (end.diff() >= 0))).all()).item())


def by_row(events: pl.DataFrame) -> bool:
    """Whether each event's ``event_id`` is its row, as in every profile's table
    (``numbered``): an event's columns are then found by position, without a join."""
    rows = pl.int_range(events.height, dtype=pl.Int64, eager=True)
    return events["event_id"].equals(rows, check_dtypes=False, check_names=False)
