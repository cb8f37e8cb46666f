"""Idle % and device time over capture time, per group, from a ``traceana batch`` table.

Per run (per run and rank, or run and device, grouped by ``rank`` or ``device``: the
device's key across runs, batch's ``device_key``), the devices' rows are added up (busy,
idle and window summed; idle % = idle / window, as ``gaps`` does). A run's time is its
capture time (capture.json), else the modification time of its files. Failed runs are
left out and counted (docs/batch.md).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from datetime import date
from typing import Any

import polars as pl

from trace_analyzer.analyses.results import RunResult, RunResults, frame_repr
from trace_analyzer.errors import InputError, UsageError

GROUPINGS = ("variant", "backend", "glob", "rank", "device")
# The words of GROUPINGS renamed (docs/output.md, "Conventions"): still taken, as the new one.
OLD_GROUPINGS = {"path-glob": "glob"}
# The groupings that split a run: one row per run and rank, or per run and device, and the
# batch column each reads (a table of an older traceana lacks them: rerun batch).
SPLITTING = {"rank": ("rank", "number"), "device": ("device_key", "text")}
# The columns of a batch table trend reads, and the kind of value each must hold.
COLUMNS = {
    "run_id": "text",
    "error": "text",
    "capture_time": "time",
    "modified_time": "time",
    "variant": "text",
    "backend": "text",
    "device": "text",
    "busy_ns": "number",
    "idle_ns": "number",
    "window_ns": "number",
    "executions": "number",
}


# Where a run's time comes from (``time_from``), first found first
TIME_FROM = (
    ("capture_time", "capture.json"),
    ("recorded_time", "trace"),
    ("modified_time", "file modified"),
)
SHOWN = 3  # runs named in a note, the rest counted


@dataclass(frozen=True, repr=False)
class TrendResult(RunResult):
    """``table``: one row per run (group, time, run_id, idle %, device time, executions,
    devices, where the time comes from); ``groups``: per group, its runs and first and last
    values; ``failed_runs``: the runs left out because their analysis failed; ``notes``: runs
    placed by file time, groups joining unlike runs."""

    root: str
    table: pl.DataFrame
    groups: pl.DataFrame
    failed_runs: int
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        rows = [{**r, "time": time_text(r["time"])} for r in self.table.to_dicts()]
        return {
            "root": self.root,
            "rows": rows,
            "groups": self.groups.to_dicts(),
            "failed_runs": self.failed_runs,
            "notes": list(self.notes),
        }

    def main_frame(self) -> pl.DataFrame:
        return self.table

    def summary_rows(self) -> list[tuple[str, object]]:
        return [("table", self.root), ("runs", self.table.height), ("failed", self.failed_runs)]

    def __repr__(self) -> str:
        return frame_repr("TrendResult", table=self.root, runs=self.table)


def time_text(time: date | None) -> str | None:
    """Return a run's time (the table's ``time``) as its JSON and text tables write it (ISO
    8601), None when it has none."""
    return time.isoformat() if time else None


def trend_table(df: pl.DataFrame, by: str = "variant", globs: tuple[str, ...] = ()) -> pl.DataFrame:
    """Return one row per run of the batch table ``df``: group, time, run_id, idle %, device
    time, executions; ``by``: what groups runs (``GROUPINGS``), ``globs``: the patterns of
    glob."""
    by = OLD_GROUPINGS.get(by, by)
    if by == "glob" and not globs:
        raise UsageError("grouping by glob needs at least one {param} PATTERN", param="globs")
    ok = with_times(df.filter(pl.col("error").is_null()))
    split = [SPLITTING[by][0]] if by in SPLITTING else []
    runs = ok.group_by("run_id", *split).agg(
        pl.col("time", "time_from", "variant", "backend", "kind").first(),
        devices=pl.col("device").drop_nulls().len(),
        busy_ns=pl.col("busy_ns").sum(),
        idle_ns=pl.col("idle_ns").sum(),
        window_ns=pl.col("window_ns").sum(),
        executions=pl.col("executions").sum(),
    )
    if by == "glob":

        def group_of(run_id: str) -> str:
            return next((g for g in globs if fnmatch.fnmatchcase(run_id, g)), "(other)")

        group = pl.col("run_id").map_elements(group_of, return_dtype=pl.String)
    elif split:
        group = pl.col(split[0]).cast(pl.String).fill_null("(none)")
    else:
        group = pl.col(by).fill_null("(none)")
    return (
        runs.with_columns(group=group)
        .with_columns(
            idle_pct=pl.when(pl.col("window_ns") > 0).then(
                (100 * pl.col("idle_ns").cast(pl.Float64) / pl.col("window_ns")).round(2)
            ),
            device_time_ms=(pl.col("busy_ns") / 1e6).round(3),
        )
        .select(
            "group",
            "time",
            "run_id",
            "idle_pct",
            "device_time_ms",
            "executions",
            "devices",
            "time_from",
            "kind",
        )
        .sort("group", "time", "run_id", nulls_last=True)
    )


def with_times(df: pl.DataFrame) -> pl.DataFrame:
    """Return the batch rows ``df`` with each run's ``time`` and where it comes from
    (``time_from``, TIME_FROM), and its ``kind``: its workload, else the formats read (what a
    line joining unlike runs would mix)."""
    times = [c for c, _ in TIME_FROM if c in df.columns]  # a table before recorded_time: none
    source = pl.lit(None, pl.String)
    for column, said in reversed(TIME_FROM):
        if column in times:
            source = pl.when(pl.col(column).is_not_null()).then(pl.lit(said)).otherwise(source)
    kinds = [c for c in ("workload", "format") if c in df.columns]
    return df.with_columns(
        time=pl.coalesce(*times),
        time_from=source,
        kind=pl.coalesce(*kinds) if kinds else pl.lit(None, pl.String),
    )


def trend_notes(table: pl.DataFrame) -> tuple[str, ...]:
    """What the reader of a trend should know: the runs whose time is only when their files
    were last changed, and the groups whose line joins runs of several workloads or formats."""
    notes = []
    by_file = table.filter(pl.col("time_from") == "file modified")["run_id"].unique().sort()
    if len(by_file):
        named = ", ".join(by_file.head(SHOWN).to_list())
        more = f" and {len(by_file) - SHOWN} more" if len(by_file) > SHOWN else ""
        notes.append(
            f"{len(by_file)} run{'s' * (len(by_file) > 1)} with no time of their own (no "
            "capture.json, and trace times not on the epoch clock) placed by when their files "
            f"were last modified, which may not be when they ran: {named}{more}"
        )
    for group, kinds in (
        table.group_by("group", maintain_order=True)
        .agg(pl.col("kind").drop_nulls().unique().sort())
        .iter_rows()
    ):
        if len(kinds) > 1:
            notes.append(
                f"group {group} joins runs of {len(kinds)} kinds ({', '.join(kinds[:SHOWN])}"
                f"{' ...' if len(kinds) > SHOWN else ''}): its line compares unlike runs; "
                "--by or --glob can part them"
            )
    return tuple(notes)


def trend(
    df: pl.DataFrame, path: str, *, by: str = "variant", globs: tuple[str, ...] = ()
) -> RunResults[TrendResult]:
    """Return the trend of a batch table ``df`` (read from ``path``), grouped ``by`` one of
    GROUPINGS (an old word of ``OLD_GROUPINGS`` taken as its new one); with ``glob``, a group
    per pattern in ``globs`` (first match wins)."""
    by = OLD_GROUPINGS.get(by, by)
    check_columns(df, path, dict([SPLITTING[by]]) if by in SPLITTING else {})
    table = trend_table(df, by, globs)
    failed = df.filter(pl.col("error").is_not_null())["run_id"].n_unique()
    groups = table.group_by("group", maintain_order=True).agg(
        runs=pl.len(),
        idle_pct_first=pl.col("idle_pct").first(),
        idle_pct_last=pl.col("idle_pct").last(),
        device_time_ms_first=pl.col("device_time_ms").first(),
        device_time_ms_last=pl.col("device_time_ms").last(),
    )
    result = TrendResult(str(path), table.drop("kind"), groups, failed, trend_notes(table))
    return RunResults(str(path), (result,), header={"by": by, "globs": list(globs)})


def check_columns(df: pl.DataFrame, path: str, more: dict[str, str] | None = None) -> None:
    """Raise an InputError naming ``path`` and every column trend needs (``COLUMNS`` and
    ``more``) that the table lacks (a table of an older traceana, or not a batch table), or
    holds of the wrong kind."""
    needed = {**COLUMNS, **(more or {})}
    missing = [c for c in needed if c not in df.columns]
    if missing:
        s = "s" * (len(missing) != 1)
        raise InputError(
            path,
            f"not a traceana batch table trend can read: no {', '.join(missing)} column{s} "
            "(rerun `traceana batch` to write a new table)",
        )
    wrong = [
        f"{c} holds {df.schema[c]}, not {kind}"
        for c, kind in needed.items()
        if not _holds(df.schema[c], kind)
    ]
    if wrong:
        raise InputError(path, f"not a traceana batch table trend can read: {'; '.join(wrong)}")


def _holds(dtype: pl.DataType, kind: str) -> bool:
    """True when a column of ``dtype`` can hold the ``kind`` of value (COLUMNS) trend reads;
    an all-null column holds any."""
    if dtype == pl.Null:
        return True
    if kind == "text":
        return dtype == pl.String
    return dtype.is_temporal() if kind == "time" else dtype.is_numeric()
