"""traceana tables: one run's tables as Parquet files, for DuckDB, polars and pandas."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from trace_analyzer.cli.common import Loading, cli, handle_errors, load_options, writing
from trace_analyzer.cli.messages import plain
from trace_analyzer.errors import InputError, UsageError


def refuse_folder(path: Path, output: Path, targets: list[Path]) -> None:
    """Raise a UsageError for an -o DIR inside the profile folder ``path`` (its Parquet
    would be read back as an input next time) or one that already holds any of ``targets``
    (nothing the user has is overwritten)."""
    if path.is_dir():
        run, out = path.resolve(), output.resolve()
        if out == run or run in out.parents:
            raise UsageError(
                f"-o {output}: that folder is inside the profile folder {path}; traceana "
                "would read its Parquet files as part of the run: name a folder outside it"
            )
    there = [t.name for t in targets if t.exists() or t.is_symlink()]
    if there:
        raise UsageError(
            f"-o {output}: that folder already holds {', '.join(there)}; traceana never "
            "replaces a file: name another folder or move them away"
        )


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    required=True,
    help="Folder to write the tables in (created if missing; none of its files replaced).",
)
@load_options
@handle_errors
def tables(path: Path, output: Path, loading: Loading) -> None:
    """Write one run's tables as Parquet: events, edges, chains, gaps, devices, ops.

    One file per table in DIR (events.parquet, edges.parquet, chains.parquet, gaps.parquet,
    ops.parquet) and tables.json, the manifest of their rows and columns: the tables the
    other commands compute, for SQL in DuckDB or frames in polars and pandas (docs/tables.md).
    DIR must be outside the profile folder and hold none of these files yet.

    \b
    Example:
        traceana tables ./profile_out -o ./tables
    """
    import polars as pl

    from trace_analyzer.batch.table import io_reason
    from trace_analyzer.questions.tables import parquet
    from trace_analyzer.questions.tables.analysis import tables as tables_of

    targets = parquet.files(output)
    refuse_folder(path, output, targets)
    profile = loading.one(path, args=True)  # args: the NEFF of a Neuron execution
    frames = tables_of(profile, loading.cache.gaps(profile))
    made = not output.exists()
    try:
        with writing(output):
            output.mkdir(parents=True, exist_ok=True)
            try:
                parquet.write(frames, output, source=str(path))
            except pl.exceptions.PolarsError as e:  # polars wraps its IO errors
                raise InputError(output, f"cannot write: {io_reason(e)}") from e
    except BaseException:
        if made:  # the folder this command made, emptied by the failed write
            with contextlib.suppress(OSError):
                output.rmdir()
        raise
    counts = ", ".join(f"{frame.height} {name}" for name, frame in frames.items())
    click.echo(f"wrote {plain(output)}: {counts}", err=True)
