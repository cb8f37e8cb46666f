"""The kernel breakdown of a run, a rank at a time (docs/distributed.md, "kernels a rank at a
time").

Each file gives its ``KernelsPart`` (``kernels_part``): per rank, process, NEFF, name and
kind, the distinct durations of its pieces of work and how often each comes (what the
quantiles need: a sum or a count adds up across files, a p50 or a p95 does not), whether it
has Neuron executions and whether it said ``NO_ARGS`` of them, and what telling processes
apart takes (its pids, its lanes' spans, its files' formats). ``combine_kernels`` numbers
the processes as the run read whole does (``profile.keyed``: the files that share process
and device numbers at the same time apart), adds the counts up per kernel and makes every
figure again from them: count, total, mean, min, max, and p50 and p95 by polars' linear
interpolation (``_quantile``), rounded as ``per_kernel`` rounds them; the kinds are the
kernels' counts and totals summed. One pass; no event id.

A kernel row is one rank's and process's, so it comes from one file, but the counts are
added up all the same: two files of one rank and pid whose lanes never overlap in time
(not kept apart) make one row read whole, as here. Read whole, one Neuron execution
(``exec_id``) of two such files would count once; a file at a time, twice.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from trace_analyzer.analyses.passes import Pass
from trace_analyzer.analyses.rows import counted_quantile
from trace_analyzer.loading.by_file import lane_prefixes, lane_spans
from trace_analyzer.loading.profile import Profile, processes_apart
from trace_analyzer.questions.kernels.analysis import (
    KERNEL_COLUMNS,
    KIND_COLUMNS,
    NO_ARGS,
    OWNER,
    KernelsResult,
    _share,
    named,
)
from trace_analyzer.questions.ranks.analysis import work_in_step

KERNEL = [*OWNER, "neff", "name", "kind"]  # what a kernel row is per


@dataclass(frozen=True, repr=False)
class KernelsPart:
    """What one file gives ``kernels``: ``durations`` (per ``KERNEL`` and ``duration_ns``,
    how many pieces of work, ``n``), whether it has Neuron executions (``neuron``) and said
    ``NO_ARGS`` of them (``no_args``); ``pids``, ``lanes`` (``by_file.lane_spans``) and
    ``formats``: what telling its processes apart from other files' takes."""

    durations: pl.DataFrame
    neuron: bool
    no_args: bool
    pids: tuple[int | None, ...] = ()
    lanes: pl.DataFrame = field(default_factory=pl.DataFrame)
    formats: dict[str, tuple[str, int | None]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"KernelsPart({self.durations.height} durations)"


def kernels_part(profile: Profile) -> KernelsPart:
    """Return the ``KernelsPart`` of ``profile`` (one file of a run)."""
    events = profile.keyed
    done = work_in_step(events, profile.edges, None)
    notes: list[str] = []
    pieces = named(done, events, notes)
    durations = pieces.group_by(*KERNEL, duration_ns=pl.col("end_ns") - pl.col("start_ns")).agg(
        n=pl.len().cast(pl.Int64)
    )
    return KernelsPart(
        durations=durations,
        neuron=bool((done["source"] == "neuron_hw").any()),
        no_args=NO_ARGS in notes,
        pids=tuple(events["pid"].unique().to_list()),
        lanes=lane_spans(events),
        formats={str(r.source.path): (r.format, r.rank) for r in profile.reads if r.read},
    )


def _told_apart(parts: list[KernelsPart]) -> list[pl.DataFrame]:
    """Each part's ``durations`` with its pids numbered as the run read whole numbers them
    (``profile.keyed``: ``processes_apart`` of the files ``keep_files_apart`` keeps apart)."""
    frames = [p.durations for p in parts]
    formats = {f: v for p in parts for f, v in p.formats.items()}
    lanes = [p.lanes for p in parts if p.lanes.height]
    if len(formats) < 2 or not lanes:
        return frames
    prefix = lane_prefixes(pl.concat(lanes, how="vertical_relaxed"), formats, str, [])
    if not prefix:
        return frames
    files = [list(p.formats)[0] if len(p.formats) == 1 else None for p in parts]
    pairs = pl.concat(
        [
            pl.DataFrame(
                {"file": f, "old": list(p.pids)}, schema={"file": pl.String, "old": pl.Int64}
            )
            for f, p in zip(files, parts, strict=True)
            if f is not None
        ]
    )
    new = processes_apart(pairs.with_columns(pid="old"), sorted(prefix))
    out = []
    for f, frame in zip(files, frames, strict=True):
        if f is None or frame.is_empty():
            out.append(frame)
            continue
        pid = new.filter(pl.col("file") == f).select("old", new="pid")
        renamed = frame.join(pid, left_on="pid", right_on="old", how="left", nulls_equal=True)
        out.append(renamed.with_columns(pid="new").select(frame.columns))
    return out


def per_kernel(counts: pl.DataFrame) -> pl.DataFrame:
    """``analysis.per_kernel`` of the run from its pieces' durations counted (``counts``)."""
    d, n = pl.col("duration_ns"), pl.col("n")
    table = (
        counts.sort(*KERNEL, "duration_ns", nulls_last=True)
        .group_by(*KERNEL)
        .agg(
            count=n.sum(),
            total_ns=(d * n).sum(),
            p50_ns=counted_quantile(0.5).round(0).cast(pl.Int64),
            p95_ns=counted_quantile(0.95).round(0).cast(pl.Int64),
            max_ns=d.max(),
            min_ns=d.min(),
        )
        .with_columns(
            mean_ns=(pl.col("total_ns") / pl.col("count")).round(0).cast(pl.Int64),
            share_pct=_share(),
        )
    )
    order = table.sort(
        *OWNER, "total_ns", "name", "neff", "kind",
        descending=[False, False, True, False, False, False], nulls_last=True,
    )  # fmt: skip
    return order.select(*KERNEL_COLUMNS).cast(KERNEL_COLUMNS)  # type: ignore[arg-type]


def per_kind(kernels: pl.DataFrame) -> pl.DataFrame:
    """``analysis.per_kind`` of the run from its kernel rows (their counts and totals)."""
    table = (
        kernels.group_by(*OWNER, "kind")
        .agg(pl.col("count").sum(), pl.col("total_ns").sum())
        .with_columns(share_pct=_share())
    )
    order = table.sort(
        *OWNER, "total_ns", "kind", descending=[False, False, True, False], nulls_last=True
    )
    return order.select(*KIND_COLUMNS).cast(KIND_COLUMNS)  # type: ignore[arg-type]


def combine_kernels(parts: list[KernelsPart], *, root: str) -> KernelsResult:
    """Return the kernel breakdown of the run ``root`` from its files' ``parts``
    (``kernels_part``): the ``KernelsResult`` of the run read whole (``kernels`` with no
    step)."""
    frames = [f for f in _told_apart(parts) if f.height]
    if frames:
        counts = pl.concat(frames, how="vertical_relaxed").group_by(*KERNEL, "duration_ns")
        kernel_rows = per_kernel(counts.agg(pl.col("n").sum()))
        kinds = per_kind(kernel_rows)
    else:
        kernel_rows, kinds = pl.DataFrame(schema=KERNEL_COLUMNS), pl.DataFrame(schema=KIND_COLUMNS)
    said = any(p.no_args for p in parts) and all(p.no_args for p in parts if p.neuron)
    return KernelsResult(
        root=root, step=None, kernels=kernel_rows, kinds=kinds, notes=(NO_ARGS,) if said else ()
    )


def kernels_passes(root: str) -> Generator[Pass, list[Any], KernelsResult]:
    """The kernel breakdown of the run ``root`` measured a file at a time: one pass
    (``kernels_part``)."""
    parts: list[KernelsPart] = yield kernels_part
    return combine_kernels(parts, root=root)
