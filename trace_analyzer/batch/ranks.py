"""``traceana ranks --jobs N`` and ``--scheduler ADDRESS``: the ranks of a run mapped a file at
a time, then reduced (docs/distributed.md, "A rank at a time").

Each trace file of the run (``loading/by_file.py``) is read alone, through the analysis cache
(an entry per file, as for the file named alone), and made its ``RankPart``
(``questions/ranks/per_rank.rank_part``) where it is read: in-process one file after another
for one job, in local worker processes (``workers.local``), or on a Dask cluster
(``workers.dask``). The main process holds the parts only and reduces them
(``per_rank.combine``): the same ``RanksResult`` as the run read whole. A run that cannot be
read a file at a time (an Explorer export, NEFF/NTFF pairs, one file, an archive), or whose
files turn out to be recorded far apart (parts of a folder, loading/parts.py), is read whole,
as without these options. A file that fails (unreadable, or its worker died) stops the
command with one line naming it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from trace_analyzer.batch.rows import Row, guarded
from trace_analyzer.batch.runs import RunSpec
from trace_analyzer.batch.workers import NO_LIMITS, Analyse, dask, local
from trace_analyzer.cache import Cache
from trace_analyzer.errors import TraceanaError, UsageError
from trace_analyzer.inputs.discover import Run
from trace_analyzer.loading.by_file import ByFile, by_file
from trace_analyzer.loading.clocks import FAR_APART_NS
from trace_analyzer.loading.profile import Profile, load_parts, shared_ranks
from trace_analyzer.loading.select import rank_matches, ranks_of, select_ranks, what_it_holds
from trace_analyzer.model.schema import COLLECTIVES
from trace_analyzer.questions.ranks.per_rank import RankPart, combine, rank_part

Place = tuple[Path, Path | None] | None  # a cache folder and the folder it lies in


@dataclass(frozen=True)
class RankMap:
    """How each file is read and made a part (picklable: it travels to the workers):
    ``step`` (that ProfilerStep only), ``ranks`` (--rank), ``strict``, the ``cache`` and its
    ``place`` for the path named (``Cache.place_for``; None: no cache)."""

    step: int | None = None
    ranks: str | None = None
    strict: bool = False
    cache: Cache | None = None
    place: Place = None

    def load(self, run: Run, max_bytes: int | None) -> list[Profile]:
        """The profiles of ``run`` read through the cache (or without it), their collectives'
        args where they lie, else their text alone (``COLLECTIVES``: collectives.py reads them)."""
        if self.cache is None:
            return load_parts(run, args=COLLECTIVES, strict=self.strict, max_bytes=max_bytes)
        return self.cache.load_parts(
            run, self.place, args=COLLECTIVES, strict=self.strict, max_bytes=max_bytes
        )


@dataclass(frozen=True)
class Mapped:
    """What one run mapped a file at a time gives (its ranks, its gaps, or the results of
    several questions by name: batch/passes.py), and the warnings of its files."""

    result: Any
    warnings: list[str]


def read_rank(spec: RunSpec, how: RankMap) -> list[Row]:
    """The per-file function the workers run: one row holding the file's ``part`` (None when
    --rank names none of its ranks), the ranks it ``held``, its ``span`` (ns), ``warnings``
    and ``reads``; a failure is a row with ``error`` set (and, for traceana's own errors, its
    ``template`` and ``param``). It never raises."""

    def body() -> Row:
        assert spec.run is not None
        profile = how.load(spec.run, spec.max_bytes)[0]  # one file: one run, never parts
        held = ranks_of(profile)
        span = profile.events.select(lo=pl.col("start_ns").min(), hi=pl.col("end_ns").max()).row(0)
        out = {"held": held, "span": span, "warnings": profile.warnings, "reads": profile.reads}
        if how.ranks is not None:
            if not any(rank_matches(how.ranks, r) for r in held):
                return {**out, "part": None}
            profile = select_ranks(profile, how.ranks)
        return {**out, "part": rank_part(profile, step=how.step)}

    return guarded(spec, body)


def by_rank(
    run: Run,
    how: RankMap,
    *,
    jobs: int = 1,
    scheduler: str | None = None,
    max_bytes: int | None = None,
    analyse: Analyse | None = None,
) -> Mapped | None:
    """Return the ranks of ``run`` mapped a file at a time (module doc): in-process for one
    job, ``jobs`` worker processes, or the Dask scheduler at ``scheduler``; None when the
    run is to be read whole. ``analyse``: the per-file function (``read_rank`` with ``how``).
    A file that failed is a TraceanaError naming it."""
    files = by_file(run)
    if files is None:
        return None
    task = analyse or partial(read_rank, how=how)
    rows = [row for _, row in sorted(each_file(files, task, jobs, scheduler, max_bytes))]
    if _far_apart([r["span"] for r in rows]):
        return None  # parts of a folder: read whole, as loading splits it
    return _reduced(files, rows, how)


def each_file(
    files: ByFile, task: Analyse, jobs: int, scheduler: str | None, max_bytes: int | None
) -> Iterator[tuple[int, Row]]:
    """Yield ``task``'s row for each file of ``files`` as the workers finish them (in-process
    for one job, ``jobs`` worker processes, or the Dask ``scheduler``), with the file's place
    in the run; a file that failed is raised, a TraceanaError naming it."""
    specs = [
        RunSpec(str(f.root), str(f.root), None, None, None, run=f, max_bytes=max_bytes)
        for f in files.files
    ]
    order = {s.run_id: i for i, s in enumerate(specs)}
    found = (
        dask(specs, scheduler, NO_LIMITS, task)
        if scheduler
        else local(specs, jobs, NO_LIMITS, task)
    )
    for rows in found:
        if rows[0].get("error"):
            raise _failed(rows[0])
        yield order[rows[0]["run_id"]], rows[0]


def _reduced(files: ByFile, rows: list[Row], how: RankMap) -> Mapped:
    """The reduce: the parts combined, the files' warnings gathered."""
    parts: list[RankPart] = [r["part"] for r in rows if r["part"] is not None]
    if how.ranks is not None and not parts:
        held = sorted({n for r in rows for n in r["held"]})
        said = what_it_holds(files.run.name, held)
        raise UsageError(f"{{param}} {how.ranks}: {said}", param="ranks")
    result = combine(parts, root=files.run.name, step=how.step)
    warnings = [*files.warnings, *(w for r in rows for w in r["warnings"])]
    warnings += shared_ranks([read for r in rows for read in r["reads"]])
    return Mapped(result, list(dict.fromkeys(warnings)))


def _failed(row: Row) -> TraceanaError:
    """The one-line error of a file that failed: traceana's own error as it was raised (its
    parameter worded as a flag), else what happened, naming the file."""
    template = row.get("template")
    if template:
        return UsageError(template, param=row.get("param"))
    why = str(row["error"]).split("; the next batch")[0].replace("this run", "it")
    return TraceanaError(f"{row['run_id']}: {why}")


def _far_apart(spans: list[tuple[int | None, int | None]]) -> bool:
    """True when the files' spans fall in two groups or more, far apart
    (``loading.clocks.groups``' rule: more than ``FAR_APART_NS`` between them)."""
    reach = None
    for lo, hi in sorted((lo, hi) for lo, hi in spans if lo is not None and hi is not None):
        if reach is not None and lo - reach > FAR_APART_NS:
            return True
        reach = hi if reach is None else max(reach, hi)
    return False
