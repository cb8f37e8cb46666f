"""The host's own time, by what holds it (docs/critical-path.md, "What-ifs"): each thread's
time cut where an op or annotation starts or ends, each piece named after the innermost one
holding it; the host time on a critical path named after the piece it lies in; and the time
of each of the host's gaps that some ranges cover (what removing them buys).

Compiled where a compiler built ``_replay`` (``_replay.own_pieces``, ``_replay.covered``);
the polars versions here are their references, held to the same answers on the corpus.
"""

from __future__ import annotations

import polars as pl

from trace_analyzer.model.arrow import frame
from trace_analyzer.model.intervals import innermost
from trace_analyzer.model.schema import matching
from trace_analyzer.questions.critical.graph import STEP_MARK, of_events
from trace_analyzer.questions.critical.link import _replay

# Ranges a host segment is named after: framework ops and annotations (frames, user ranges).
LABELS = ("framework_op", "annotation")
UNTRACED = "untraced"
I64 = pl.Int64


def own_time(
    events: pl.DataFrame,
    threads: pl.DataFrame | None,
    window: str | None,
    *,
    native: bool = True,
) -> pl.DataFrame:
    """The host threads' time (``threads``: pid, tid; None: every thread's) cut where an op
    or annotation starts or ends, each piece with ``label``, the innermost one holding its
    middle (as ``intervals.enclosing`` finds it; pieces no range holds are left out): pid,
    tid, label, start_ns, end_ns, by thread and time. A step's own mark (or the ``window``
    annotation) is not a label."""
    pieces = events.select("event_id", "name", "lane_kind", "pid", "tid", "start_ns", "end_ns")
    pieces = pieces.filter(pl.col("lane_kind").is_in(LABELS))
    if threads is not None:
        pieces = pieces.join(threads, on=["pid", "tid"], how="semi")
    keep = ~matching(pieces["name"], STEP_MARK)
    if window:
        keep &= ~matching(pieces["name"], window)
    ranges = pieces.filter(keep).select("pid", "tid", start="start_ns", end="end_ns", id="event_id")
    found = _compiled(ranges) if native and _replay is not None else _by_polars(ranges)
    label = of_events(events, "name", found["parent"]).cast(pl.String).alias("label")
    return found.select("pid", "tid", label, "start_ns", "end_ns")


def _compiled(ranges: pl.DataFrame) -> pl.DataFrame:
    """``own_time``'s pieces (pid, tid, start_ns, end_ns, parent) by ``_replay.own_pieces``
    (which puts each thread's ranges in order itself: in the events' order, by start, only
    ties are sorted)."""
    assert _replay is not None
    columns = ranges.drop_nulls(["pid", "tid"]).select(
        pl.col("pid", "tid", "start", "end", "id").cast(I64)
    )
    return frame(_replay.own_pieces(columns.rechunk().__arrow_c_stream__()))


def _by_polars(ranges: pl.DataFrame) -> pl.DataFrame:
    """``own_time``'s pieces by polars (the compiled sweep's reference)."""
    ranges = ranges.drop_nulls(["pid", "tid"]).with_columns(pl.col("pid", "tid").cast(I64))
    bounds = (
        pl.concat([ranges.select("pid", "tid", t="start"), ranges.select("pid", "tid", t="end")])
        .unique()
        .sort("pid", "tid", "t")
        .with_columns(u=pl.col("t").shift(-1).over("pid", "tid"))
        .filter(pl.col("u") > pl.col("t"))
        .with_row_index("id")
    )
    found = innermost(
        ranges,
        bounds.select("pid", "tid", "id", t=(pl.col("t") + pl.col("u")) // 2),
        ["pid", "tid"],
    )
    return (
        bounds.with_columns(pl.col("id").cast(I64))
        .join(found, on="id")
        .select("pid", "tid", pl.col("t", "u").cast(I64).name.map(_ns), pl.col("parent").cast(I64))
        .sort("pid", "tid", "start_ns")
    )


def _ns(name: str) -> str:
    return {"t": "start_ns", "u": "end_ns"}[name]


def labelled(segs: pl.DataFrame, own: pl.DataFrame) -> pl.DataFrame:
    """``segs`` with ``label``: for host time, the innermost op or annotation holding its
    middle on its thread (``own``: ``own_time``), ``UNTRACED`` where none does."""
    mid = (pl.col("start_ns") + pl.col("end_ns")) // 2
    host = (
        segs.with_row_index("_r").filter(pl.col("kind") == "host").with_columns(_t=mid).sort("_t")
    )
    found = host.select("_r", "pid", "tid", "_t").join_asof(
        own.rename({"start_ns": "_a", "end_ns": "_b", "label": "_label"}),
        left_on="_t", right_on="_a", by=["pid", "tid"], strategy="backward",
        check_sortedness=False,
    )  # fmt: skip
    found = found.select(
        "_r", _label=pl.when(pl.col("_t") < pl.col("_b")).then("_label").otherwise(pl.lit(UNTRACED))
    )
    return (
        segs.with_row_index("_r")
        .join(found, on="_r", how="left")
        .with_columns(label=pl.coalesce("label", "_label"))
        .drop("_r", "_label")
    )
