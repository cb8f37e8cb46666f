"""Neuron Explorer Parquet export: ``SystemProfileEvents[_N].parquet`` and its companions.

Columns are those of schema 7.4.0 (docs/neuron-formats.md §2.1). The version is read from
``Metadata.parquet`` when present; an unknown major version is a warning, and the tables are
then read by column name. A missing required column is an error that names it.

Exports run to tens of millions of rows, so nothing here loops over rows in Python: only the
columns traceana uses are kept (the args, unless asked, only in the executions), JSON is parsed
only in rows that can hold a lifted key, lanes are labelled once per lane key, dispatch nests
are found by pointer jumping on polars columns.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import accumulate, pairwise

import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import AnyPath, parquet_input
from trace_analyzer.inputs.discover import PARQUET_EVENTS, Source
from trace_analyzer.inputs.limits import refuse_inflating_parquet
from trace_analyzer.model.schema import LaneKind, Text, conform, gather_each
from trace_analyzer.readers import neuron
from trace_analyzer.readers.common import ReadResult, assign_steps
from trace_analyzer.readers.explorer_keys import lifted_keys
from trace_analyzer.readers.format import Format
from trace_analyzer.readers.neuron import EXTRA_COLUMNS, WORKER_GID, label, worker_ranks

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
    export that is its run's only source (``_lanes_in_order``). Not otherwise: numbered()'s
    sort breaks ties between events of equal start and end by their places in the rows it
    is given, and those are then the file's.

    The tables are read slice by slice (``SLICE_ROWS``): each slice's JSON text, most of an
    export's bytes, is let go once its keys are lifted and its malformed rows counted, so
    the text of the whole export is never held beside the events built from it.
    """
    result = ReadResult(source=src, format="explorer-parquet")
    result.schema_version = _schema_version(src, result)
    paths, layout = split_parts(src.path)
    result.warnings += layout
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
        events = conform(_lanes_in_order(held).with_columns(file=pl.lit(str(src.path))))
    else:
        events = _mark_dispatch(_lanes(columns).with_columns(file=pl.lit(str(src.path))))
        del columns
        events = assign_steps(conform(events), by_process=True)
    result.events = _with(events, events.get_column("step"))
    result.rank_origin = WORKER_GID if result.events["rank"].is_not_null().any() else None
    return result


def read_path(
    src: Source, keep_args: bool = False, *, max_bytes: int | None = None, in_order: bool = False
) -> ReadResult:
    """The registry's way in: ``read``; what the export's tables' pages inflate to is capped
    before they are read (limits.py)."""
    refuse_inflating_parquet(tables(src.path), max_bytes, {**REQUIRED, **OPTIONAL})
    meta = _metadata_table(src)
    refuse_inflating_parquet([meta] if meta else [], max_bytes, {"profile_schema_version"})
    return read(src, keep_args, in_order=in_order)


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
    return _with(columns, *columns.get_columns()), bad  # cut alike: see _with


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
    return _with(columns, *keys.get_columns())


def _with(df: pl.DataFrame, *columns: pl.Series) -> pl.DataFrame:
    """Return ``df`` with ``columns`` set, each cut into chunks where df's ``start_ns`` is.

    Polars copies a whole table into one chunk per column before a select or a filter when
    its columns are cut at different rows. The columns read from Parquet come in one chunk
    per row group, and read() puts the slices one under another without a copy; a column
    made by a gather, a scatter or the lift comes as one chunk: cut here where the table is
    (slices, no copy). Copying the table into one chunk instead would cost more than the
    chunks cost the gathers after the read (numbered()).
    """
    lengths = [c.len() for c in df.get_column("start_ns").get_chunks()]
    cut = []
    for column in columns:
        if [c.len() for c in column.get_chunks()] != lengths:
            column = column.rechunk()
            if len(lengths) > 1:
                starts = accumulate(lengths[:-1], initial=0)
                parts = [column.slice(at, n) for at, n in zip(starts, lengths, strict=True)]
                column = pl.concat(parts, rechunk=False)
        cut.append(column)
    return df.with_columns(cut)


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


# The columns neuron.label reads; lane_kind, lane, name and category depend on nothing else.
LABEL_KEYS = ["source", "name", "host", "pid", "tid", "device", "core", "stream"]
# And with them the columns worker_ranks reads (rank, host, pid): a row's rank depends on
# its own worker id and its process's, and a process is a pair of LABEL_KEYS.
LANE_KEYS = [*LABEL_KEYS, "rank"]


def _lanes(df: pl.DataFrame, packed: bool = True) -> pl.DataFrame:
    """Return ``worker_ranks(label(df))``, computed on one row per distinct lane key.

    An export has millions of rows but a few thousand (lane, name, worker id) combinations:
    formatting every row's lane string, and grouping every row by its process for its rank,
    were most of the reading time. label() and worker_ranks() run on one row of each key
    (a process's worker ids are all among its keys, so its rank is the same), and every row
    takes its key's results, gathered by the key's number: codes, not text (lane_kind as its
    Enum). category is the source column itself. label() is given the LANE_KEYS columns
    only, so a label() that came to read another column would fail here, not go wrong.
    ``packed``: False to number keys by a join even where they pack into one integer.
    """
    if df.is_empty():
        return worker_ranks(label(df))
    index, _, done = _labels(df, packed)
    gathered = [done.get_column(c).gather(index) for c in ("name", "lane_kind", "lane")]
    category = df.get_column("source").alias("category")  # label()'s order: after lane
    return _with(df, *gathered, category, done.get_column("rank").gather(index))


