"""``traceana report --jobs N`` and ``--scheduler ADDRESS``: the report of a multi-rank run
mapped a file at a time, then reduced (docs/distributed.md, "report a rank at a time").

Every section's question gives its passes (analyses/passes.py): the gaps
(``gaps.per_rank.gaps_passes``), the ops, the timeline, the critical path and its what-ifs,
the ranks, the kernels and the busiest lanes' launches. ``batch/passes.py`` runs them in step
over the workers, one read of each file per round, and the report is made of their results
(``report.analysis.report_of``): the page of the run read whole, to the byte. A run that any
of them cannot measure a file at a time is read whole.
"""

from __future__ import annotations

from typing import Any

from trace_analyzer.analyses.passes import Passes
from trace_analyzer.batch.ranks import Mapped
from trace_analyzer.questions.critical.per_rank import critical_passes
from trace_analyzer.questions.gaps.per_rank import GapsOptions, gaps_passes
from trace_analyzer.questions.kernels.per_rank import kernels_passes
from trace_analyzer.questions.launches.per_rank import launches_passes
from trace_analyzer.questions.ops.per_rank import ops_passes
from trace_analyzer.questions.ranks.per_rank import ranks_passes
from trace_analyzer.questions.report.analysis import ReportResult, report_of
from trace_analyzer.questions.report.lanes import TOP_GAPS
from trace_analyzer.questions.report.timeline_parts import timeline_passes

# the questions' parts of the report (report.analysis.registered_parts) measured here
PARTS = ("critical", "ranks", "kernels", "launches")


def report_passes(root: str) -> dict[str, Passes[Any]]:
    """The passes of every section of the report of the run ``root``, by name. The gaps keep
    the rows the page lists; after their parts' round they tell the timeline, advanced after
    them in each round, what it needs to read its lanes where the files are (``board``)."""
    board: dict[str, Any] = {}
    return {
        "gaps": gaps_passes(GapsOptions(top=TOP_GAPS), root, board),
        "ops": ops_passes(root),
        "timeline": timeline_passes(root, board),
        "critical": critical_passes(root),
        "ranks": ranks_passes(root),
        "kernels": kernels_passes(root),
        "launches": launches_passes(root),
    }


def mapped_report(label: str, mapped: Mapped) -> ReportResult:
    """The report of a run mapped by ``report_passes``, named ``label``."""
    found = mapped.result
    parts = {name: found[name] for name in PARTS}
    return report_of(label, found["gaps"], found["ops"], found["timeline"], parts, mapped.warnings)
