"""Neuron Explorer Parquet export: ``SystemProfileEvents[_N].parquet`` and its companions.

Columns are those of schema 7.4.0 (docs/neuron-formats.md §2.1). The version is read from
``Metadata.parquet`` when present; an unknown major version is a warning, and the tables are
then read by column name. A missing required column is an error that names it.

Exports run to tens of millions of rows, so nothing here loops over rows in Python: only the
columns traceana uses are kept (the args, unless asked, only in the executions), JSON is parsed
only in rows that can hold a lifted key, lanes are labelled once per lane key and dispatch
nests found by pointer jumping on polars columns (explorer_lanes.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import pairwise
from typing import TYPE_CHECKING

import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import AnyPath, parquet_input
from trace_analyzer.inputs.discover import PARQUET_EVENTS, Source
from trace_analyzer.inputs.limits import refuse_inflating_parquet
from trace_analyzer.model.schema import Text, conform
from trace_analyzer.readers import neuron
from trace_analyzer.readers.common import ReadResult, assign_steps
from trace_analyzer.readers.explorer_keys import lifted_keys
from trace_analyzer.readers.explorer_lanes import lanes, lanes_in_order, mark_dispatch, with_cut
from trace_analyzer.readers.format import Format
from trace_analyzer.readers.neuron import EXTRA_COLUMNS, WORKER_GID

if TYPE_CHECKING:
    from trace_analyzer.model.schema import Args

KNOWN_MAJOR = 7
REQUIRED: dict[str, pl.DataType] = {
    "id": pl.Int64(),
    "name": pl.String(),
    "start_ts": pl.Int64(),
    "end_ts": pl.Int64(),
    "trace_event_source": pl.String(),
    "process_id": pl.Int64(),
}
OPTIONAL: dict[str, pl.DataType] = {
    "duration_ns": pl.Int64(),
    "instance_id": pl.String(),
    "thread_id": pl.Int64(),
    "nc_idx": pl.Int64(),
    "pcore_idx": pl.Int64(),
    "worker_gid": pl.Int64(),
    "flow_id": pl.List(pl.String),
    "framework_stream_id": pl.String(),
    "extra_attributes_json": pl.String(),
}
COMPANIONS = ("SystemProfileMetadata", "Metadata", "SchemaFields", "CpuUsage", "HostMemUsage")


def tables(folder: AnyPath) -> list[AnyPath]:
    """Return the SystemProfileEvents files of an export folder that are read, in order."""
    return split_parts(folder)[0]


def split_parts(folder: AnyPath) -> tuple[list[AnyPath], list[str]]:
    """Return the SystemProfileEvents files of an export folder to read, and warnings.

    A large table is split into parts ``_0``, ``_1``, ... (docs/neuron-formats.md §2.1). A
    part missing from the sequence (a copy cut short) is a hole in the run's time: named, and
    the parts there are read. The unsplit table beside split parts is two exports in one
    folder, and both would count every event twice: the split parts (the larger export)
    are read, not the unsplit table, and a warning names both.
    """
    found: dict[int, AnyPath] = {}
    whole: AnyPath | None = None
    entries: list[AnyPath] = [*folder.iterdir()]
    for p in sorted(entries, key=lambda e: e.name):
        if m := PARQUET_EVENTS.match(p.name):
            if m[1]:
                found.setdefault(int(m[1][1:]), p)
            else:
                whole = p
    parts = [found[i] for i in sorted(found)]
    numbers = ", ".join(p.name[len("SystemProfileEvents") : -len(".parquet")] for p in parts[:6])
    numbers += ", ..." if len(parts) > 6 else ""
    warnings = []
    if whole is not None and parts:
        warnings.append(
            f"{folder}: {whole.name} beside the split parts {numbers} (two exports in one "
            f"folder?): read the split part{'s' * (len(parts) > 1)}, not {whole.name}"
        )
    holes = [(a, b) for a, b in pairwise([-1, *sorted(found)]) if b > a + 1]  # (_a, _b)
    if missing := sum(b - a - 1 for a, b in holes):  # counted, not listed: _9999999999
        first = [i for a, b in holes[:3] for i in range(a + 1, min(b, a + 4))][:3]
        warnings.append(
            f"{folder}: split part{'s' * (missing > 1)} "
            f"{', '.join(f'SystemProfileEvents_{i}.parquet' for i in first)}"
            f"{f' and {missing - 3} more' if missing > 3 else ''} missing (found "
            f"{numbers}): read the {len(parts)} there are; the run lacks the missing events"
        )
    return (parts or ([whole] if whole is not None else [])), warnings


def read(src: Source, keep_args: bool = False, *, in_order: bool = False) -> ReadResult:
    """Return the events of one Parquet export folder; ``keep_args``: every row's args kept;
    ``in_order``: sorted by start, then end, as numbered() sorts a run's events, for an
    export that is its run's only source (``explorer_lanes.lanes_in_order``). Not otherwise:
    numbered()'s sort breaks ties between events of equal start and end by their places in
    the rows it is given, and those are then the file's.

    The tables are read slice by slice (``SLICE_ROWS``): each slice's JSON text, most of an
    export's bytes, is let go once its keys are lifted and its malformed rows counted, so
    the text of the whole export is never held beside the events built from it.
    """
    result = ReadResult(source=src, format="explorer-parquet")
    result.schema_version = _schema_version(src, result)
    paths, layout = split_parts(src.path)
    result.warnings += layout
    result.notes += _unread_columns(src, paths)
    present = [c for c in COMPANIONS if any(src.path.glob(f"{c}*.parquet"))]
    result.notes.append(
        f"{len(paths)} SystemProfileEvents file(s); companions: {', '.join(present) or 'none'}"
    )
    slices, bad = [], 0
    for columns, n in _made(paths, keep_args):
        slices.append(columns)
        bad += n
        del columns
    columns = pl.concat(slices, rechunk=False) if len(slices) > 1 else slices[0]
    del slices
    if bad:
        result.warnings.append(
            f"{src.path}: {bad} of {columns.height} rows have an extra_attributes_json that is "
            "not JSON: their exec_id and nrt_sequence_id (which link executions to runtime "
            "calls) are lost; the rest of each row is read"
        )
    if in_order:
        held = [columns]
        del columns  # _lanes_in_order lets each column go once its sorted copy is made
        events = conform(lanes_in_order(held).with_columns(file=pl.lit(str(src.path))))
    else:
        events = mark_dispatch(lanes(columns).with_columns(file=pl.lit(str(src.path))))
        del columns
        events = assign_steps(conform(events), by_process=True)
    result.events = with_cut(events, events.get_column("step"))
    result.rank_origin = WORKER_GID if result.events["rank"].is_not_null().any() else None
    return result


def read_path(
    src: Source, keep_args: Args = False, *, max_bytes: int | None = None, in_order: bool = False
) -> ReadResult:
    """The registry's way in: ``read``; what the export's tables' pages inflate to is capped
    before they are read (limits.py)."""
    refuse_inflating_parquet(tables(src.path), max_bytes, {**REQUIRED, **OPTIONAL})
    meta = _metadata_table(src)
    refuse_inflating_parquet([meta] if meta else [], max_bytes, {"profile_schema_version"})
    return read(src, bool(keep_args), in_order=in_order)


def _read_table(path: AnyPath) -> pl.DataFrame:
    try:
        data = parquet_input(path)
        have = pl.read_parquet_schema(data)
        if hasattr(data, "seek"):
            data.seek(0)
        # Only the columns traceana uses (unknown columns stay on disk).
        df = pl.read_parquet(data, columns=[c for c in {**REQUIRED, **OPTIONAL} if c in have])
    except (Exception, pl.exceptions.PanicException) as e:  # a bad file: several error types,
        # and a Rust panic in the decoder (PanicException is a BaseException)
        first = (str(e).splitlines() or ["?"])[0]
        raise InputError(
            str(path), f"not a readable Parquet table ({type(e).__name__}: {first})"
        ) from e
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(
            str(path),
            f"missing required column{'s' if len(missing) > 1 else ''}: {', '.join(missing)}",
        )
    casts = []
    for col, dtype in {**REQUIRED, **OPTIONAL}.items():
        if col not in df.columns:
            casts.append(pl.lit(None, dtype=dtype).alias(col))
            continue
        have_type = df.schema[col]
        # a required text column holding numbers is another table, not a castable one
        text = dtype == pl.String and col in REQUIRED
        bad = text and not (
            have_type == pl.String
            or isinstance(have_type, (pl.Categorical, pl.Enum))
            or have_type == pl.Null
        )
        try:
            if bad:
                raise TypeError(col)
            df.select(pl.col(col).cast(dtype, strict=True))
        except (Exception, pl.exceptions.PanicException) as e:
            raise InputError(
                str(path), f"column {col} has type {have_type}, expected {dtype}"
            ) from e
        casts.append(pl.col(col).cast(dtype))
    return df.select(casts)


# Rows read at a time: a slice's JSON text (about 120 bytes a row) is let go before the next.
SLICE_ROWS = 1 << 20


def _slices(path: AnyPath) -> Iterator[pl.DataFrame]:
    """Yield the rows of one table as ``_read_table`` gives them, ``SLICE_ROWS`` at a time.

    A table whose columns all have their types already is scanned slice by slice (polars
    reads only the row groups a slice covers); any other table, and any table a slice of
    which fails to read, is read whole by ``_read_table``, whose checks and error messages
    are then those of every table.
    """
    names = {**REQUIRED, **OPTIONAL}
    try:
        data = parquet_input(path)
        have = pl.read_parquet_schema(data)
        if hasattr(data, "seek"):
            data.seek(0)
        typed = all(c in have for c in REQUIRED) and all(
            have[c] == t for c, t in names.items() if c in have
        )
        if typed:
            scan = pl.scan_parquet(data).select(c for c in names if c in have)
            rows = scan.select(pl.len()).collect().item()
    except (Exception, pl.exceptions.PanicException):
        typed = False
    if not typed:
        whole = _read_table(path)
        for offset in range(0, max(whole.height, 1), SLICE_ROWS):
            yield whole.slice(offset, SLICE_ROWS)
        return
    absent = [pl.lit(None, dtype=t).alias(c) for c, t in names.items() if c not in have]
    for offset in range(0, max(rows, 1), SLICE_ROWS):
        try:
            part = scan.slice(offset, SLICE_ROWS).collect()
        except (Exception, pl.exceptions.PanicException):
            yield _read_table(path).slice(offset)  # its error, or (unlikely) the rest
            return
        if absent:
            part = part.with_columns(absent).select(list(names))
        yield part
        del part  # before the next slice is read


def _made(paths: list[AnyPath], keep_args: bool) -> Iterator[tuple[pl.DataFrame, int]]:
    """Yield ``_slice_events`` of each slice of ``paths``, in order, each made while the next
    slice is read: the key lift (C) and polars let the interpreter go, so the two overlap.
    At most one made slice waits to be taken (its raw slice is held until it is made)."""
    with ThreadPoolExecutor(max_workers=1) as worker:
        made: deque[Future[tuple[pl.DataFrame, int]]] = deque()
        for path in paths:
            for raw in _slices(path):
                made.append(worker.submit(_slice_events, raw, keep_args))
                del raw
                if len(made) > 1:
                    yield made.popleft().result()
        while made:
            yield made.popleft().result()


def _slice_events(raw: pl.DataFrame, keep_args: bool) -> tuple[pl.DataFrame, int]:
    """Return one slice's events columns (``_columns``) and its count of rows whose JSON does
    not parse (``_unparsed``)."""
    columns = _columns(raw, keep_args)
    extra = raw.select(args_json="extra_attributes_json")
    del raw
    bad = _unparsed(extra.hstack(columns.select(EXTRA_COLUMNS.values())))
    del extra
    return with_cut(columns, *columns.get_columns()), bad  # cut alike: see with_cut


def _columns(raw: pl.DataFrame, keep_args: bool = True) -> pl.DataFrame:
    """Return the export's rows as events columns, the link keys lifted (explorer_keys);
    ``args_json`` null unless ``keep_args``, but in the executions (their NEFF: ``model_name``),
    whose text is copied out of the slice's."""
    keys = lifted_keys(raw.select("extra_attributes_json"))
    columns = raw.select(  # text dictionary-encoded at once (schema.Text): labels work on codes
        orig_id=pl.col("id"),
        name=pl.col("name").cast(Text),
        source=pl.col("trace_event_source").cast(Text),
        start_ns=pl.col("start_ts"),
        end_ns=pl.col("end_ts"),
        duration_ns=pl.col("duration_ns").fill_null(pl.col("end_ts") - pl.col("start_ts")),
        host=pl.col("instance_id").cast(Text),
        pid=pl.col("process_id"),
        tid=pl.col("thread_id"),
        device=pl.col("nc_idx"),
        core=pl.col("pcore_idx"),
        rank=pl.col("worker_gid"),  # worker_ranks: >= 0 only, spread over its process
        stream=pl.col("framework_stream_id").cast(pl.Int64, strict=False),
        flow_ids=pl.col("flow_id").list.eval(pl.element().cast(pl.Int64, strict=False)),
        args_json=pl.col("extra_attributes_json") if keep_args else pl.lit(None, pl.String),
    )
    if not keep_args:  # the executions' text copied out: a column of views into the
        # slice's text (what a when/then gives) would keep all of that text alive
        rows = raw.select((pl.col("name") == neuron.EXECUTIONS[0]).arg_true()).to_series()
        text = raw.get_column("extra_attributes_json").gather(rows)
        args = pl.repeat(None, raw.height, dtype=pl.String, eager=True).scatter(rows, text)
        keys = keys.with_columns(args_json=args)
    return with_cut(columns, *keys.get_columns())


