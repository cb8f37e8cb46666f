"""Compare two profiles: device busy and idle, gaps, per-op device time and idle, by cause.

Changes are head − base: an absolute delta (pp for percentages) and a relative change in %.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from trace_analyzer.analyses.gaps import CAUSES, GapsResult, gaps
from trace_analyzer.analyses.ops import ops
from trace_analyzer.analyses.results import RunResult, RunResults, frame_repr
from trace_analyzer.core.profile import Profile
from trace_analyzer.units import Condition, failed

SCHEMA_VERSION = 1
# A change smaller than these is "no change" in the verdict.
IDLE_PP, DEVICE_PCT = 1.0, 1.0

# Summary metrics compared (name -> (what, unit)); device_time is the devices' busy time.
COMPARED = {
    "device_time": "device time (busy, µs)",
    "idle_pct": "idle % of the window",
    "idle_us": "idle in gaps (µs)",
    "window_us": "window (µs)",
    "executions": "hardware executions",
    "gap_count": "gaps",
    "gap_p50_us": "median gap (µs)",
    "gap_p90_us": "p90 gap (µs)",
    "gap_p99_us": "p99 gap (µs)",
    "gap_max_us": "longest gap (µs)",
    **{f"idle_{c}_us": f"idle from {c} (µs)" for c in CAUSES},
}


def summary_metrics(g: GapsResult) -> dict[str, Any]:
    """Return the compared metrics (``COMPARED``) of one profile's gaps result ``g``, from
    its summary (times in µs, for people; None where the summary has none)."""
    s = g.summary

    def us(ns: float | None) -> float | None:
        return None if ns is None else round(ns / 1000, 3)

    out = {
        "device_time": us(s["busy_ns"]),
        "idle_pct": s["idle_pct"],
        "idle_us": us(s["idle_ns"]),
        "window_us": us(s["window_ns"]),
        "executions": s["executions"],
        "gap_count": s["gap_count"],
        "gap_p50_us": us(s["gap_p50_ns"]),
        "gap_p90_us": us(s["gap_p90_ns"]),
        "gap_p99_us": us(s["gap_p99_ns"]),
        "gap_max_us": us(s["gap_max_ns"]),
    }
    out.update({f"idle_{c}_us": us(ns) for c, ns in s["idle_by_cause_ns"].items()})
    return out


def change(base: float | None, head: float | None) -> tuple[float | None, float | None]:
    """Return (head − base, relative change in %); None where it cannot be computed."""
    if base is None or head is None:
        return None, None
    delta = round(head - base, 3)
    return delta, (round(100 * delta / base, 2) if base else None)


def metric_rows(base: dict[str, Any], head: dict[str, Any]) -> list[dict[str, Any]]:
    """Return one row per compared metric: its name, what it is, its value in ``base`` and
    in ``head`` (``summary_metrics`` of each), and the change (``change``)."""
    rows = []
    for name, what in COMPARED.items():
        delta, pct = change(base.get(name), head.get(name))
        rows.append(
            {
                "metric": name,
                "what": what,
                "base": base.get(name),
                "head": head.get(name),
                "delta": delta,
                "pct_delta": pct,
            }
        )
    return rows


OP_SCHEMA = {"name": pl.String, "calls": pl.Int64, "device_us": pl.Float64}


def op_rows(
    base_ops: pl.DataFrame, head_ops: pl.DataFrame, base_idle: pl.DataFrame, head_idle: pl.DataFrame
) -> pl.DataFrame:
    """Return per op: calls, device µs and idle before it, in base and head, with changes.

    ``base_ops``, ``head_ops``: the ops tables (``OpsResult.table``); ``base_idle``,
    ``head_idle``: the idle before each op (``GapsResult.ops``). A ``status`` column says
    whether the op is in both, added (head only) or removed (base only).
    """

    def table(ops: pl.DataFrame, idle: pl.DataFrame, side: str) -> pl.DataFrame:
        df = ops.select(pl.col(c).cast(t) for c, t in OP_SCHEMA.items())
        if idle.height:
            df = df.join(
                idle.select(name="op", idle_before_us=pl.col("idle_before_ns") / 1000),
                on="name",
                how="full",
                coalesce=True,
            )
        else:
            df = df.with_columns(idle_before_us=pl.lit(None, pl.Float64))
        return df.rename({c: f"{c}_{side}" for c in ("calls", "device_us", "idle_before_us")})

    both = table(base_ops, base_idle, "base").join(
        table(head_ops, head_idle, "head"), on="name", how="full", coalesce=True
    )
    return both.with_columns(
        status=pl.when(pl.col("calls_base").is_null() & pl.col("device_us_base").is_null())
        .then(pl.lit("added"))
        .when(pl.col("calls_head").is_null() & pl.col("device_us_head").is_null())
        .then(pl.lit("removed"))
        .otherwise(pl.lit("both")),
        device_us_delta=(
            pl.col("device_us_head").fill_null(0) - pl.col("device_us_base").fill_null(0)
        ).round(3),
        idle_before_us_delta=(
            pl.col("idle_before_us_head").fill_null(0) - pl.col("idle_before_us_base").fill_null(0)
        ).round(3),
        calls_delta=pl.col("calls_head").fill_null(0) - pl.col("calls_base").fill_null(0),
    ).sort(pl.col("device_us_delta").abs(), "name", descending=[True, False])


def verdict(m: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """Return (better|worse|mixed|unchanged, the one-line verdict text) from ``m``, the
    metric rows (``metric_rows``) by name: idle % and device time decide."""
    idle, dev = m["idle_pct"], m["device_time"]
    d_idle, d_dev = idle["delta"], dev["pct_delta"]
    parts = []
    if d_idle is not None:
        parts.append(f"idle {d_idle:+.1f} pp ({idle['base']} % → {idle['head']} %)")
    if d_dev is not None:
        parts.append(f"device time {d_dev:+.0f} % ({dev['base']} → {dev['head']} µs)")
    up = (d_idle or 0) > IDLE_PP or (d_dev or 0) > DEVICE_PCT
    down = (d_idle or 0) < -IDLE_PP or (d_dev or 0) < -DEVICE_PCT
    word = "mixed" if up and down else "worse" if up else "better" if down else "unchanged"
    return word, ", ".join(parts or ["nothing ran on hardware in either profile"]) + f": {word}"


def fail_metrics(m: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Return the --fail-on metrics of ``m``, the metric rows by name: <m>_base, <m>_head,
    <m>_delta, <m>_pct_delta, and plain <m> for head's value."""
    out = {}
    for name, row in m.items():
        out.update(
            {
                name: row["head"],
                f"{name}_base": row["base"],
                f"{name}_head": row["head"],
                f"{name}_delta": row["delta"],
                f"{name}_pct_delta": row["pct_delta"],
            }
        )
    return out


