"""``traceana gaps --jobs N`` and ``--scheduler ADDRESS``: the gaps of a run mapped a file at a
time in passes, then reduced (docs/distributed.md, "gaps a rank at a time").

The passes are ``per_rank.gaps_passes``, run over the workers by ``batch/passes.py``: with
``--step`` or ``--window`` the run's window first; each file's ``GapsFacts``, from which the
main process decides the run's ``Fixed`` (``per_rank.fixed_of``: the window, the launch
latency, the median launch call); each file measured with it into its ``GapsPart``; then how
many of its events sort before each event the parts' gap rows name (``per_rank.tie_counts``),
counted as they come (``per_rank.Renumber``: the run's event ids), and the parts reduced
(``per_rank.combine_gaps``); with ``--next``, the critical path's passes in step with them.
Each pass reads each file again, from the cache where there is
one. A run that cannot be read a file at a time, whose files are recorded far apart or share
process and device numbers, or with no hardware lane that ``--lane`` matches, is read whole
(None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trace_analyzer.analyses.passes import Passes
from trace_analyzer.batch.passes import by_passes
from trace_analyzer.batch.ranks import Mapped, Place
from trace_analyzer.cache import Cache
from trace_analyzer.inputs.discover import Run
from trace_analyzer.loading.profile import Profile, load_parts
from trace_analyzer.questions.critical.per_rank import critical_passes
from trace_analyzer.questions.gaps.gate import with_verdict
from trace_analyzer.questions.gaps.per_rank import GapsOptions, gaps_passes


@dataclass(frozen=True)
class GapsMap(GapsOptions):
    """How each file is read and measured (picklable): the gaps' options, ``ranks``
    (--rank), ``strict``, the ``cache`` and its ``place`` (None: no cache)."""

    ranks: str | None = None
    strict: bool = False
    cache: Cache | None = None
    place: Place = None

    def load(self, run: Run, max_bytes: int | None) -> list[Profile]:
        """The profiles of the file ``run``, through the cache (or without it)."""
        if self.cache is None:
            return load_parts(run, strict=self.strict, max_bytes=max_bytes)
        return self.cache.load_parts(run, self.place, strict=self.strict, max_bytes=max_bytes)


def gaps_by_rank(
    run: Run,
    how: GapsMap,
    *,
    jobs: int = 1,
    scheduler: str | None = None,
    max_bytes: int | None = None,
    next_fix: bool = False,
) -> Mapped | None:
    """Return the gaps of ``run`` mapped a file at a time (module doc), or None where it is to
    be read whole; with ``next_fix`` (``--next``, no step), with the verdict of its critical
    path measured in step with them (``critical.per_rank.critical_passes``). A file that
    failed is a TraceanaError naming it."""
    options = GapsOptions(how.lanes, how.step, how.span, how.min_gap_ns, how.latency_ns)

    def passes(root: str) -> dict[str, Passes[Any]]:
        asked: dict[str, Passes[Any]] = {"gaps": gaps_passes(options, root)}
        if next_fix:
            asked["critical"] = critical_passes(root)
        return asked

    found = by_passes(
        run, passes, how.load, how.ranks, jobs=jobs, scheduler=scheduler, max_bytes=max_bytes
    )
    if found is None:
        return None
    g = found.result["gaps"]
    if next_fix:
        g = with_verdict(g, found.result["critical"].verdict)
    return Mapped(g, found.warnings)
