"""Compare two profiles: device busy and idle, gaps, per-op device time and idle, by cause.

Changes are head − base: an absolute delta (pp for percentages) and a relative change in %.
"""

from __future__ import annotations

import polars as pl

from trace_analyzer.analyses.gaps import CAUSES, GapsResult, gaps
from trace_analyzer.analyses.ops import ops_result
from trace_analyzer.units import failed

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


def summary_metrics(g: GapsResult) -> dict:
    """Return the compared metrics of one profile's gaps summary (µs for people)."""
    s = g.summary

    def us(ns):
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


def metric_rows(base: dict, head: dict) -> list[dict]:
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


def op_rows(
    base_ops: list[dict], head_ops: list[dict], base_idle: pl.DataFrame, head_idle: pl.DataFrame
) -> pl.DataFrame:
    """Return per op: calls, device µs and idle before it, in base and head, with changes."""

    def table(rows: list[dict], idle: pl.DataFrame, side: str) -> pl.DataFrame:
        df = (
            pl.DataFrame(
                rows,
                schema={"name": pl.String, "calls": pl.Int64, "device_us": pl.Float64},
                strict=False,
            )
            if rows
            else pl.DataFrame(
                schema={"name": pl.String, "calls": pl.Int64, "device_us": pl.Float64}
            )
        )
        df = df.select("name", "calls", "device_us")
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


def verdict(m: dict) -> tuple[str, str]:
    """Return (better|worse|mixed|unchanged, the one-line verdict text)."""
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


def fail_metrics(m: dict) -> dict:
    """Return the --fail-on metrics: <m>_base, <m>_head, <m>_delta, <m>_pct_delta, and plain
    <m> for head's value."""
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


def diff(base, head, base_label: str, head_label: str, *, conditions=(), **options) -> dict:
    """Return the comparison of two loaded profiles as plain data (the JSON output's shape)."""
    g_base, g_head = gaps(base, **options), gaps(head, **options)
    rows = metric_rows(summary_metrics(g_base), summary_metrics(g_head))
    by_name = {r["metric"]: r for r in rows}
    word, text = verdict(by_name)
    base_ops = ops_result([base], base_label)["runs"][0]["rows"]
    head_ops = ops_result([head], head_label)["runs"][0]["rows"]
    ops = op_rows(base_ops, head_ops, g_base.ops, g_head.ops)
    run = {
        "root": f"{base_label} → {head_label}",
        "base": base_label,
        "head": head_label,
        "verdict": word,
        "verdict_text": text,
        "metrics": rows,
        "ops": ops.filter(pl.col("status") == "both").to_dicts(),
        "added": ops.filter(pl.col("status") == "added").to_dicts(),
        "removed": ops.filter(pl.col("status") == "removed").to_dicts(),
        "failed": failed(list(conditions), fail_metrics(by_name)),
    }
    return {"schema_version": SCHEMA_VERSION, "base": base_label, "head": head_label, "runs": [run]}
