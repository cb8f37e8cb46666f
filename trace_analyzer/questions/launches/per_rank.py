"""The report's launches of a run, a rank at a time (docs/distributed.md, "launches a rank at
a time"): one pass, in which each file gives its ``LaunchesPart`` (``launches_part``: its
lanes' rows, each lane's queue downsampled as the JSON has it, its notes), and the reduce of
the parts (``combine_launches``) into ``busiest_launches`` of the run read whole.

A lane is one file's (its rank, pid and device), so its row and its queue are that file's
alone; the run's rows are the files' together, sorted as ``launches`` sorts them, and "the
busiest lanes" is ``busiest`` over them (a top N by queue_max, launches, then lane). A
lane's queue is downsampled where it is measured (``analysis.downsample``: at most
``POINTS`` per lane, and downsampling again keeps them), so what travels grows with the
lanes, not with the launches.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import polars as pl

from trace_analyzer.analyses.passes import Passes
from trace_analyzer.loading.profile import Profile
from trace_analyzer.questions.launches.analysis import (
    LANE,
    POINTS,
    LaunchesResult,
    downsample,
    measured,
    notes_of,
)
from trace_analyzer.questions.launches.busiest import busiest


@dataclass(frozen=True, repr=False)
class LaunchesPart:
    """One file's launches: its ``lanes`` (``launches``' rows), its lanes' ``queue`` change
    points downsampled (``POINTS`` per lane at most), how many device rows have no linked
    launch (``unlinked``) and the ``sources`` of its launched work (``notes_of``)."""

    lanes: pl.DataFrame
    queue: pl.DataFrame
    unlinked: int
    sources: frozenset[str]

    def __repr__(self) -> str:
        return f"LaunchesPart({self.lanes.height} lanes, {self.queue.height} queue points)"


def launches_part(profile: Profile) -> LaunchesPart:
    """Return the ``LaunchesPart`` of ``profile`` (one file of a run)."""
    lanes, queue, unlinked, sources = measured(profile)
    return LaunchesPart(lanes, downsample(queue, POINTS), unlinked, frozenset(sources))


def combine_launches(parts: list[LaunchesPart], *, root: str) -> LaunchesResult:
    """Return the launches of the run ``root`` from its files' ``parts``, the queue of its
    busiest lanes only: ``busiest_launches`` of the run read whole (its JSON)."""
    unlinked = sum(p.unlinked for p in parts)
    sources = {s for p in parts for s in p.sources}
    lanes = pl.concat([p.lanes for p in parts], how="vertical_relaxed")
    queue = pl.concat([p.queue for p in parts], how="vertical_relaxed")
    result = LaunchesResult(
        root=root,
        lanes=lanes.sort(LANE, nulls_last=True),
        queue=queue.sort(*LANE, "ts_ns", nulls_last=True),
        notes=notes_of(unlinked, sources),
    )
    return busiest(result)


def launches_passes(root: str) -> Passes[LaunchesResult]:
    """The report's launches of the run ``root`` a file at a time (``analyses/passes.py``):
    one pass (``launches_part``), then the reduce (``combine_launches``)."""
    parts = yield partial(launches_part)
    return combine_launches(parts, root=root)