SUFFIXES = ("", "_base", "_head", "_delta", "_pct_delta")
DIFF_METRICS = {f"{name}{suffix}": what for name, what in COMPARED.items() for suffix in SUFFIXES}
DIFF_METRICS_HINT = (
    ", ".join(COMPARED) + "; each alone (head's value) or with _delta, _pct_delta, _base or _head"
)


@dataclass(frozen=True, repr=False)
class DiffResult(RunResult):
    """Two runs compared, base then head.

    ``metrics``: one row per compared metric (base, head, delta, relative delta in %).
    ``ops``: the ops in both, with calls, device µs and idle before each, and the changes;
    ``added`` and ``removed``: the ops only in head, only in base. ``verdict``: better,
    worse, mixed or unchanged; ``verdict_text`` says why. ``failed``: the ``--fail-on``
    conditions that held (``gate``).
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
            "metrics": [dict(m) for m in self.metrics],
            "ops": self.ops.to_dicts(),
            "added": self.added.to_dicts(),
            "removed": self.removed.to_dicts(),
            "failed": list(self.failed),
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
    """Return the comparison of two loaded runs, base then head.

    ``base_label``, ``head_label``: how to name them (default: their roots). ``step`` and
    ``min_gap_ns``: as for ``gaps``. ``base_gaps``, ``head_gaps``: their gaps when already
    computed with the same options (the CLI's cached ones); computed here otherwise.
    """
    options: dict[str, Any] = {"step": step, "min_gap_ns": min_gap_ns}
    g_base = base_gaps if base_gaps is not None else gaps(base, **options)
    g_head = head_gaps if head_gaps is not None else gaps(head, **options)
    rows = metric_rows(summary_metrics(g_base), summary_metrics(g_head))
    word, text = verdict({r["metric"]: r for r in rows})
    table = op_rows(ops(base).table, ops(head).table, g_base.ops, g_head.ops)
    status = pl.col("status")
    return DiffResult(
        base=str(base.root) if base_label is None else base_label,
        head=str(head.root) if head_label is None else head_label,
        verdict=word,
        verdict_text=text,
        metrics=tuple(rows),
        ops=table.filter(status == "both"),
        added=table.filter(status == "added"),
        removed=table.filter(status == "removed"),
    )


METRIC_SCHEMA = {
    "metric": pl.String,
    "what": pl.String,
    "base": pl.Float64,
    "head": pl.Float64,
    "delta": pl.Float64,
    "pct_delta": pl.Float64,
}


def gate(result: DiffResult, conditions: list[Condition]) -> DiffResult:
    """Return ``result`` with ``failed``: the conditions that hold (``DIFF_METRICS``)."""
    return replace(result, failed=tuple(failed(conditions, fail_metrics(result.by_metric()))))


def diff_runs(result: DiffResult) -> RunResults[DiffResult]:
    """Return what ``traceana diff`` prints: the one comparison ``result``, under base and
    head."""
    return RunResults(
        result.root, (result,), header={"base": result.base, "head": result.head}, labels=()
    )