def _unparsed(df: pl.DataFrame) -> int:
    """Return how many rows hold an ``extra_attributes_json`` (``args_json``) that is not JSON:
    text not shaped as an object, or, in rows naming a lifted key, text from which no key came
    and which does not parse. Only those few rows are looked into (parsing every row again
    would add half the reading time); a malformed row that names no key loses no link."""
    extra = pl.col("args_json")
    shaped = extra.str.starts_with("{") & extra.str.ends_with("}") & (extra.str.len_bytes() > 1)
    nothing = pl.all_horizontal(pl.col(c).is_null() for c in EXTRA_COLUMNS.values())
    maybe = pl.any_horizontal(extra.str.contains(k, literal=True) for k in (*EXTRA_COLUMNS, "\\u"))
    few = df.filter(extra.is_not_null() & (~shaped | nothing)).select(extra)
    # eager, in two steps: one lazy filter would look for the keys in every row
    few = few.filter(~shaped | maybe).select(text=extra.str.strip_chars())
    text = pl.col("text")
    parses = text.str.starts_with("{") & text.str.json_path_match("$").is_not_null()
    return few.filter((text.str.len_bytes() > 0) & ~parses).height


def _metadata_table(src: Source) -> AnyPath | None:
    """Return the export's Metadata table (the first by name in its folder), or None."""
    found: list[AnyPath] = [*src.path.glob("Metadata*.parquet")]
    return min(found, key=str) if found else None