def _lanes_in_order(held: list[pl.DataFrame]) -> pl.DataFrame:
    """Return the table taken out of ``held`` (a one-item list) labelled (``_lanes``), its
    dispatches marked and its steps assigned (``_dispatch_and_steps``), its rows sorted by
    start, then end, as ``schema.numbered`` sorts them.

    The sort gathers only the columns that vary by row (times, ids, flows, lane_kind and
    step): every other LANE_KEYS column, and what label() makes of them, is its key's,
    gathered from the keys by each sorted row's key number. numbered() then finds the table
    in order and copies nothing (at 10 million rows: a gather of 25 columns there against 12
    here). Each column of the table is let go once its sorted copy is made (hence ``held``:
    no other reference to it). The keys are labelled in a thread beside the sort (polars
    lets the interpreter go: the two overlap on two cores). Dispatches and steps are found
    in the file's order, before the sort: both break ties (ops of equal start and end, steps
    of equal start) by the rows' places, and those are the places numbered() and the
    file-order read give them.
    """
    df = held.pop()
    if df.is_empty():
        return worker_ranks(label(df))
    with ThreadPoolExecutor(max_workers=1) as worker:  # the labels beside the sort
        labelled = worker.submit(_labelled, df.select(*LANE_KEYS, "start_ns", "end_ns"))
        order = df.select(pl.arg_sort_by("start_ns", "end_ns")).to_series()
        rows = {c: df.get_column(c) for c in df.columns if c not in LANE_KEYS}
        del df
        index, reps, done, found = labelled.result()  # its working columns let go first
    rows = gather_each(rows | found, order)
    index = index.gather(order)
    del order, found
    keys = reps.drop(done.columns, strict=False).hstack(done.drop("lane_kind"))
    keyed = keys.select(pl.all().gather(index))  # in one select: the columns side by side
    del keys, index
    return pl.DataFrame(list(rows.values())).hstack(keyed).with_columns(category="source")


def _labelled(
    df: pl.DataFrame,
) -> tuple[pl.Series, pl.DataFrame, pl.DataFrame, dict[str, pl.Series]]:
    """Return ``_labels(df)`` and ``_dispatch_and_steps`` of them (``df``: the LANE_KEYS
    columns and the times)."""
    index, reps, done = _labels(df, True)
    return index, reps, done, _dispatch_and_steps(df, index, done)


def _dispatch_and_steps(
    df: pl.DataFrame, index: pl.Series, done: pl.DataFrame
) -> dict[str, pl.Series]:
    """Return the lane_kind (``_mark_dispatch``) and step (``assign_steps``) of each row of
    ``df``, in its order, from the columns they read: label()'s name and lane_kind of each
    row's key, and the row's own process, thread and times."""
    light = df.select("source", "host", "pid", "tid", "start_ns", "end_ns").with_columns(
        done.get_column("name").gather(index), done.get_column("lane_kind").gather(index)
    )
    light = assign_steps(_mark_dispatch(light), by_process=True)
    step = light.get_column("step") if "step" in light.columns else None
    kinds = {"lane_kind": light.get_column("lane_kind")}
    return kinds if step is None else kinds | {"step": step}


def _labels(df: pl.DataFrame, packed: bool) -> tuple[pl.Series, pl.DataFrame, pl.DataFrame]:
    """Return each row's lane key number, the keys, and label()'s and worker_ranks()'s name,
    lane_kind, lane and rank of each key."""
    index, reps = _key_index(df, LANE_KEYS, packed)
    done = worker_ranks(label(reps)).select(
        pl.col("name", "lane").cast(Text), pl.col("lane_kind").cast(LaneKind), "rank"
    )
    return index, reps, done


