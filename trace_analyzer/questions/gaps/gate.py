"""``--fail-on`` for ``traceana gaps``: the metrics a run's summary gives, and the conditions
that hold on them (docs/gaps.md, "--fail-on"); and ``--next``, the run's next fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trace_analyzer.analyses.results import replaced
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.units import Condition, judge

if TYPE_CHECKING:
    from trace_analyzer.loading.profile import Profile
    from trace_analyzer.questions.gaps.analysis import GapsResult

# --fail-on metrics, read from a run's summary (µs for people, like the reports).
METRICS = {
    "idle_pct": "idle % of the window: nothing ran (leading and trailing idle apart)",
    "exposed_communication_pct": "% of the window a collective ran and no compute",
    "memory_pct": "% of the window copies or sets ran alone",
    "active_idle_pct": "idle % of the devices' own active spans (first to last execution)",
    "busy_us": "busy time",
    "idle_us": "idle time: nothing ran, between the devices' first and last work",
    "exposed_communication_us": "time a collective ran and no compute",
    "memory_us": "time copies or sets ran alone",
    "leading_us": "leading idle",
    "trailing_us": "trailing idle",
    "active_us": "the devices' active spans, added up",
    "gap_count": "number of gaps",
    "executions": "executions",
    "gap_p50_us": "median gap",
    "gap_p90_us": "90th percentile gap",
    "gap_p99_us": "99th percentile gap",
    "gap_max_us": "longest gap",
    **{f"idle_{c}_us": f"idle time in gaps caused by {c}" for c in CAUSES},
}


def metrics(summary: dict[str, Any]) -> dict[str, float | None]:
    """Return the --fail-on metrics of a summary (None where there is nothing to measure)."""

    def us(ns: int | None) -> float | None:
        return None if ns is None else ns / 1000

    out: dict[str, float | None] = {
        "idle_pct": summary["idle_pct"],
        "active_idle_pct": summary["active_idle_pct"],
        "exposed_communication_pct": summary["exposed_communication_pct"],
        "memory_pct": summary["memory_pct"],
        "gap_count": summary["gap_count"],
        "executions": summary["executions"],
    }
    for name in (
        "busy", "idle", "leading", "trailing", "active", "gap_p50", "gap_p90", "gap_p99", "gap_max",
        "exposed_communication", "memory",
    ):  # fmt: skip
        out[f"{name}_us"] = us(summary[f"{name}_ns"])
    for c, ns in summary["idle_by_cause_ns"].items():
        out[f"idle_{c}_us"] = us(ns)
    return out


GAP_STATS = ("gap_p50_us", "gap_p90_us", "gap_p99_us", "gap_max_us")


def gate(
    result: GapsResult, conditions: list[Condition], *, allow_empty: bool = False
) -> GapsResult:
    """Return ``result`` with ``failed``: the conditions (``units.parse_condition``) that
    hold, and those on a metric that is undefined, which fail too: with no hardware
    executions every metric but ``executions`` is. A run with executions and no gaps has
    gap statistics of 0 here (no gap is longer). A gate none of whose conditions has a value
    compared nothing: ``gates.EmptyGate``, or with ``allow_empty`` a pass saying so in
    ``gate_notes`` (``gates.judge``)."""
    measured = metrics(result.summary)
    why: dict[str, str] = {}
    if not result.summary["executions"]:
        measured = {k: (v if k == "executions" else None) for k, v in measured.items()}
        why = dict.fromkeys(METRICS, "no hardware executions")
    elif not result.summary["gap_count"]:
        measured.update(dict.fromkeys(GAP_STATS, 0.0))
    where = result.root or "the run"
    judged = judge(conditions, measured, why, where=where, allow_empty=allow_empty)
    return _replace(result, failed=judged.failed, gate_notes=judged.notes)


def _replace(result: GapsResult, **changes: Any) -> GapsResult:
    """``dataclasses.replace`` of ``result``, its tables not made yet passed on (``replaced``)."""
    return replaced(result, **changes)


def with_next_fix(result: GapsResult, profile: Profile, *, step: int | None = None) -> GapsResult:
    """Return ``result`` with ``next_fix``: the critical-path verdict of its run (of ``step``
    where one is asked for; ``gaps --next``), also where no fix replayed there saves time."""
    from trace_analyzer.questions.critical.analysis import critical

    return with_verdict(result, critical(profile, step=step).verdict)


def with_verdict(result: GapsResult, verdict: str) -> GapsResult:
    """Return ``result`` with ``next_fix``: the critical path's ``verdict`` (made elsewhere:
    a multi-rank run a file at a time, batch/gaps.py)."""
    return _replace(result, next_fix=verdict)
