"""A run read a file at a time (docs/distributed.md, "A rank at a time"): the runs of its trace
files, each read alone, for a map over its ranks whose reduce never holds the whole run; and
which files' lanes and processes are told apart from the others' (``lane_prefixes``), the one
rule that ``profile.keep_files_apart`` applies to a run read whole and the reducer to a run
read by file.

A run can be read so when it is two trace files or more (Kineto JSON, Perfetto), outside an
archive, with nothing beside them that is read together with them: an Explorer export (its
framework events are deduplicated against the traces, its clock aligned on them), NEFF/NTFF
pairs or raw Neuron files. Byte-identical copies of a trace are read once, as for a whole run
(``profile.unique_sources``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from trace_analyzer.inputs.archive import MemberPath
from trace_analyzer.inputs.discover import Run

FILE_KINDS = ("json", "perfetto")  # sources that are one trace file, read alone as they are


@dataclass(frozen=True)
class ByFile:
    """The runs of one run's trace files, each a run of its own (its root the file), and the
    warnings of the copies left out."""

    run: Run
    files: list[Run]
    warnings: list[str] = field(default_factory=list)


def by_file(run: Run) -> ByFile | None:
    """Return ``run`` as a run per trace file (module doc); None when it cannot be read so."""
    from trace_analyzer.loading.profile import unique_sources

    if isinstance(run.root, MemberPath) or len(run.sources) < 2:
        return None
    if any(s.kind not in FILE_KINDS for s in run.sources) or run.neffs or run.ntffs or run.raw:
        return None
    if run.part is not None:  # a part of a folder split by time: read whole, as it was found
        return None
    sources, copies = unique_sources(run)
    files = [Run(root=s.path, sources=[s], layouts=set(run.layouts)) for s in sources]
    return ByFile(run, files, copies)


def lane_spans(events: pl.DataFrame) -> pl.DataFrame:
    """Return per lane and file of ``events`` its span (``lo``, ``hi``): what
    ``lane_prefixes`` decides on."""
    return events.group_by(
        lane=pl.col("lane").cast(pl.String), file=pl.col("file").cast(pl.String)
    ).agg(lo=pl.col("start_ns").min(), hi=pl.col("end_ns").max())


def lane_prefixes(
    spans: pl.DataFrame,
    formats: dict[str, tuple[str, int | None]],
    in_run: Callable[[str], str],
    notes: list[str],
) -> dict[str, str]:
    """Return the prefix of each file whose lanes are kept apart (``profile.keep_files_apart``):
    ``rank:N/`` when each such file has a rank of its own, else ``file:PATH/`` (``in_run``:
    the file's path in the run). ``spans``: ``lane_spans`` of the run's files; ``formats``:
    each read file's format and rank; ``notes`` gains a line per format."""
    if len(formats) < 2 or spans.is_empty():
        return {}
    fmt_of = {f: fmt for f, (fmt, _) in formats.items()}
    spans = spans.with_columns(
        fmt=pl.col("file").replace_strict(fmt_of, default=None, return_dtype=pl.String)
    ).sort("fmt", "lane", "lo")
    overlap = pl.col("lo") < pl.col("hi").cum_max().shift(1).over("fmt", "lane")
    shared = spans.filter(overlap.fill_null(False).any().over("fmt", "lane"))
    prefix: dict[str, str] = {}
    for (fmt,), group in shared.group_by("fmt"):
        files = sorted(group["file"].unique().to_list())
        ranks = [formats[f][1] for f in files]
        by_rank = None not in ranks and len(set(ranks)) == len(ranks)
        prefix |= {
            f: f"rank:{r}/" if by_rank else f"file:{in_run(f)}/"
            for f, r in zip(files, ranks, strict=True)
        }
        notes.append(
            f"{len(files)} {fmt} files share process and device numbers at the same time "
            f"({', '.join(files)}): their lanes are kept apart by {'rank' if by_rank else 'file'}"
        )
    return prefix
