"""``traceana gaps --jobs N`` and ``--scheduler ADDRESS``: the gaps of a run mapped a file at a
time in passes, then reduced (docs/distributed.md, "gaps a rank at a time").

The passes are ``per_rank.gaps_passes``, run over the workers by ``batch/passes.py``: with
``--step`` or ``--window`` the run's window first; each file's ``GapsFacts``, from which the
main process decides the run's ``Fixed`` (``per_rank.fixed_of``: the window, the launch
latency, the median launch call); each file measured with it into its ``GapsPart``; then how
many of its events sort before each event the parts' gap rows name (``per_rank.tie_counts``),
counted as they come (``per_rank.Renumber``: the run's event ids), and the parts reduced
(``per_rank.combine_gaps``). Each pass reads each file again, from the cache where there is
one. A run that cannot be read a file at a time, whose files are recorded far apart or share
process and device numbers, or with no hardware lane that ``--lane`` matches, is read whole
(None).
"""

from __future__ import annotations

from dataclasses import dataclass

from trace_analyzer.batch.passes import by_passes
from trace_analyzer.batch.ranks import Mapped, Place
from trace_analyzer.cache import Cache
from trace_analyzer.inputs.discover import Run
from trace_analyzer.loading.profile import Profile, load_parts
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
) -> Mapped | None:
    """Return the gaps of ``run`` mapped a file at a time (module doc), or None where it is to
    be read whole. A file that failed is a TraceanaError naming it."""
    options = GapsOptions(how.lanes, how.step, how.span, how.min_gap_ns, how.latency_ns)
    found = by_passes(
        run,
        lambda root: {"gaps": gaps_passes(options, root)},
        how.load,
        how.ranks,
        jobs=jobs,
        scheduler=scheduler,
        max_bytes=max_bytes,
    )
    return None if found is None else Mapped(found.result["gaps"], found.warnings)
