"""``traceana batch``: every run under some roots, analysed in parallel, into one Parquet table.

The pieces (docs/batch.md):

- ``runs``: ``find_runs(roots)`` discovers the runs under each root (profile folders in any
  layout traceana reads, and archives read in memory), each a ``RunSpec`` with its identity
  (``run_id``) and its fingerprint (``trace_analyzer.inputs.fingerprint``).
- ``rows``: the table's ``SCHEMA`` and ``analyse_run(spec)``, the per-run function:
  module-level and picklable, so a process pool and a Dask cluster run the very same code.
  It returns one row per device; any failure is one row with ``error`` set.
- ``workers``: in-process, local ``Workers`` (spawned processes, one run each at a time; a
  worker that dies, runs past ``timeout`` or past its memory cap costs its run only), or a
  Dask scheduler (with limits, each task's run in a worker process of its own).
- ``limits``: ``Limits`` (``timeout``, ``memory``), and the memory cap a worker sets on
  itself (``RLIMIT_DATA``).
- ``table``: the table read back, and replaced whole (``trace_analyzer.atomic``).
- ``lock``: ``<table>.lock``, held for the whole batch, so that two batches on one table do
  not each keep half the runs; a second batch refuses with one line.
- here, ``run_batch``: skips the runs already in the output table with the same fingerprint,
  maps ``analyse_run`` over the others, reports progress, and writes the table every
  ``checkpoint_s`` seconds and at the end, so an interrupted batch leaves a whole table and a
  rerun resumes.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from trace_analyzer.batch.limits import Limits, require_memory_cap
from trace_analyzer.batch.lock import lock_path, table_lock
from trace_analyzer.batch.rows import SCHEMA, Row, analyse_run, fault_row, to_frame
from trace_analyzer.batch.runs import RunSpec, find_runs
from trace_analyzer.batch.stops import pending
from trace_analyzer.batch.table import (
    by_place,
    read_table,
    remove_stale_temporaries,
    run_of,
    write_table,
)
from trace_analyzer.batch.workers import DASK_HINT, Analyse, Workers, dask, local
from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import AnyPath

__all__ = [
    "CHECKPOINT_S",
    "DASK_HINT",
    "SCHEMA",
    "BatchResult",
    "Limits",
    "RunSpec",
    "Workers",
    "analyse_run",
    "default_jobs",
    "fault_row",
    "find_runs",
    "lock_path",
    "read_table",
    "remove_stale_temporaries",
    "run_batch",
    "stderr_is_terminal",
    "to_frame",
]

CHECKPOINT_S = 30.0
Progress = Callable[[int, int, int], object]  # (done, failed, total), after each run


@dataclass
class BatchResult:
    table: pl.DataFrame
    found: int
    analysed: int
    skipped: int
    succeeded: int
    failed: int
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. a stale lock of the table taken over
    # what discovery passed by under the roots (a folder it cannot read, a FIFO): (path, why)
    passed: list[tuple[AnyPath, str]] = field(default_factory=list)


def run_batch(
    roots: list[Path],
    out: Path,
    *,
    jobs: int = 1,
    scheduler: str | None = None,
    hash_files: bool = False,
    progress: Progress | None = None,
    checkpoint_s: float = CHECKPOINT_S,
    timeout: float | None = None,
    analyse: Analyse = analyse_run,
    max_bytes: int | None = None,
    worker_memory: int | None = None,
) -> BatchResult:
    """Return what a batch did (``BatchResult``: the table, what it found, analysed, skipped
    and failed), having analysed every new or changed run under ``roots`` into the table at
    ``out``, as ``traceana batch`` does.

    ``jobs``: how many runs at once (worker processes); ``scheduler``: a Dask scheduler's
    address (``tcp://HOST:8786``) to run them on instead; ``hash_files``: fingerprint runs by
    their files' content, not their size and time. ``progress``: called as
    ``progress(done, failed, total)`` after each run. A stop signal that the run's
    native code swallowed (``stops``: the run may have failed for no reason of its own) is
    raised after it, and that run is left out of the table, to the next batch, rather than
    kept as a failed row that would be skipped as unchanged. ``timeout``: seconds a run
    may take in a worker process before it is killed and recorded as failed.
    ``worker_memory``: bytes of data memory a worker process may use (``limits``); a run past
    it is recorded as failed. With either, every run is analysed in a worker process, on
    Dask too (one of its own per task). ``analyse`` is the per-run function (module-level, so
    workers can import it). ``max_bytes``: the most one compressed input may inflate to
    (None: the default).

    The table's lock (``lock.table_lock``) is held from before the table is read to after its
    last write; another batch holding it is an InputError. The table is only ever replaced
    whole (``write_table``): every ``checkpoint_s`` seconds, at the end, and when
    interrupted. A write that fails (a full disk) stops the batch with an InputError; the
    table keeps what it held after its last good write.
    """
    limits = Limits(timeout, worker_memory)
    if worker_memory is not None and not scheduler:  # a cluster's workers set it themselves
        require_memory_cap()
    with table_lock(out) as notes:  # before the table is read: one batch at a time on it
        spelled = read_table(out)
        old = None if spelled is None else by_place(spelled)  # keyed by spelling before
        remove_stale_temporaries(out)
        specs = find_runs(roots, hash_files=hash_files, max_bytes=max_bytes)
        todo = _changed(specs, old)
        table = _Table(out, old, {s.run_id for s in todo})
        table.respelled = old is not spelled
        results = (
            dask(todo, scheduler, limits, analyse)
            if scheduler
            else local(todo, jobs, limits, analyse)
        )
        failures = _gather(results, table, len(todo), progress, checkpoint_s)
        return _result(table.frame(), specs, todo, failures, notes)


def _changed(specs: list[RunSpec], old: pl.DataFrame | None) -> list[RunSpec]:
    """The runs not in the old table with the same fingerprint: those to analyse."""
    known: dict[str, str | None] = {}
    if old is not None:
        known = dict(old.group_by(run_of()).agg(pl.col("fingerprint").first()).rows())
    return [s for s in specs if s.run_id not in known or known[s.run_id] != s.fingerprint]


class _Table:
    """The output table as the batch builds it: the old rows it keeps, then the new ones."""

    def __init__(self, out: Path, old: pl.DataFrame | None, redo: set[str]):
        self.out, self.old = out, old
        self.new: list[pl.DataFrame] = []
        self.written: int | None = None  # runs in the table on disk; None: no table yet
        self.respelled = False  # the old table's keys made real paths: written though unchanged
        if old is None:
            self.kept = pl.DataFrame(schema=SCHEMA)
        else:
            self.written = old["run_id"].n_unique()
            kept = old.filter(~run_of().is_in(list(redo)))
            self.kept = pl.concat([to_frame([]), kept], how="diagonal_relaxed")

    def frame(self) -> pl.DataFrame:
        frames = [self.kept, *self.new]
        return pl.concat(frames, how="diagonal_relaxed").sort("run_id", "device", nulls_last=False)

    def write(self) -> None:
        df = self.frame()
        write_table(df, self.out, self.written)
        self.written = df["run_id"].n_unique()


def _gather(
    results: Iterator[list[Row]],
    table: _Table,
    total: int,
    progress: Progress | None,
    checkpoint_s: float,
) -> list[str]:
    """Add each run's rows to ``table`` as they come, writing it at checkpoints and at the
    end (also when interrupted); return the failures, one line each."""
    failures: list[str] = []
    done = failed = 0
    last = time.monotonic()
    write_failed = False
    try:
        for rows in results:
            error = rows[0].get("error") if rows else None
            done, failed = done + 1, failed + bool(error)
            if (stop := pending()) is not None:  # a stop the run's native code swallowed:
                raise stop  # the run may have failed because of it, so it is not kept
            table.new.append(to_frame(rows))
            if progress:
                progress(done, failed, total)
            if error:
                failures.append(_failure(rows[0]["run_id"], error))
            if time.monotonic() - last > checkpoint_s:
                try:
                    table.write()
                except InputError as e:
                    if (stop := pending()) is not None:  # the write failed because of a stop
                        raise stop from e  # (the last write, below, is tried again)
                    write_failed = True
                    raise
                last = time.monotonic()
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()  # stop the workers (if interrupted) before the last write
        if not write_failed and (table.new or table.old is None or table.respelled):
            table.write()
    return failures


def _result(
    final: pl.DataFrame,
    specs: list[RunSpec],
    todo: list[RunSpec],
    failures: list[str],
    notes: list[str],
) -> BatchResult:
    """The counts over every run under the roots, the skipped ones by their stored rows."""
    redo = {s.run_id for s in todo}
    state = (
        final.filter(run_of().is_in([s.run_id for s in specs]))
        .group_by(run_of())
        .agg(bad=pl.col("error").is_not_null().any())
    )
    n_failed = int(state["bad"].sum())
    skipped_failures = [
        _failure(r, e)
        for r, e in final.filter(
            run_of().is_in([s.run_id for s in specs if s.run_id not in redo])
            & pl.col("error").is_not_null()
        )
        .select("run_id", "error")
        .unique()
        .rows()
    ]
    return BatchResult(
        table=final,
        found=len(specs),
        analysed=len(todo),
        skipped=len(specs) - len(todo),
        succeeded=state.height - n_failed,
        failed=n_failed,
        failures=failures + sorted(skipped_failures),
        notes=notes,
        passed=[item for s in specs if s.run is not None for item in s.run.not_regular],
    )


def _failure(run_id: str, error: str) -> str:
    return error if error.startswith(run_id) else f"{run_id}: {error}"


def default_jobs() -> int:
    """The cores this process may use."""
    return (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()
