"""Every device gap of a run, tallied: what the ops' and steps' idle, the summary's sums by
cause and the next steps read of them, and no more (docs/gaps.md, "Per op";
docs/distributed.md, "gaps a rank at a time").

A run's device gaps are as many as its executions; the figures made of all of them (the
idle before each op and in each step, the idle per cause, the hints) are sums, counts and
maxima over a few keys. ``tally`` makes those per (cause, op, step) once, with the distinct
copies, and the launch calls' and Python frames' time per op that the hints name; ``merged``
adds tallies up exactly. The run read whole tallies its gaps; a multi-rank run read a file
at a time tallies each file's in its worker, and only the tallies travel to the reducer.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from trace_analyzer.model.schema import matching, text

KEYS = ("cause", "next_op", "step")
# the host's split of a late launch (hints.HOST_HINTS), summed where the gaps have it
HOST = ("host_untraced_ns", "host_framework_ns", "host_runtime_ns", "host_sync_ns")
LOADER, EXPOSED, COMPILED = "host_data_loader_ns", "exposed_communication_ns", "host_compiled_ns"
HELD = ("host_call", "host_frame")  # what held the host before a late launch, per op
STEP_SCHEMA = {"start_ns": pl.Int64, "step_end": pl.Int64, "step": pl.Int64}


@dataclass(frozen=True, repr=False)
class Tally:
    """The device gaps of a run tallied. ``sums``: per (cause, next_op, step) the gaps (``n``),
    their ``idle_ns`` and longest (``idle_max``), the DataLoader's time in them
    (``loader_ns``, the gaps it is in: ``loader_gaps``, those that do not say: ``loader_nulls``),
    the exposed communication (``exposed_ns``, ``exposed_gaps``), the compiled code's time
    (``compiled_ns``) and the host's split (``HOST``); ``step``: the ProfilerStep that launched
    the gap's next execution (null: none). ``copies``: the distinct (next_op, cause,
    transfer_event). ``held``: per kind of ``HELD`` the host_dispatch gaps' time in each
    call or frame per op (``ns``), and for frames their callers (``host_caller``, ``n``).
    ``has``: the columns of those the gaps had."""

    sums: pl.DataFrame
    copies: pl.DataFrame
    held: dict[str, pl.DataFrame]
    has: frozenset[str]

    def __repr__(self) -> str:
        return f"Tally({self.sums.height} sums)"

    @property
    def gaps(self) -> int:
        """How many gaps were tallied."""
        return int(self.sums["n"].sum()) if self.sums.height else 0


def steps_of(events: pl.DataFrame, step_re: str) -> pl.DataFrame:
    """The ProfilerSteps of ``events`` (names matching ``step_re``) as the gaps are placed in
    them: ``start_ns``, ``step_end``, ``step``, sorted by all three (the same order whatever
    order the rows come in: a run's files read one at a time or together)."""
    return (
        events.lazy()
        .filter(matching(events["name"], step_re))
        .select(
            "start_ns",
            step_end="end_ns",
            step=text("name").str.extract(step_re).cast(pl.Int64, strict=False),
        )
        .drop_nulls("step")
        .collect()
        .pipe(sorted_steps)
    )


def sorted_steps(steps: pl.DataFrame) -> pl.DataFrame:
    """``steps`` (``steps_of``'s columns) in their order: by start, end, then number."""
    return steps.cast(STEP_SCHEMA).sort("start_ns", "step_end", "step")  # type: ignore[arg-type]


def _placed(every: pl.DataFrame, steps: pl.DataFrame) -> pl.LazyFrame:
    """``every`` gap with the step that launched its next execution (``step``): the last step
    started before its launch (else its start), while that step had not ended."""
    at = pl.coalesce("launch_ns", "start_ns") if "launch_ns" in every.columns else "start_ns"
    rows = every.lazy().with_columns(_at=at)
    if steps.is_empty():
        return rows.with_columns(step=pl.lit(None, pl.Int64))
    return (
        rows.sort("_at")
        .join_asof(steps.lazy(), left_on="_at", right_on="start_ns", strategy="backward")
        .with_columns(step=pl.when(pl.col("_at") < pl.col("step_end")).then(pl.col("step")))
    )


def _sum(every: pl.DataFrame, column: str, where: pl.Expr | None = None) -> pl.Expr:
    """The sum of ``column`` over a group's gaps (null as 0; 0 without the column)."""
    if column not in every.columns:
        return pl.lit(0, pl.Int64)
    value = pl.col(column).fill_null(0)
    return (value.filter(where) if where is not None else value).sum()


def tally(every: pl.DataFrame, steps: pl.DataFrame) -> Tally:
    """Return the ``Tally`` of ``every`` device gap of a run (or of one file of it), placed
    in the run's ``steps`` (``steps_of``)."""
    has = frozenset(c for c in (*HOST, LOADER, EXPOSED, COMPILED, *HELD) if c in every.columns)
    idle = pl.col("idle_ns" if "idle_ns" in every.columns else "duration_ns")
    loader = pl.col(LOADER) if LOADER in has else pl.lit(None, pl.Int64)
    exposed = pl.col(EXPOSED) if EXPOSED in has else pl.lit(0, pl.Int64)
    sums = (
        _placed(every, steps)
        .group_by(*KEYS)
        .agg(
            n=pl.len().cast(pl.Int64),
            idle_ns=idle.sum(),
            idle_max=idle.max(),
            loader_ns=_sum(every, LOADER),
            loader_gaps=(loader.fill_null(0) > 0).sum().cast(pl.Int64),
            loader_nulls=(loader.is_null().sum() if LOADER in has else pl.len()).cast(pl.Int64),
            exposed_ns=exposed.filter(exposed > 0).sum(),
            exposed_gaps=(exposed > 0).sum().cast(pl.Int64),
            compiled_ns=_sum(every, COMPILED),
            **{c: pl.col(c).sum() for c in HOST if c in has},
        )
        .collect()
    )
    copies = (
        every.lazy()
        .select("next_op", "cause", "transfer_event")
        .drop_nulls("transfer_event")
        .unique()
        .collect()
    )
    late = every.lazy().filter(pl.col("cause") == "host_dispatch")
    held = {}
    for column in (c for c in HELD if c in has):
        by = ("next_op", column, "host_caller") if column == "host_frame" else ("next_op", column)
        held[column] = (
            late.filter(pl.col(column).is_not_null())
            .group_by(*by)
            .agg(ns=pl.col(f"{column}_ns").sum(), n=pl.len().cast(pl.Int64))
            .collect()
        )
    return Tally(sums, copies, held, has)


def merged(tallies: list[Tally]) -> Tally:
    """Return ``tallies`` (of the files of one run, each made with the run's steps) added up:
    the ``Tally`` of all their gaps."""
    held = [t for t in tallies if t.sums.width]
    if len(held) == 1:
        return held[0]
    if not held:
        return tallies[0]
    sums = pl.concat([t.sums for t in held], how="vertical_relaxed")
    summed = [c for c in sums.columns if c not in (*KEYS, "idle_max")]
    has = frozenset().union(*(t.has for t in held))
    kinds = {k for t in held for k in t.held}
    return Tally(
        sums.group_by(*KEYS).agg(*(pl.col(c).sum() for c in summed), pl.col("idle_max").max()),
        pl.concat([t.copies for t in held], how="vertical_relaxed").unique(),
        {k: _added([t.held[k] for t in held if k in t.held]) for k in kinds},
        has,
    )


def _added(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """``held`` tables of one kind added up (``ns`` and ``n`` per their other columns)."""
    out = pl.concat(frames, how="vertical_relaxed")
    keys = [c for c in out.columns if c not in ("ns", "n")]
    return out.group_by(*keys).agg(pl.col("ns").sum(), pl.col("n").sum())


NONE = Tally(pl.DataFrame(), pl.DataFrame(), {}, frozenset())  # a run without device gaps
