"""The batch table on disk: read back, and replaced whole (``trace_analyzer.atomic``).

The table is written to ``.<name>.<pid>.tmp`` beside it and renamed over it, so a reader
(or a batch killed at any moment) only ever sees a whole table. The temporaries of batches
killed while writing are removed by the next batch (``remove_stale_temporaries``).
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from trace_analyzer.atomic import stale_temporaries, write_atomic
from trace_analyzer.batch.runs import place
from trace_analyzer.errors import InputError

KEY_COLUMNS = ("run_id", "fingerprint", "error")


def read_table(out: Path) -> pl.DataFrame | None:
    """Return the existing output table, or None when there is none."""
    if not out.exists():
        return None
    try:
        df = pl.read_parquet(out)
    except Exception as e:
        raise InputError(
            out, f"not a readable batch table ({type(e).__name__}); move it away or name another -o"
        ) from e
    missing = [c for c in KEY_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(out, f"not a traceana batch table (no {', '.join(missing)} column)")
    if "part" not in df.columns:  # written before a run could be read as parts
        df = df.with_columns(part=pl.lit(None, pl.String))
    return df


def run_of() -> pl.Expr:
    """The ``run_id`` of the run a row's run was found as: its own, less ``#part`` for a part
    of a folder of traces recorded far apart (loading/parts.py)."""
    run_id, part = pl.col("run_id"), pl.col("part")
    own = run_id.str.slice(0, run_id.str.len_chars() - part.str.len_chars() - 1)
    return pl.when(part.is_null()).then(run_id).otherwise(own)


def by_place(df: pl.DataFrame) -> pl.DataFrame:
    """Return the table ``df`` keyed by each run's real path (``runs.place``): a table that
    earlier batches keyed by a run's spelling (``./top/a`` and ``/home/me/top/a``, two rows
    for one run) keeps one spelling's rows per run, those analysed last. ``df`` itself where
    every key is a real path already."""
    ids = df.filter(pl.col("part").is_null())["run_id"].unique().to_list()  # parts: real paths
    real = {i: place(i) for i in ids if i is not None}
    if all(k == v for k, v in real.items()):
        return df
    df = df.with_columns(_spelled=pl.col("run_id"), run_id=pl.col("run_id").replace(real))
    last = df.group_by("run_id").agg(pl.col("_spelled").sort_by("analysed_at").last())
    return df.join(last, on=["run_id", "_spelled"], how="semi", nulls_equal=True).drop("_spelled")


def write_table(df: pl.DataFrame, out: Path, written_runs: int | None) -> None:
    """Replace the table at ``out`` with ``df``, atomically.

    A failed write (a full disk) is an InputError in one line, saying what ``out`` holds:
    nothing (``written_runs`` None) or the ``written_runs`` runs of its last good write.
    """
    try:
        write_atomic(out, df.write_parquet)
    except (OSError, pl.exceptions.PolarsError) as e:  # polars wraps its IO errors
        before = (
            "it was not written"
            if written_runs is None
            else f"it is left as last written, with {written_runs} runs"
        )
        raise InputError(
            out, f"cannot write: {io_reason(e)}; {before}; rerun the batch to analyse the rest"
        ) from e


def io_reason(e: BaseException) -> str:
    """The operating system's words for a failed write: 'No space left on device'."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    text = text.rpartition("IO error: ")[2] if "IO error: " in text else text
    return re.sub(r" \(os error \d+\)$", "", text)


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Remove the temporary files of batches that were killed while writing ``out``."""
    removed = []
    for tmp in stale_temporaries(out):
        try:
            tmp.unlink()
            removed.append(tmp)
        except OSError:
            pass
    return removed
