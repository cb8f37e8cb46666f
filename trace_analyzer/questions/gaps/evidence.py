"""The evidence of each gap: the next execution's launch, what the host did while it was late,
and the sentence that says why (docs/gaps.md, "Evidence").
"""

from __future__ import annotations

import polars as pl

from trace_analyzer.loading.link import GRAPH_LAUNCH
from trace_analyzer.model.schema import matching
from trace_analyzer.questions.gaps.host import HELD_COLUMNS, held

SYNC_NAMES = r"(?i)synchroni[sz]e"
# What a host thread records, by what it was doing (the first that holds wins, nested calls
# inside an op count for the call): a synchronize, a runtime or driver call (or a Neuron
# host-side copy), a framework op. Python frames and nothing recorded are "untraced".
HOST_KINDS = ("framework_op", "framework_dispatch", "runtime", "transfer")


def covered(
    gaps: pl.DataFrame,
    marks: pl.DataFrame,
    name: str,
    by: str | list[str] = "pid",
    end: str = "end_ns",
    last_event: bool = True,
) -> pl.DataFrame:
    """Return ``gaps`` with ``<name>_ns``: how much of each gap, from ``start_ns`` to
    ``end`` (a column), the intervals of ``marks`` with the same ``by`` value cover, and
    ``<name>_event``: the name of the last mark that starts before that end. ``by`` may
    name several columns (a thread: its pid and tid)."""
    if marks.is_empty():
        return gaps.with_columns(
            pl.lit(0, pl.Int64).alias(f"{name}_ns"), pl.lit(None, pl.String).alias(f"{name}_event")
        )
    keys = [by] if isinstance(by, str) else by
    marks = by_start(marks.select(*keys, "start_ns", "end_ns", "name"))
    cover = spans(gaps, marks, keys, end, {name: pl.lit(True)})[f"{name}_ns"]
    if not last_event:
        return gaps.with_columns(cover)
    last = (
        gaps.select(*keys, "start_ns", end)  # the columns the lookup reads, not every gap's
        .with_row_index("_g")
        .sort(end)
        .join_asof(
            marks.rename({"end_ns": "end_m"}),
            left_on=end,
            right_on="start_ns",
            by=by,
            suffix="_m",
            check_sortedness=False,
        )
        .sort("_g")
        .select(
            pl.when(pl.col("end_m") > pl.col("start_ns"))
            .then(pl.col("name"))
            .alias(f"{name}_event")
        )
    )
    return gaps.with_columns(cover, last.to_series())


NO_REACH = -(2**63)  # the reach before a key's first mark: earlier than every time


def by_start(marks: pl.DataFrame) -> pl.DataFrame:
    """Return ``marks`` in start order: as they are when they are (a profile's events are,
    and so is every subset of them), so that a million marks are not sorted again."""
    return marks if marks["start_ns"].is_sorted() else marks.sort("start_ns")


# Up to this many keys asked about, ``spans`` picks each key's marks out with a filter (a pass
# over them each) rather than take them all apart (a hash of every mark): at 16 threads and
# two million marks, half the time.
FEW_KEYS = 16


def spans(
    gaps: pl.DataFrame,
    marks: pl.DataFrame,
    keys: list[str],
    end: str,
    levels: dict[str, pl.Expr],
) -> pl.DataFrame:
    """Return per row of ``gaps`` and per level (its name, and which of ``marks`` count in
    it) ``<level>_ns``: the time the level's marks with the row's ``keys`` cover from its
    ``start_ns`` to ``end`` (a column). ``marks``: in start order (``by_start``).

    Each key (a thread, a lane) is taken apart: its marks, and the gaps that ask about it (a
    few keys; one lookup by time per part, not one by key and time over all of them). A key
    with a null in it matches nothing, as in a join."""
    probes = gaps.select(*keys, "start_ns", _end=end).with_row_index("_g")

    def apart(frame: pl.DataFrame) -> dict[tuple[object, ...], pl.DataFrame]:  # keys not copied
        return frame.partition_by(keys, as_dict=True, maintain_order=True, include_key=False)

    asked = {key: part for key, part in apart(probes).items() if None not in key}
    if len(asked) <= FEW_KEYS:  # each asked key's marks picked out: the others never copied
        picked = (
            marks.filter(*(pl.col(k) == v for k, v in zip(keys, key, strict=True))) for key in asked
        )
        by_key = {
            key: part.drop(keys) for key, part in zip(asked, picked, strict=True) if part.height
        }
    else:
        by_key = apart(marks)
    found = [_spans_of(part, by_key[key], levels) for key, part in asked.items() if key in by_key]
    rows = pl.concat(found) if found else None

    def column(name: str) -> pl.Series:  # 0 where no mark of the key covers anything
        zero = pl.zeros(gaps.height, pl.Int64, eager=True).alias(name)
        return zero if rows is None else zero.scatter(rows["_g"], rows[name])

    return pl.DataFrame(column(f"{v}_ns") for v in levels)


