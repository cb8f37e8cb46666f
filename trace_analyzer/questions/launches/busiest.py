"""The launches of ``traceana report``: every lane's row, and the queue over time of the
``QUEUE_LANES`` lanes with the longest queues only (the page embeds each lane's queue it
draws, and draws those; docs/report.md)."""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from trace_analyzer.loading.profile import Profile
from trace_analyzer.questions.launches.analysis import LaunchesResult, launches

QUEUE_LANES = 8  # the lanes whose queue a report draws: the longest queues first


def busiest(result: LaunchesResult) -> LaunchesResult:
    """Return ``result`` with the queue of its ``QUEUE_LANES`` lanes with the longest queues
    only (the page embeds each lane's queue; every lane keeps its row)."""
    top = result.lanes.sort(
        "queue_max", "launches", "lane", descending=[True, True, False], nulls_last=True
    )
    keep = top.head(QUEUE_LANES)["lane"].implode()
    return replace(result, queue=result.queue.filter(pl.col("lane").is_in(keep)))


def busiest_launches(profile: Profile) -> LaunchesResult:
    """Return the launches of one run (``profile``), the queue of its busiest lanes only."""
    return busiest(launches(profile))