def _unread_columns(src: Source, paths: list[AnyPath]) -> list[str]:
    """The note naming the columns of the table that schema 7.4.0 does not have (a newer
    schema's, kept on disk and not read), if any: never an error."""
    try:
        have = pl.read_parquet_schema(parquet_input(paths[0])) if paths else {}
    except (Exception, pl.exceptions.PanicException):  # the read says what is wrong with it
        return []
    new = [c for c in have if c not in REQUIRED and c not in OPTIONAL]
    if not new:
        return []
    return [f"{src.path}: columns schema 7.4.0 does not have, not read: {', '.join(new)}"]


def _schema_version(src: Source, result: ReadResult) -> str | None:
    meta = _metadata_table(src)
    if meta is None:
        result.notes.append("schema version unknown (no Metadata table); read by column name")
        return None
    try:
        col = pl.read_parquet(parquet_input(meta), columns=["profile_schema_version"])[
            "profile_schema_version"
        ]
    except (Exception, pl.exceptions.PanicException):
        result.notes.append(f"{meta.name} has no profile_schema_version; read by column name")
        return None
    version = str(col.drop_nulls()[0]) if col.drop_nulls().len() else None
    major = version.split(".")[0] if version else ""
    if version and (not major.isdigit() or int(major) != KNOWN_MAJOR):
        result.warnings.append(
            f"{src.path}: Explorer schema {version} is not the {KNOWN_MAJOR}.x traceana knows; "
            "read by column name"
        )
    return version


FORMAT = Format(
    "explorer-parquet",
    "Neuron Explorer Parquet export",
    "explorer-parquet",
    read_path=read_path,
)