def _spans_of(
    probes: pl.DataFrame, marks: pl.DataFrame, levels: dict[str, pl.Expr]
) -> pl.DataFrame:
    """Return ``spans`` of the ``probes`` (row ``_g``, ``start_ns``, ``_end``) of one key, from
    its ``marks`` in start order.

    The union of the marks is never built: per start, the latest end so far (the reach) and
    the length of the union so far (each mark in start order adds its part past the reach
    before it). Every mark up to a time t started before t, so the time from t to the reach
    (if any) is covered by one of them: the time covered up to t is the union so far less
    that. So one lookup by time gives every level (the host split's three unions of one
    thread's marks: one pass, not three merges). Marks with the same start are one row, the
    last: it holds them all."""
    start, end = pl.col("start_ns"), pl.col("end_ns")
    cols: list[pl.Expr] = []
    for level, counts in levels.items():
        ends = pl.when(counts).then(end).otherwise(NO_REACH)
        before = ends.cum_max().shift(1, fill_value=NO_REACH)
        grown = pl.when(counts).then((end - pl.max_horizontal(start, before)).clip(0)).otherwise(0)
        cols += [ends.cum_max().alias(f"{level}_reach"), grown.cum_sum().alias(f"{level}_cum")]
    reached = marks.select("start_ns", *cols).filter(start.ne_missing(start.shift(-1)))
    t = pl.col("t")

    def upto(at: str) -> pl.DataFrame:  # covered time from the key's first mark up to a time
        probe = probes.select("_g", t=pl.col(at)).sort("t")
        hit = probe.join_asof(reached, left_on="t", right_on="start_ns", check_sortedness=False)
        return hit.sort("_g").select(
            (pl.col(f"{v}_cum") - (pl.max_horizontal(f"{v}_reach", t) - t)).fill_null(0).alias(v)
            for v in levels
        )

    late, early = upto("_end"), upto("start_ns")
    return pl.DataFrame(
        [probes["_g"], *((late[v] - early[v]).clip(lower_bound=0).alias(f"{v}_ns") for v in levels)]
    )


# a run's median launch call, given (per_rank.py: a rank's events); None: measured
Typical = tuple[float | None] | None


def launches(
    events: pl.DataFrame, edges: pl.DataFrame, numbered: bool, typical: Typical = None
) -> pl.DataFrame:
    """Return per hardware event its launch (the runtime call its ``device`` link names):
    ``launch_event``, ``launch_start_ns``, ``launch_end_ns``, ``launch_is_graph``, the
    launching thread, and ``launch_typical_ns``: the median time of the run's launch calls (what
    a launch costs on this platform, from the trace itself; ``typical``: given, the whole
    run's, where ``events`` are one rank's).
    ``numbered``: the events are numbered by row (``by_row``): the launches are gathered by
    row, not joined against every event."""
    found, rows = _launch_rows(events, edges, numbered)
    if typical is None:
        value = _call_times(found, rows, events, numbered).median()
        typical = (None if value is None else float(value),)  # type: ignore[arg-type]
    (typical_ns,) = typical
    calls = rows.select(
        launch_event="event_id",
        launch_start_ns="start_ns",
        launch_end_ns="end_ns",
        launch_is_graph=matching(rows["name"], GRAPH_LAUNCH),
        launch_pid="pid",
        launch_tid="tid",
        launch_typical_ns=pl.lit(None if typical_ns is None else int(typical_ns), pl.Int64),
    )  # the launches alone: the regex on their distinct names, not on every event's
    return found.join(calls, on="launch_event")


