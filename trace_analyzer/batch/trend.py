"""``traceana trend``: idle % and device time over capture time, per group, from a batch table.

Per run, the devices' rows are added up (busy, idle and window summed; idle % = idle /
window, as ``gaps`` does). A run's time is its capture time (capture.json), else the
modification time of its files. Failed runs are left out and counted.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import polars as pl

from trace_analyzer.batch import read_table
from trace_analyzer.errors import InputError, UsageError


def trend_table(df: pl.DataFrame, by: str = "variant", globs: tuple[str, ...] = ()) -> pl.DataFrame:
    """Return one row per run: group, time, run_id, idle %, device time, executions."""
    if by == "path-glob" and not globs:
        raise UsageError("--by path-glob needs at least one --glob PATTERN")
    ok = df.filter(pl.col("error").is_null())
    runs = ok.group_by("run_id").agg(
        time=pl.coalesce(pl.col("capture_time").first(), pl.col("modified_time").first()),
        variant=pl.col("variant").first(),
        backend=pl.col("backend").first(),
        devices=pl.col("device").drop_nulls().len(),
        busy_ns=pl.col("busy_ns").sum(),
        idle_ns=pl.col("idle_ns").sum(),
        window_ns=pl.col("window_ns").sum(),
        executions=pl.col("executions").sum(),
    )
    if by == "path-glob":

        def group_of(run_id: str) -> str:
            return next((g for g in globs if fnmatch.fnmatchcase(run_id, g)), "(other)")

        group = pl.col("run_id").map_elements(group_of, return_dtype=pl.String)
    else:
        group = pl.col(by).fill_null("(none)")
    return (
        runs.with_columns(group=group)
        .with_columns(
            idle_pct=pl.when(pl.col("window_ns") > 0).then(
                (100 * pl.col("idle_ns") / pl.col("window_ns")).round(2)
            ),
            device_time_ms=(pl.col("busy_ns") / 1e6).round(3),
        )
        .select("group", "time", "run_id", "idle_pct", "device_time_ms", "executions", "devices")
        .sort("group", "time", "run_id", nulls_last=True)
    )


def trend_result(path: Path, by: str = "variant", globs: tuple[str, ...] = ()) -> dict:
    """Return the ``trend`` result: plain data, one entry (the table) in ``runs``."""
    df = read_table(path)
    if df is None:
        raise InputError(path, "no such file")
    table = trend_table(df, by, globs)
    failed = df.filter(pl.col("error").is_not_null())["run_id"].n_unique()
    rows = [{**r, "time": r["time"].isoformat() if r["time"] else None} for r in table.to_dicts()]
    groups = (
        table.group_by("group", maintain_order=True)
        .agg(
            runs=pl.len(),
            idle_pct_first=pl.col("idle_pct").first(),
            idle_pct_last=pl.col("idle_pct").last(),
            device_time_ms_first=pl.col("device_time_ms").first(),
            device_time_ms_last=pl.col("device_time_ms").last(),
        )
        .to_dicts()
    )
    return {
        "schema_version": 1,
        "path": str(path),
        "by": by,
        "globs": list(globs),
        "runs": [{"root": str(path), "rows": rows, "groups": groups, "failed_runs": failed}],
    }


def plot(result: dict) -> bytes:
    """Return a PNG: idle % (top) and device time (bottom) over time, one line per group."""
    from datetime import datetime

    from trace_analyzer.render.plots import _figure, _save

    fig = _figure(6.0)
    top, bottom = fig.subplots(2, 1, sharex=True)
    rows = [r for r in result["runs"][0]["rows"] if r["time"]]
    for name in sorted({r["group"] for r in rows}):
        pts = [r for r in rows if r["group"] == name]
        x = [datetime.fromisoformat(r["time"]) for r in pts]
        top.plot(x, [r["idle_pct"] for r in pts], marker="o", label=name)
        bottom.plot(x, [r["device_time_ms"] for r in pts], marker="o", label=name)
    top.set_ylabel("idle %")
    bottom.set_ylabel("device time (ms)")
    bottom.set_xlabel("capture time")
    top.set_title(f"trend by {result['by']}")
    if rows:
        top.legend(loc="best", fontsize="small")
    return _save(fig, "png")