def _key_index(
    df: pl.DataFrame, keys: list[str], packed: bool = True
) -> tuple[pl.Series, pl.DataFrame]:
    """Return each row's number among the distinct values of ``df``'s ``keys`` columns, and
    those values (one row per number).

    Each row's key is packed into one integer, mixed radix over per-column codes (code 0:
    null; text by its dictionary code; a column of one value left out), and numbered in the
    order keys first appear (replace_strict: a hash); keys too spread to pack into an int64
    are numbered by a join on the columns themselves.
    """
    phys = {
        c: pl.col(c).cast(Text).to_physical().cast(pl.Int64)
        if df.schema[c] in (pl.String, Text)
        else pl.col(c).cast(pl.Int64)
        for c in keys
    }
    bounds = df.select(
        *(e.min().alias(f"{c}_lo") for c, e in phys.items()),
        *(e.max().alias(f"{c}_hi") for c, e in phys.items()),
    ).row(0, named=True)
    key: pl.Expr | None = None
    radix = 1
    for c, e in phys.items():
        lo, hi, nulls = bounds[f"{c}_lo"], bounds[f"{c}_hi"], df[c].null_count()
        if lo is None or (lo == hi and not nulls):  # one value in every row: no part of it
            continue
        size = hi - lo + 1 + (nulls > 0)  # null: 0; a value: 1 + value - lo (no nulls: - lo)
        radix *= size
        term = (e - lo + 1).fill_null(0) if nulls else e - lo
        key = term if key is None else key * size + term
    if not packed or radix >= 2**62:
        return _key_index_by_join(df, keys)
    if key is None:  # every row the same key
        return pl.zeros(df.height, pl.UInt32, eager=True), df.select(keys).head(1)
    packs = df.select(key.alias("_key")).get_column("_key")
    first = packs.arg_unique()
    number = pl.int_range(first.len(), dtype=pl.UInt32, eager=True)
    index = packs.replace_strict(packs.gather(first), number, return_dtype=pl.UInt32)
    return index, df.select(pl.col(keys).gather(first))


def _key_index_by_join(df: pl.DataFrame, keys: list[str]) -> tuple[pl.Series, pl.DataFrame]:
    """_key_index for keys too spread to pack into one integer: unique keys, then a join."""
    reps = df.select(keys).unique(maintain_order=True)
    numbered = reps.with_columns(_number=pl.int_range(pl.len(), dtype=pl.UInt32))
    index = df.select(keys).join(
        numbered, on=keys, how="left", nulls_equal=True, maintain_order="left"
    )
    return index.get_column("_number"), reps


def _mark_dispatch(df: pl.DataFrame) -> pl.DataFrame:
    """Return ``neuron.mark_dispatch(df)``, the nesting found on columns instead of a Python sweep.

    mark_dispatch gives each framework_op the innermost framework_op enclosing it on its
    (pid, tid), by ``intervals.enclosing``'s stack sweep over (start, -end, row) order: that
    is the nearest earlier op in that order whose end is not before its own end (every op
    between them ends earlier, so the sweep has popped them and kept it). Found here by
    pointer jumping. An op is a dispatch when that parent has its name. Ops without a start
    or end (dropped later as malformed; the sweep cannot order them) take no part.
    """
    ops = _framework_ops(df)
    if ops.is_empty():
        return df
    parent = _parents(ops)
    rows = ops["_row"]
    has_parent = parent >= 0
    names = df["name"].gather(rows)
    same = names.gather(parent.clip(lower_bound=0)).eq_missing(names) & has_parent
    kinds = df.get_column("lane_kind").clone()  # scatter writes a copy, not df's column
    return _with(df, kinds.scatter(rows.filter(same), "framework_dispatch"))


def _framework_ops(df: pl.DataFrame) -> pl.DataFrame:
    """Return the framework ops with a start and an end, in the sweep's order, by row."""
    return (  # lazy: the row numbers are filtered with the rows, not put beside all of them
        df.lazy()
        .select(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
            "lane_kind",
            "pid",
            "tid",
            "start_ns",
            "end_ns",
        )
        .filter(
            pl.col("lane_kind") == "framework_op",
            pl.col("start_ns").is_not_null(),
            pl.col("end_ns").is_not_null(),
        )
        .drop("lane_kind")
        .sort(
            ["pid", "tid", "start_ns", "end_ns", "_row"],
            descending=[False, False, False, True, False],
            nulls_last=True,
        )
        .collect()
    )


def _parents(ops: pl.DataFrame) -> pl.Series:
    """Return each op's enclosing op, as its position in ``ops`` (-1: none), by jumping."""
    first = (
        pl.col("pid").ne_missing(pl.col("pid").shift(1))
        | pl.col("tid").ne_missing(pl.col("tid").shift(1))
    ).fill_null(True)
    ops = ops.with_columns(_first=first).with_columns(_group=pl.col("_first").cum_sum())
    # The latest end among the earlier ops of the group: an op ending after it has no parent.
    latest = pl.col("end_ns").cum_max().shift(1).over("_group").fill_null(-(2**63))
    cols = ops.select(
        "end_ns",
        parent=pl.when(pl.col("_first") | (latest < pl.col("end_ns")))
        .then(-1)
        .otherwise(pl.int_range(pl.len(), dtype=pl.Int64) - 1),
    )
    end, parent = cols["end_ns"], cols["parent"]
    while True:
        # Invariant: every op strictly between parent[i] and i ends before i. When parent[i]
        # ends before i too, the ops between its own candidate and it end before i as well,
        # so jumping there skips no enclosing op.
        up = parent.clip(lower_bound=0)
        jump = (parent >= 0) & (end.gather(up) < end)
        if not jump.any():
            break
        parent = pl.select(pl.when(jump).then(parent.gather(up)).otherwise(parent)).to_series()
    return parent


def _metadata_table(src: Source) -> AnyPath | None:
    """Return the export's Metadata table (the first by name in its folder), or None."""
    found: list[AnyPath] = [*src.path.glob("Metadata*.parquet")]
    return min(found, key=str) if found else None


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
