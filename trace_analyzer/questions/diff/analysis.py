"""Compare two sides, base then head: device busy and idle, the window, gaps, ops, by cause.

A side is one run or several (``baseline.Side``: runs as samples). Changes are of the means,
head − base: an absolute delta (pp for percentages) and a relative change in %. With two
runs or more on both sides a change counts only when Welch's t-test finds it significant
(``diff_stats``); with one run on either side the thresholds alone decide (docs/diff.md).
Two sides that record host activity only are compared on the host: step time and self CPU
time, per run and per op (``host_gates`` refuses a gate on what they do not measure).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from trace_analyzer.analyses.results import RunResult, RunResults, frame_repr
from trace_analyzer.errors import UsageError
from trace_analyzer.loading.profile import Profile
from trace_analyzer.questions.diff.shape import mismatch
from trace_analyzer.questions.diff.sides import COMPARED, GAPS_JSON, HOST_METRICS, Side, side_of
from trace_analyzer.questions.diff.stats import (
    decide,
    metric_rows,
    noise_text,
    signals,
    verdict_text,
)
from trace_analyzer.questions.gaps.analysis import GapsResult, gaps
from trace_analyzer.units import Condition, failed, judge

SCHEMA_VERSION = 2


def op_rows(base: Side, head: Side) -> pl.DataFrame:
    """Return per op: calls, device µs and idle before it, the mean over each side's runs,
    with the changes. ``status``: in both, added (head only) or removed (base only); every
    op is ``both`` and calls and device time have no change when a side is a gaps JSON,
    which lists only the ops with idle before them (``Side.op_inventory``)."""
    inventory = base.op_inventory and head.op_inventory
    both = _side_ops(base, "base").join(
        _side_ops(head, "head"), on="name", how="full", coalesce=True
    )
    in_b, in_h = pl.col("in_base").fill_null(False), pl.col("in_head").fill_null(False)

    def delta(c: str, known: bool = True) -> pl.Expr:
        d = (pl.col(f"{c}_head").fill_null(0) - pl.col(f"{c}_base").fill_null(0)).round(3)
        return d if known else pl.lit(None, pl.Float64)

    status: pl.Expr = pl.lit("both")
    if inventory:
        status = (
            pl.when(~in_b)
            .then(pl.lit("added"))
            .when(~in_h)
            .then(pl.lit("removed"))
            .otherwise(pl.lit("both"))
        )
    return (
        both.with_columns(
            status=status,
            device_us_delta=delta("device_us", inventory),
            idle_before_us_delta=delta("idle_before_us"),
            calls_delta=delta("calls", inventory),
            self_cpu_us_delta=delta("self_cpu_us", inventory),
        )
        .drop("in_base", "in_head")
        .sort(
            pl.col("device_us_delta").abs(),
            pl.col("idle_before_us_delta").abs(),
            pl.col("self_cpu_us_delta").abs(),
            "name",
            descending=[True, True, True, False],
            nulls_last=True,
        )
    )


def _side_ops(side: Side, suffix: str) -> pl.DataFrame:
    """The mean per op over the runs of ``side`` (an op missing from a run counts 0 there;
    null when no run has a value), columns suffixed with ``suffix``."""
    n = len(side.samples)
    per_op = pl.concat([s.ops for s in side.samples], how="vertical_relaxed")

    def mean(c: str) -> pl.Expr:
        total = pl.col(c).sum() if n == 1 else (pl.col(c).sum() / n).round(3)
        return pl.when(pl.col(c).is_null().all()).then(None).otherwise(total).alias(f"{c}_{suffix}")

    return per_op.group_by("name").agg(
        mean("calls"),
        mean("device_us"),
        mean("idle_before_us"),
        mean("self_cpu_us"),
        pl.lit(True).alias(f"in_{suffix}"),
    )


@dataclass(frozen=True, repr=False)
class DiffResult(RunResult):
    """Two sides compared, base then head (docs/diff.md).

    ``metrics``: one row per compared metric (the mean of each side, the change, each side's
    runs and sd, Welch's test). ``ops``: the ops in both, with calls, device µs and idle
    before each, and the changes; ``added`` and ``removed``: the ops only in head, only in
    base. ``verdict``: better, worse, mixed, unchanged or inconclusive; ``verdict_text``
    says why, from ``signals`` (the time, device time, idle); ``time_metric``: the time
    weighed (window_us or step_time_us); ``noise``: how changes were judged.
    ``not_compared``: what a side's source lacks; ``not_comparable``: why the sides could
    not be compared (a side without hardware executions, or with too few). ``failed``: the
    ``--fail-on`` conditions that held or could not be measured (``gate``); ``gate_notes``:
    those that held but were not significant, or a gate that compared nothing, allowed.
    ``next_fix``: the head's (its first run's)
    ``traceana critical`` verdict, the fix that saves the most there; None where head is a
    saved summary. ``mismatch``: how the two sides are not the same kind of run (platform,
    ranks, devices, steps: ``shape.mismatch``), None when they are or cannot be told.
    ``host_only``: both sides record host activity only, compared on the host (step time,
    self CPU time).
    """

    base: str
    head: str
    verdict: str
    verdict_text: str
    metrics: tuple[dict[str, Any], ...]
    ops: pl.DataFrame
    added: pl.DataFrame
    removed: pl.DataFrame
    failed: tuple[str, ...] = ()
    signals: tuple[dict[str, Any], ...] = ()
    time_metric: str = "window_us"
    noise: str = ""
    sources: tuple[str, str] = ("trace", "trace")
    samples: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    not_compared: tuple[str, ...] = ()
    not_comparable: str | None = None
    gate_notes: tuple[str, ...] = ()
    next_fix: str | None = None
    mismatch: str | None = None
    host_only: bool = False

    csv_table = "metrics"

    @property
    def root(self) -> str:
        """What is compared: ``<base> → <head>``."""
        return f"{self.base} → {self.head}"

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "base": self.base,
            "head": self.head,
            "verdict": self.verdict,
            "verdict_text": self.verdict_text,
            "signals": [dict(s) for s in self.signals],
            "time_metric": self.time_metric,
            "noise": self.noise,
            "base_source": self.sources[0],
            "head_source": self.sources[1],
            "base_samples": list(self.samples[0]),
            "head_samples": list(self.samples[1]),
            "not_compared": list(self.not_compared),
            "not_comparable": self.not_comparable,
            "mismatch": self.mismatch,
            "metrics": [dict(m) for m in self.metrics],
            "ops": self.ops.to_dicts(),
            "added": self.added.to_dicts(),
            "removed": self.removed.to_dicts(),
            "failed": list(self.failed),
            "gate_notes": list(self.gate_notes),
            "next_fix": self.next_fix,
            "host_only": self.host_only,
        }

    def main_frame(self) -> pl.DataFrame:
        return pl.DataFrame(list(self.metrics), schema=METRIC_SCHEMA, strict=False)

    def summary_rows(self) -> list[tuple[str, object]]:
        return [("base", self.base), ("head", self.head), ("verdict", self.verdict_text)]

    def __repr__(self) -> str:
        return frame_repr("DiffResult", base=self.base, head=self.head, verdict=self.verdict)

    def by_metric(self) -> dict[str, dict[str, Any]]:
        """Return the metric rows by name."""
        return {r["metric"]: r for r in self.metrics}


def diff(
    base: Profile,
    head: Profile,
    *,
    base_label: str | None = None,
    head_label: str | None = None,
    step: int | None = None,
    min_gap_ns: int = 0,
    base_gaps: GapsResult | None = None,
    head_gaps: GapsResult | None = None,
) -> DiffResult:
    """Return the comparison of two loaded runs, base then head (one run per side).

    ``base_label``, ``head_label``: how to name them (default: their roots). ``step`` and
    ``min_gap_ns``: as for ``gaps``. ``base_gaps``, ``head_gaps``: their gaps when already
    computed with the same options (the CLI's cached ones); computed here otherwise.
    """
    options: dict[str, Any] = {"step": step, "min_gap_ns": min_gap_ns}
    g_base = base_gaps if base_gaps is not None else gaps(base, **options)
    g_head = head_gaps if head_gaps is not None else gaps(head, **options)
    return diff_sides(
        side_of(str(base.root) if base_label is None else base_label, [(base, g_base)]),
        side_of(str(head.root) if head_label is None else head_label, [(head, g_head)], head=True),
        step=step,
    )


def diff_sides(
    base: Side, head: Side, *, step: int | None = None, min_executions_share: float = 0.0
) -> DiffResult:
    """Return the comparison of two sides of one run or more each (``baseline.Side``,
    measured with the same ``step``). ``min_executions_share``: a side with fewer hardware
    executions than this % of the other's makes the verdict inconclusive (not the same
    work), as does a side with none."""
    rows = metric_rows(base, head)
    m = {r["metric"]: r for r in rows}
    has_steps = m["step_time_us"]["base"] is not None and m["step_time_us"]["head"] is not None
    time_metric = "step_time_us" if step is None and has_steps else "window_us"
    label = f"ProfilerStep#{step}" if step is not None else "step time" if has_steps else "window"
    tested = len(base.samples) >= 2 and len(head.samples) >= 2
    host = base.host_only and head.host_only  # compared on the host: no device signal
    sig = signals(m, time_metric, label, tested, host=host)
    word = decide([s["state"] for s in sig])
    text = verdict_text(sig, word)
    refusal = None if host else _not_comparable(m["executions"], min_executions_share)
    if refusal:
        word, text = "inconclusive", f"{refusal}: inconclusive"
    table = op_rows(base, head)
    status = pl.col("status")
    return DiffResult(
        base=base.label,
        head=head.label,
        verdict=word,
        verdict_text=text,
        metrics=tuple(rows),
        ops=table.filter(status == "both"),
        added=table.filter(status == "added"),
        removed=table.filter(status == "removed"),
        signals=tuple(sig),
        time_metric=time_metric,
        noise=noise_text(len(base.samples), len(head.samples)),
        sources=(base.sources, head.sources),
        samples=(tuple(s.root for s in base.samples), tuple(s.root for s in head.samples)),
        not_compared=_not_compared(base, head, m, step),
        not_comparable=refusal,
        next_fix=next((s.next_fix for s in head.samples if s.next_fix), None),
        mismatch=mismatch(
            [s.shape for s in base.samples], [s.shape for s in head.samples], step=step
        ),
        host_only=host,
    )


def _not_comparable(executions: dict[str, Any], min_share: float) -> str | None:
    """Why the sides cannot be compared (no executions on one, or too few), or None."""
    b, h = executions["base"] or 0, executions["head"] or 0
    if not (b or h):
        return "neither side has hardware executions"
    if not (b and h):
        return f"{'head' if b else 'base'} has no hardware executions"
    low, role, other, high = (h, "head", "base", b) if h < b else (b, "base", "head", h)
    if 100 * low < min_share * high:
        return (
            f"{role} has {low:g} hardware executions, {100 * low / high:.0f} % of {other}'s "
            f"{high:g} (under {min_share:g} %): not the same work"
        )
    return None


def _not_compared(base: Side, head: Side, m: dict[str, Any], step: int | None) -> tuple[str, ...]:
    """What the sources of the sides do not carry, in words."""
    out = []
    if base.host_only and head.host_only:
        out.append(
            "the device: both sides record host activity only (no hardware executions), "
            "compared on step time and self CPU time"
        )
    for role, side in (("base", base), ("head", head)):
        if not side.op_inventory:
            out.append(
                f"{role} is a gaps JSON: it lists the idle before each op, not their calls, "
                "device time or self CPU time, so ops added and removed are not known"
            )
    st = m["step_time_us"]
    if step is None and (st["base"] is None) != (st["head"] is None):
        missing, side = ("base", base) if st["base"] is None else ("head", head)
        why = "a gaps JSON carries no step time" if GAPS_JSON in side.sources else "no ProfilerStep"
        out.append(f"step time: {missing} has none ({why}); the verdict weighs the window")
    return tuple(out)


METRIC_SCHEMA = {
    "metric": pl.String,
    "what": pl.String,
    "base": pl.Float64,
    "head": pl.Float64,
    "delta": pl.Float64,
    "pct_delta": pl.Float64,
    "base_runs": pl.Int64,
    "head_runs": pl.Int64,
    "base_sd": pl.Float64,
    "head_sd": pl.Float64,
    "t": pl.Float64,
    "df": pl.Float64,
    "t_critical": pl.Float64,
    "significant": pl.Boolean,
}
SUFFIXES = ("", "_base", "_head", "_delta", "_pct_delta")
DIFF_METRICS = {f"{name}{suffix}": what for name, what in COMPARED.items() for suffix in SUFFIXES}
DIFF_METRICS_HINT = (
    ", ".join(COMPARED) + "; each alone (head's value) or with _delta, _pct_delta, _base or _head"
)


def split_metric(name: str) -> tuple[str, str]:
    """Return (compared metric, suffix) of a --fail-on metric name (``DIFF_METRICS``)."""
    for suffix in ("_pct_delta", "_delta", "_base", "_head"):
        if name.endswith(suffix) and name.removesuffix(suffix) in COMPARED:
            return name.removesuffix(suffix), suffix
    return name, ""


def fail_metrics(result: DiffResult) -> tuple[dict[str, Any], dict[str, str]]:
    """Return the --fail-on metrics of ``result`` (<m>_base, <m>_head, <m>_delta,
    <m>_pct_delta, and plain <m> for head's value) and, for those undefined, why."""
    m = result.by_metric()
    values: dict[str, Any] = {}
    why: dict[str, str] = {}
    for name, row in m.items():
        for suffix, key in zip(
            SUFFIXES, ("head", "base", "head", "delta", "pct_delta"), strict=True
        ):
            values[name + suffix] = row[key]
            if row[key] is None:
                why[name + suffix] = _undefined(result, m, name, suffix)
    return values, why


def _undefined(result: DiffResult, m: dict[str, Any], name: str, suffix: str) -> str:
    """Why the --fail-on metric ``name`` + ``suffix`` has no value."""
    roles = {"_base": ("base",), "": ("head",), "_head": ("head",)}.get(suffix, ("base", "head"))
    for role in roles:
        if not m["executions"][role] and (name not in HOST_METRICS or not result.host_only):
            return f"{role} has no hardware executions"
        if m[name][role] is None:
            source = result.sources[0 if role == "base" else 1]
            if name == "step_time_us":
                lacks = (
                    "a gaps JSON carries no step time" if GAPS_JSON in source else "no ProfilerStep"
                )
                return f"{role} has no step time ({lacks})"
            if name == "window_us" and result.host_only:
                return f"{role} records no hardware: its window is a step's (--step N)"
            return f"undefined on {role}"
    return "base is 0: no relative change"


def host_gates(base: Side, head: Side, conditions: list[Condition]) -> None:
    """Refuse (UsageError) a ``--fail-on`` condition on a metric measured on hardware when
    both sides record host activity only: it would compare nothing (``HOST_METRICS`` are
    what they have)."""
    if not (base.host_only and head.host_only):
        return
    for c in conditions:
        name, _ = split_metric(c.metric)
        if name not in HOST_METRICS:
            raise UsageError(
                f"--fail-on '{c.text}': {name} is measured on hardware and both sides record "
                f"host activity only (no hardware executions): it would compare nothing; "
                f"their metrics are {', '.join(HOST_METRICS[:2])} and, with --step, window_us "
                "(--allow-empty-gate to let a gate that compares nothing pass)"
            )


def gate(
    result: DiffResult,
    conditions: list[Condition],
    *,
    significant: bool = False,
    allow_empty: bool = False,
) -> DiffResult:
    """Return ``result`` with ``failed``: the conditions that hold (``DIFF_METRICS``) or
    whose metric is undefined. ``significant`` (``--min-runs``): a ``_delta`` or
    ``_pct_delta`` condition holds only when the change is significant too; one that holds
    without being significant passes, with a line in ``gate_notes``. A gate none of whose
    metrics has a value compared nothing: ``gates.EmptyGate``, or with ``allow_empty`` a
    pass that says so in ``gate_notes`` (``gates.judge``)."""
    values, why = fail_metrics(result)
    judged = judge(conditions, values, why, where=result.root, allow_empty=allow_empty)
    if judged.notes:
        return replace(result, failed=(), gate_notes=judged.notes)
    rows = result.by_metric()
    lines, notes = [], []
    for c in conditions:
        line = failed([c], values, why)
        name, suffix = split_metric(c.metric)
        row = rows[name]
        if (
            line
            and significant
            and suffix in ("_delta", "_pct_delta")
            and values[c.metric] is not None
        ):
            if not row["significant"]:
                t = (
                    "no t"
                    if row["t"] is None
                    else f"|t| = {abs(row['t']):g} < {row['t_critical']:g}"
                )
                notes.append(f"--fail-on '{c.text}' held ({c.metric} = {values[c.metric]}) "
                             f"but the change is not significant ({t}): passed")  # fmt: skip
                continue
        lines += line
    return replace(result, failed=tuple(lines), gate_notes=tuple(notes))


def diff_runs(result: DiffResult) -> RunResults[DiffResult]:
    """Return what ``traceana diff`` prints: the one comparison ``result``, under base and
    head (the document's ``schema_version`` is the diff's own, ``SCHEMA_VERSION``)."""
    header = {"schema_version": SCHEMA_VERSION, "base": result.base, "head": result.head}
    return RunResults(result.root, (result,), header=header, labels=())
