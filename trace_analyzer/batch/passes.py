"""Questions of a multi-rank run mapped a file at a time in passes, over the workers of
``ranks --jobs`` (docs/distributed.md, "report a rank at a time").

``by_passes`` runs questions' ``Passes`` (analyses/passes.py) in step over a run's trace
files (``loading/by_file.py``): each round reads every file once (through the cache, as
``batch/ranks.py`` reads it) in-process for one job, in local worker processes, or on a
Dask cluster, and gives each question the values of its pass. A file holding none of the
ranks --rank names gives nothing, in every round. A run that cannot be read a file at a
time, whose files turn out to be recorded far apart, or that a question declines (its result
None) is read whole (None). A file that fails stops the command with one line naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from trace_analyzer.analyses.passes import Passes, Round, together
from trace_analyzer.batch.ranks import Mapped, _far_apart, each_file
from trace_analyzer.batch.rows import Row, guarded
from trace_analyzer.batch.runs import RunSpec
from trace_analyzer.inputs.discover import Run
from trace_analyzer.loading.by_file import by_file
from trace_analyzer.loading.profile import Profile, shared_ranks
from trace_analyzer.loading.select import rank_matches, ranks_of, select_ranks

Load = Callable[[Run, int | None], list[Profile]]  # a file's profiles, through the cache


def read_round(spec: RunSpec, load: Load, ranks: str | None, passes: Round) -> list[Row]:
    """The per-file function of one round: a row with what ``passes`` give of the file read
    by ``load`` (``out``; None when --rank, ``ranks``, names none of its ranks), its ``span``,
    ``warnings`` and ``reads``; a failure is a row with ``error`` set. It never raises."""

    def body() -> Row:
        assert spec.run is not None
        profile = load(spec.run, spec.max_bytes)[0]  # one file: one run, never parts
        events = profile.events
        span = (events["start_ns"].min(), events["end_ns"].max())
        row = {"span": span, "warnings": profile.warnings, "reads": profile.reads, "out": None}
        if ranks is not None:
            if not any(rank_matches(ranks, r) for r in ranks_of(profile)):
                return row
            profile = select_ranks(profile, ranks)
        return {**row, "out": passes(profile)}

    return guarded(spec, body)


def by_passes(
    run: Run,
    passes: Callable[[str], dict[str, Passes[Any]]],
    load: Load,
    ranks: str | None,
    *,
    jobs: int = 1,
    scheduler: str | None = None,
    max_bytes: int | None = None,
) -> Mapped | None:
    """The results of the questions ``passes(root)`` gives for ``run`` (``Mapped``: by name,
    with the warnings of its files as the run read whole says them), each file
    read by ``load`` (picklable: a bound method of ``RankMap`` or ``GapsMap``) once per round
    and its ranks --rank names (``ranks``) kept (module doc); None where the run is to be read
    whole."""
    files = by_file(run)
    if files is None:
        return None
    asked = passes(files.run.name)
    kept: dict[int, int] = {}  # a file's place in the run -> its place among those that give
    first: list[Row] = []

    def each(one: Round) -> Iterator[tuple[int, list[Any]]]:
        task = partial(read_round, load=load, ranks=ranks, passes=one)
        found = each_file(files, task, jobs, scheduler, max_bytes)
        if not first:  # the first round: every row held, its spans and warnings kept
            first.extend(row for _, row in sorted(found, key=lambda f: f[0]))
            if _far_apart([r["span"] for r in first]):
                raise _ReadWhole
            given = [i for i, r in enumerate(first) if r["out"] is not None]
            kept.update((i, n) for n, i in enumerate(given))
            found = iter(enumerate(first))
        for i, row in found:
            if i in kept:
                yield kept[i], row["out"]

    try:
        results = together(asked, each)
    except _ReadWhole:
        return None
    finally:
        for g in asked.values():
            g.close()
    if not kept or any(r is None for r in results.values()):
        return None
    warnings = [*files.warnings, *(w for r in first for w in r["warnings"])]
    warnings += shared_ranks([read for r in first for read in r["reads"]])
    return Mapped(results, list(dict.fromkeys(warnings)))


class _ReadWhole(Exception):
    """The run's files were recorded far apart: it is read whole."""
