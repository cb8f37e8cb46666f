"""``traceana gaps --jobs N`` and ``--scheduler ADDRESS``: the gaps of a run mapped a file at a
time in three passes, then reduced (docs/distributed.md, "gaps a rank at a time").

The first pass reads each file (through the cache, as ``batch/ranks.py`` reads it) for its
``GapsFacts``; the main process decides the run's ``Fixed`` from them (``per_rank.fixed_of``:
the window, the launch latency, the median launch call). The second pass reads each file
again (from the cache, where there is one) and measures it with that into its ``GapsPart``.
The third reads each file once more for how many of its events sort before each event the
parts' gap rows name (``per_rank.tie_counts``): the main process counts them as they come
(``per_rank.Renumber``: the run's event ids) and reduces the parts
(``per_rank.combine_gaps``). A run that cannot be read a file at a time, whose files are
recorded far apart or share process and device numbers, or with no hardware lane that
``--lane`` matches, is read whole (None).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import polars as pl

from trace_analyzer.analyses.busy import Window
from trace_analyzer.batch.ranks import Mapped, Place, _far_apart, each_file
from trace_analyzer.batch.rows import Row, guarded
from trace_analyzer.batch.runs import RunSpec
from trace_analyzer.cache import Cache
from trace_analyzer.inputs.discover import Run
from trace_analyzer.loading.by_file import by_file
from trace_analyzer.loading.profile import Profile, load_parts
from trace_analyzer.loading.select import rank_matches, ranks_of, select_ranks
from trace_analyzer.questions.gaps.analysis import Fixed
from trace_analyzer.questions.gaps.per_rank import (
    Renumber,
    combine_gaps,
    fixed_of,
    gaps_facts,
    gaps_part,
    shared,
    tie_counts,
    window_facts,
    window_from,
)


@dataclass(frozen=True)
class GapsMap:
    """How each file is read and measured (picklable): ``lanes`` (--lane), ``min_gap_ns``,
    ``latency_ns`` (--latency), ``ranks`` (--rank), ``strict``, the ``cache`` and its
    ``place`` (None: no cache)."""

    lanes: str | None = None
    step: int | None = None
    span: tuple[int, int] | None = None
    min_gap_ns: int = 0
    latency_ns: int | None = None
    ranks: str | None = None
    strict: bool = False
    cache: Cache | None = None
    place: Place = None

    def load(self, run: Run, max_bytes: int | None) -> Profile | None:
        """The one profile of the file ``run``, through the cache (or without it), its ranks
        --rank names only (None: it has none of them)."""
        if self.cache is None:
            found = load_parts(run, strict=self.strict, max_bytes=max_bytes)
        else:
            found = self.cache.load_parts(run, self.place, strict=self.strict, max_bytes=max_bytes)
        if self.ranks is None:
            return found[0]
        if not any(rank_matches(self.ranks, r) for r in ranks_of(found[0])):
            return None
        return select_ranks(found[0], self.ranks)


def read_window(spec: RunSpec, how: GapsMap) -> list[Row]:
    """The pass before the first with ``--step`` or ``--window``: a row with the file's
    ``window`` facts (``per_rank.window_facts``), or its ``error``."""
    return _guarded(spec, how, lambda p: {"window": window_facts(p, how.step)})


def read_facts(spec: RunSpec, how: GapsMap, window: Window | None = None) -> list[Row]:
    """The first pass's per-file function: a row with the file's ``facts`` (its executions
    clipped to the run's ``window``, where one was asked for), its ``span`` and ``warnings``,
    or its ``error``; it never raises."""
    return _guarded(spec, how, lambda p: {"facts": gaps_facts(p, how.lanes, window)})


def read_part(spec: RunSpec, how: GapsMap, fixed: Fixed) -> list[Row]:
    """The second pass's per-file function: a row with the file's ``part`` measured with
    ``fixed``, or its ``error``."""
    return _guarded(
        spec,
        how,
        lambda p: {"part": gaps_part(p, fixed, min_gap_ns=how.min_gap_ns, lanes=how.lanes)},
    )


def read_counts(spec: RunSpec, how: GapsMap, queries: pl.DataFrame) -> list[Row]:
    """The third pass's per-file function: a row with the file's ``tie_counts`` of
    ``queries`` (``counts``), or its ``error``."""
    return _guarded(spec, how, lambda p: {"counts": tie_counts(p.events, queries)})


def _guarded(spec: RunSpec, how: GapsMap, made: Any) -> list[Row]:
    """One row of ``made(profile)`` for the file of ``spec``, with its span and warnings
    (``rows.guarded``: a failure is a row with ``error`` set); a file with none of the ranks
    --rank names, a row without ``made``'s."""

    def body() -> Row:
        assert spec.run is not None
        profile = how.load(spec.run, spec.max_bytes)
        if profile is None:
            nothing = {"facts": None, "part": None, "counts": None, "window": None}
            return {"span": (None, None), "warnings": [], **nothing}
        events = profile.events
        span = (events["start_ns"].min(), events["end_ns"].max())
        return {"span": span, "warnings": profile.warnings, **made(profile)}

    return guarded(spec, body)


def gaps_by_rank(
    run: Run,
    how: GapsMap,
    *,
    jobs: int = 1,
    scheduler: str | None = None,
    max_bytes: int | None = None,
) -> Mapped | None:
    """Return the gaps of ``run`` mapped a file at a time (module doc), or None where it is to
    be read whole. A file that failed is a TraceanaError naming it."""
    files = by_file(run)
    if files is None:
        return None

    def each(task: Any) -> Iterator[tuple[int, Row]]:  # as they come, with their file's place
        return each_file(files, task, jobs, scheduler, max_bytes)

    def mapped(task: Any) -> list[Row]:
        return [row for _, row in sorted(each(task), key=lambda found: found[0])]

    window = None
    if how.step is not None or how.span is not None:
        told = [r["window"] for r in mapped(partial(read_window, how=how)) if r["window"]]
        if not told:
            return None  # no file holds the ranks --rank names: read whole, as it says so
        window = window_from(told, how.step, how.span)
    first = mapped(partial(read_facts, how=how, window=window))
    facts = [r["facts"] for r in first if r["facts"]]
    if _far_apart([r["span"] for r in first]) or shared(facts):
        return None
    run_facts = fixed_of(facts, how.latency_ns, window)
    if run_facts is None:
        return None
    rows = mapped(partial(read_part, how=how, fixed=run_facts.fixed))
    place = {i: n for n, i in enumerate(i for i, r in enumerate(rows) if r["part"] is not None)}
    parts = [r.pop("part") for r in rows if r["part"] is not None]  # held by the list alone
    ids = Renumber([p.refs for p in parts])
    if ids.queries.height:
        for i, row in each(partial(read_counts, how=how, queries=ids.queries)):
            if row["counts"] is not None:
                ids.add(place[i], *row["counts"])
    result = combine_gaps(parts, run_facts, ids, root=files.run.name)
    warnings = [*files.warnings, *(w for r in rows for w in r["warnings"])]
    return Mapped(result, list(dict.fromkeys(warnings)))  # type: ignore[arg-type]
