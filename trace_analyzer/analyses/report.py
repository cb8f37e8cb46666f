"""``traceana report``: the results one page shows, for one run and an optional base.

A report is the ``gaps`` and ``ops`` results of the run (with the run's warnings, which the
report opens with), the framework ops its timeline draws (``timeline``), and with a base the
``diff`` (base → run) and the base's ``gaps`` (with its warnings) and ``timeline``. The
renderers (render/report.py, render/html.py) show nothing else (docs/report.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from trace_analyzer.analyses.diff import DiffResult, diff, diff_runs
from trace_analyzer.analyses.gaps import GapsResult, gaps, gaps_runs
from trace_analyzer.analyses.ops import OpsResult, ops
from trace_analyzer.analyses.results import RunResults
from trace_analyzer.analyses.timeline import TimelineResult, timeline
from trace_analyzer.core.profile import Profile


@dataclass(frozen=True, repr=False)
class ReportResult:
    """What one report shows; ``base`` and the base's parts are None without a base."""

    path: str
    base: str | None
    gaps: RunResults[GapsResult]
    ops: RunResults[OpsResult]
    timeline: RunResults[TimelineResult]
    diff: RunResults[DiffResult] | None = None
    base_gaps: RunResults[GapsResult] | None = None
    base_timeline: RunResults[TimelineResult] | None = None

    def __repr__(self) -> str:
        return f"ReportResult(path={self.path!r}, base={self.base!r})"


def report(
    head: Profile,
    base: Profile | None = None,
    *,
    path: str | None = None,
    base_path: str | None = None,
) -> ReportResult:
    """Return the report of one run, ``head``, compared with ``base`` when given.

    ``path``, ``base_path``: how the page names them (default: their roots).
    """
    label = str(head.root) if path is None else path
    g = gaps(head)
    parts = {
        "gaps": gaps_runs([g], label, warnings=[head.warnings]),
        "ops": RunResults(label, (ops(head),), warnings=[head.warnings]),
        "timeline": RunResults(label, (timeline(head),)),
    }
    if base is None:
        return ReportResult(label, None, **parts)  # type: ignore[arg-type]
    b_label = str(base.root) if base_path is None else base_path
    g_base = gaps(base)
    compared = diff(base, head, base_label=b_label, head_label=label, base_gaps=g_base, head_gaps=g)
    return ReportResult(
        label,
        b_label,
        diff=diff_runs(compared),
        base_gaps=gaps_runs([g_base], b_label, warnings=[base.warnings]),
        base_timeline=RunResults(b_label, (timeline(base),)),
        **parts,  # type: ignore[arg-type]
    )