def _launch_rows(
    events: pl.DataFrame, edges: pl.DataFrame, numbered: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return the device links (``event_id``, ``launch_event``) and the distinct calls they name
    (their id, times, name, thread)."""
    found = edges.filter(pl.col("hop") == "device").select(event_id="dst", launch_event="src")
    ids = found["launch_event"].unique()
    columns = events.select("event_id", "start_ns", "end_ns", "name", "pid", "tid")
    if numbered:  # an edge naming an event the table lacks links nothing, as in the join
        rows = columns[ids.filter(ids.is_between(0, events.height - 1))]
    else:
        rows = columns.join(ids.to_frame("event_id"), on="event_id", how="semi")
    return found, rows


def launch_calls(events: pl.DataFrame, edges: pl.DataFrame, numbered: bool) -> pl.Series:
    """Return the time of each of the run's launch calls: the calls (distinct) that launch an
    execution (a ``device`` link to a hardware event), not a copy's or a sync's; their median
    is ``launch_typical_ns``."""
    return _call_times(*_launch_rows(events, edges, numbered), events, numbered)


def _call_times(
    found: pl.DataFrame, calls: pl.DataFrame, events: pl.DataFrame, numbered: bool
) -> pl.Series:
    """``launch_calls`` of the device links ``found`` and the calls they name."""
    if numbered:
        kinds = found.with_columns(
            kind=events["lane_kind"].gather(found["event_id"].clip(0, max(events.height - 1, 0)))
        )
    else:
        kinds = found.join(events.select("event_id", kind="lane_kind"), on="event_id")
    launching = kinds.filter(pl.col("kind") == "hardware")["launch_event"].unique().implode()
    took = calls.filter(pl.col("event_id").is_in(launching))
    return took["end_ns"] - took["start_ns"]


def host_split(gaps: pl.DataFrame, events: pl.DataFrame, numbered: bool) -> pl.DataFrame:
    """Return ``gaps`` with, for each ``host_dispatch`` or ``launch_blocked`` gap, how the
    host's late time (from the gap's start to the next launch) went on the launching thread:
    ``host_sync_ns``, ``host_runtime_ns``, ``host_framework_ns``, ``host_untraced_ns``, and
    what held it (``HELD_COLUMNS``: ``host.held``); for a gap whose execution was held on the
    device instead (``event_wait``, a collective or ``runtime`` after its queueing:
    ``waits.py``), the same over the whole gap: what the host did meanwhile; null for other
    causes.

    The launching thread is the launch call's, else the next op's (Neuron's dispatch runs on
    its op's thread). ``numbered``: the events are numbered by row (``by_row``)."""
    late_rows = _late_rows(gaps)
    if late_rows.is_empty():
        return gaps.with_columns(
            pl.lit(None, t).alias(c)
            for c, t in {**dict.fromkeys(HOST_SPLIT, pl.Int64), **HELD_COLUMNS}.items()
        )
    g = _op_threads(late_rows, events, numbered).with_columns(
        *_thread(pl.coalesce("launch_pid", "op_pid"), pl.coalesce("launch_tid", "op_tid")),
        _late_end=pl.min_horizontal("launch_ns", "end_ns"),
    )
    thread = ["_pid", "_tid"]
    levels = {"_s": pl.col("_sync"), "_c": pl.col("_call"), "_a": pl.lit(True)}
    late = (pl.col("_late_end") - pl.col("start_ns")).clip(lower_bound=0)
    marks = _host_marks(g, events, thread)
    counted = marks.filter(~pl.col("_frame")).drop("name", "_frame", "_runtime")
    g = g.hstack(spans(g, counted, thread, "_late_end", levels))
    split = {
        "host_sync_ns": pl.col("_s_ns"),
        "host_runtime_ns": pl.col("_c_ns") - pl.col("_s_ns"),
        "host_framework_ns": pl.col("_a_ns") - pl.col("_c_ns"),
        "host_untraced_ns": late - pl.col("_a_ns"),
    }
    found = g.select("_r", **{k: v.clip(lower_bound=0) for k, v in split.items()})
    named = _held(g, marks, thread)

    def placed(c: str, rows: pl.DataFrame, dtype: pl.DataType) -> pl.Series:  # null elsewhere
        none = pl.repeat(None, gaps.height, dtype=dtype, eager=True)
        return none.scatter(rows["_r"], rows[c]).alias(c)

    return gaps.with_columns(  # a join would copy every column
        *(placed(c, found, pl.Int64()) for c in split),
        *(placed(c, named, t()) for c, t in HELD_COLUMNS.items()),
    )


def _late_rows(gaps: pl.DataFrame) -> pl.DataFrame:
    """Return the rows (``_r``) ``host_split`` looks into, with the columns it reads:
    ``launch_ns`` the end of what it splits (the launch for a late host, the gap's end for an
    execution held on the device)."""
    cause = pl.col("cause")
    dispatch = cause.is_in(["host_dispatch", "launch_blocked"])
    # held on the device (waits.py): what the host did meanwhile, over the whole gap
    on_device = (cause == "event_wait") | (
        pl.col("device_wait_ns").is_not_null()
        & (
            (
                (cause == "collective")
                & ~pl.col("comm_lane")
                & (2 * pl.col("comm_ns") >= pl.col("device_wait_ns"))
            )
            | ((cause == "runtime") & (pl.col("launch_ns") >= pl.col("start_ns")))
        )
    )
    return (
        gaps.lazy()
        .with_row_index("_r")
        .filter(dispatch | on_device.fill_null(False))
        .select(
            "_r",
            "next_op_event",
            "launch_pid",
            "launch_tid",
            "start_ns",
            "end_ns",
            launch_ns=pl.when(dispatch).then("launch_ns").otherwise("end_ns"),
        )
        .collect()
    )


def _host_marks(late: pl.DataFrame, events: pl.DataFrame, thread: list[str]) -> pl.DataFrame:
    """Return the host marks of the threads asked about only (those that launch something
    late), and only the columns they need, in one pass: the whole host side of a wide table
    is a copy of most of it (at 5 million events, 1.3 GB more at the peak). Those
    ``host_split`` counts (``_sync``, ``_call``), and the Python frames (``_frame``) and
    runtime calls (``_runtime``) ``host.held`` names; in start order. A synchronize is known
    by its name among every event's distinct names."""
    kind = pl.col("lane_kind")
    synchronizes = matching(events["name"], SYNC_NAMES)
    calls = kind.is_in(["runtime", "transfer"]) | synchronizes
    frames = (kind == "annotation") & (pl.col("category") == "python_function")
    counted = kind.is_in(HOST_KINDS) & ((kind != "transfer") | (pl.col("source") == "neuron_rt"))
    host = (
        events.lazy()
        .filter((counted | frames) & _asked(late.select(thread).unique().drop_nulls()))
        .select(
            "start_ns",
            "end_ns",
            "name",
            *_thread("pid", "tid"),
            _sync=synchronizes,
            _call=calls,
            _frame=frames,
            _runtime=kind == "runtime",
        )
        .collect()
    )
    return by_start(host)  # each thread's marks in start order among the others'


def _held(late: pl.DataFrame, marks: pl.DataFrame, thread: list[str]) -> pl.DataFrame:
    """Return per late row (``_r``) the call and the Python frame that held more than half of
    its late time on its thread (``host.held``; ``marks``: ``_host_marks``), null where none
    did."""
    rows = late.select("_r", *thread, "start_ns", "_late_end")
    calls = held(rows, marks.filter(pl.col("_runtime")), "host_call", entry=False)
    python = held(rows, marks.filter(pl.col("_frame")), "host_frame", entry=True)
    out = rows.select("_r").join(calls, on="_r", how="left").join(python, on="_r", how="left")
    return out.select("_r", *HELD_COLUMNS)


def _asked(threads: pl.DataFrame) -> pl.Expr:
    """Whether an event's thread (``pid``, ``tid``) is one of ``threads`` (``_pid``,
    ``_tid``): compared one by one for a few, else looked up in them."""
    if threads.height <= FEW_KEYS:
        return pl.any_horizontal(
            False,
            *((pl.col("pid") == p) & (pl.col("tid") == t) for p, t in threads.iter_rows()),
        )
    return pl.struct("pid", "tid").is_in(
        threads.select(pl.struct(pid="_pid", tid="_tid")).to_series().implode()
    )


def _op_threads(late: pl.DataFrame, events: pl.DataFrame, numbered: bool) -> pl.DataFrame:
    """Return ``late`` with the thread of each row's next op (``op_pid``, ``op_tid``): found
    by row where the events are numbered by row (a gather, not a join against every event)."""
    if numbered:
        at = late["next_op_event"]
        return late.with_columns(op_pid=events["pid"].gather(at), op_tid=events["tid"].gather(at))
    ops = events.select(next_op_event="event_id", op_pid="pid", op_tid="tid")
    return late.join(ops, on="next_op_event", how="left")


def _thread(pid: pl.Expr | str, tid: pl.Expr | str) -> list[pl.Expr]:
    """Return a thread's key, ``_pid`` and ``_tid``: both null where either is (no thread)."""
    pid, tid = (pl.col(c) if isinstance(c, str) else c for c in (pid, tid))
    known = pid.is_not_null() & tid.is_not_null()
    return [pl.when(known).then(pid).alias("_pid"), pl.when(known).then(tid).alias("_tid")]


HOST_SPLIT = ("host_framework_ns", "host_runtime_ns", "host_sync_ns", "host_untraced_ns")
