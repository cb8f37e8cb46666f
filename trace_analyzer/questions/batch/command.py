"""`traceana batch`: every run under ROOTS into one Parquet table (trace_analyzer/batch/)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from trace_analyzer.cli.common import (
    cli,
    handle_errors,
    limit_options,
    writing,
)
from trace_analyzer.cli.messages import plain, say_passed
from trace_analyzer.errors import UsageError

if TYPE_CHECKING:
    from trace_analyzer.batch import BatchResult


class Progress:
    """The progress bar of a batch on a terminal, and how far it got (for an interruption)."""

    def __init__(self, terminal: bool):
        self.terminal = terminal
        self.bar: Any = None
        self.started = time.monotonic()
        self.done = self.total = 0

    def __call__(self, done: int, failed: int, total: int) -> None:
        self.done, self.total = done, total
        if not self.terminal:
            return
        if self.bar is None:
            self.bar = click.progressbar(
                length=total,
                file=sys.stderr,
                show_eta=True,
                show_pos=True,
                label="runs",
                item_show_func=lambda s: s,
            )
            self.bar.__enter__()
        rate = done / max(time.monotonic() - self.started, 1e-9)
        self.bar.current_item = f"{failed} failed, {rate:.1f} runs/s"
        self.bar.update(1)

    def close(self, newline: bool = False) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
            if newline:
                click.echo(err=True)

    def stopped(self, e: BaseException, output: Path) -> NoReturn:
        """Say what an interrupted batch kept, and exit 130 (Ctrl-C) or 143 (SIGTERM)."""
        self.close(newline=True)
        how = "interrupted" if isinstance(e, KeyboardInterrupt) else "terminated"
        if self.total:
            click.echo(
                f"traceana: {how}: {output} holds every run finished so far ({self.done} of "
                f"{self.total} analysed in this batch); rerun the same command to analyse "
                "the rest",
                err=True,
            )
        else:
            click.echo(f"traceana: {how} before any run finished; rerun the same command", err=True)
        sys.exit(130 if isinstance(e, KeyboardInterrupt) else 143)


@cli.command()
@click.argument("roots", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The Parquet table to write (or to update, when it exists).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Local worker processes (default: the number of cores; 1 runs in-process).",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Run on an existing Dask cluster, e.g. tcp://host:8786 (the dask extra).",
)
@click.option(
    "--hash",
    "hash_files",
    is_flag=True,
    help="Tell changed runs by the SHA-256 of their files, not size and mtime.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Kill a run's worker after this long and record the run "
    "as failed (retried by the next batch). Default: none.",
)
@click.option(
    "--worker-memory",
    metavar="SIZE",
    default=None,
    help="Cap each worker process's memory, e.g. 2GiB; a run past it is "
    "recorded as failed (retried by the next batch). Default: none.",
)
@click.option(
    "--checkpoint",
    type=click.FloatRange(min=0),
    default=30,
    show_default=True,
    metavar="SECONDS",
    help="Write the table at least this often while runs finish "
    "(always at the end, and when interrupted).",
)
@click.option("--strict", is_flag=True, help="Exit 1 when any run failed.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="List each file or folder discovery passed by (a folder it cannot read, a FIFO), "
    "not a count of each kind.",
)
@limit_options
@handle_errors
def batch(
    roots: tuple[Path, ...],
    output: Path,
    jobs: int | None,
    scheduler: str | None,
    hash_files: bool,
    timeout: float | None,
    worker_memory: str | None,
    checkpoint: float,
    strict: bool,
    verbose: bool,
    max_bytes: int | None,
) -> None:
    """Analyse every run under ROOTS into one Parquet table, one row per run × device.

    ROOTS are folders (any layout traceana reads), archives (.tar, .tar.gz, .tgz, .zip, read
    in memory) and trace files. A bad run is recorded in the `error` column and the batch goes
    on. With an existing table, unchanged runs are skipped and new or changed ones added; the
    table is replaced atomically (docs/batch.md).

    \b
    Example:
        traceana batch ./archive -o runs.parquet --jobs 8
    """
    from trace_analyzer import batch as batch_mod

    if output.suffix.lower() != ".parquet":
        raise UsageError(f"{output}: the batch table is Parquet; name a .parquet file")
    memory = _size_of("--worker-memory", worker_memory)
    progress = Progress(batch_mod.stderr_is_terminal())
    res = _run_stoppable(
        progress,
        output,
        lambda: batch_mod.run_batch(
            list(roots),
            output,
            jobs=jobs or batch_mod.default_jobs(),
            scheduler=scheduler,
            hash_files=hash_files,
            progress=progress,
            timeout=timeout,
            checkpoint_s=checkpoint,
            max_bytes=max_bytes,
            worker_memory=memory,
        ),
    )
    _say_done(res, output, ", ".join(map(str, roots)), verbose)
    if strict and res.failed:
        sys.exit(1)


def _size_of(flag: str, text: str | None) -> int | None:
    """Return a size option's bytes (``parse_size``, as --max-bytes); a bad one is a usage
    error naming the option, before anything is read."""
    from trace_analyzer.units import parse_size

    try:
        return None if text is None else parse_size(text)
    except UsageError as e:
        raise UsageError(f"{flag}: {e}") from e


def _run_stoppable(progress: Progress, output: Path, run: Callable[[], BatchResult]) -> BatchResult:
    """Return what ``run`` (the batch) returns; Ctrl-C or SIGTERM during it says what the
    table kept and exits (``Progress.stopped``), also when the signal arrived as the batch
    ended or made it fail (``batch.stops``)."""
    from polars.exceptions import PanicException

    from trace_analyzer.batch.stops import BatchStopped, pending, stoppable

    try:
        with stoppable(), writing(output):
            try:
                res = run()
            except (Exception, PanicException) as e:  # (polars' panic is a BaseException)
                if (stop := pending()) is None:
                    raise
                raise stop from e  # a failure a stop caused (an error, or a panic, of polars'
                # own around the stop's exception; a write it broke) is the stop
            if (stop := pending()) is not None:  # one that arrived after the last run
                raise stop
            return res
    except (KeyboardInterrupt, BatchStopped) as e:
        progress.stopped(e, output)
    finally:
        progress.close()


def _say_done(res: BatchResult, output: Path, roots: str, verbose: bool) -> None:
    """Name each failed run, then what the batch found, analysed and wrote, on stderr."""
    for line in res.notes:  # a stale lock of the table taken over
        click.echo(f"traceana: note: {plain(line)}", err=True)
    say_passed(roots, res.passed, verbose)
    for line in res.failures:
        click.echo(f"traceana: failed: {plain(line)}", err=True)
    written = (
        f"wrote {plain(output)} ({res.table.height} rows)"
        if res.analysed or not res.found
        else f"{plain(output)} unchanged ({res.table.height} rows)"
    )
    click.echo(
        f"{res.found} runs: {res.succeeded} succeeded, {res.failed} failed "
        f"({res.analysed} analysed, {res.skipped} unchanged and skipped); " + written,
        err=True,
    )
