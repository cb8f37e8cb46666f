"""The lanes of a Neuron Explorer export's rows, worked out once per distinct lane key
(readers/explorer_parquet.py reads the export; neuron.py holds the rules).

label() and worker_ranks() run on one row per distinct (source, name, host, pid, tid, device,
core, stream, worker id), and each row takes its key's results by the key's number; dispatch
nests are found by pointer jumping on polars columns; an export read alone is sorted here, as
it is labelled, so that ``schema.numbered`` finds it in order (docs/architecture.md, "Work at
the grain it varies").
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import accumulate

import polars as pl

from trace_analyzer.model.schema import LaneKind, Text, gather_each
from trace_analyzer.readers.common import assign_steps
from trace_analyzer.readers.neuron import label, worker_ranks


def with_cut(df: pl.DataFrame, *columns: pl.Series) -> pl.DataFrame:
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


# The columns neuron.label reads; lane_kind, lane, name and category depend on nothing else.
LABEL_KEYS = ["source", "name", "host", "pid", "tid", "device", "core", "stream"]
# And with them the columns worker_ranks reads (rank, host, pid): a row's rank depends on
# its own worker id and its process's, and a process is a pair of LABEL_KEYS.
LANE_KEYS = [*LABEL_KEYS, "rank"]


def lanes(df: pl.DataFrame, packed: bool = True) -> pl.DataFrame:
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
    return with_cut(df, *gathered, category, done.get_column("rank").gather(index))


def lanes_in_order(held: list[pl.DataFrame]) -> pl.DataFrame:
    """Return the table taken out of ``held`` (a one-item list) labelled (``lanes``), its
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
        order = df.select(pl.arg_sort_by("start_ns", "end_ns", maintain_order=True)).to_series()
        rows = {c: df.get_column(c) for c in df.columns if c not in LANE_KEYS}
        del df
        index, reps, done, found = labelled.result()  # its working columns let go first
    rows |= found
    del found  # gather_each lets each column go as its copy is made: no other reference
    rows = gather_each(rows, order)
    index = index.gather(order)
    del order
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
    return index, reps, done, _dispatch_and_steps(df, index, reps, done)


def _dispatch_and_steps(
    df: pl.DataFrame, index: pl.Series, reps: pl.DataFrame, done: pl.DataFrame
) -> dict[str, pl.Series]:
    """Return the lane_kind (``mark_dispatch``) and step (``assign_steps``) of each row of
    ``df``, in its order, from the columns they read: label()'s name and lane_kind of each
    row's key, and the row's own process, thread and times (``reps``: the keys). The two read
    neither's result (steps read no lane_kind): the dispatches are marked in a worker beside
    the steps, whose rows are told apart by key where they are the same for every row of one
    (whether a row is a step, its process)."""
    light = df.select("source", "host", "pid", "tid", "start_ns", "end_ns").with_columns(
        done.get_column("name").gather(index), done.get_column("lane_kind").gather(index)
    )
    with ThreadPoolExecutor(max_workers=1) as worker:
        marked = worker.submit(mark_dispatch, light)
        per_key = reps.select("source", "host", "pid").with_columns(done.get_column("name"))
        stepped = assign_steps(light, by_process=True, keys=(index, per_key))
        kinds = {"lane_kind": marked.result().get_column("lane_kind")}
    return kinds | ({"step": stepped.get_column("step")} if "step" in stepped.columns else {})


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


def mark_dispatch(df: pl.DataFrame) -> pl.DataFrame:
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
    return with_cut(df, kinds.scatter(rows.filter(same), "framework_dispatch"))


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
