"""``traceana report``: the results one page shows, for one run and an optional base.

A report is the ``gaps`` and ``ops`` results of the run (with the run's warnings, which the
report opens with), what its timeline and gap histogram draw (``timeline``: bounded, however
long the trace), the run's ``ranks`` (each step's window broken down, stragglers), its
``kernels`` and its ``launches`` (the queue of its ``QUEUE_LANES`` busiest lanes), the
``engines`` of its device-profile exports when it has some (docs/device.md), and with a
base the ``diff`` (base → run) and the base's ``gaps`` (with its
warnings) and ``timeline``, whose histogram shares the run's bins. The renderers
(questions/report/files.py, questions/report/page.py) show nothing else (docs/report.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import polars as pl

from trace_analyzer.analyses.results import RunResults
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.device import DeviceRun
from trace_analyzer.questions.diff.analysis import DiffResult, diff, diff_runs
from trace_analyzer.questions.engines.analysis import EnginesResult, engines
from trace_analyzer.questions.engines.below import below_the_ops
from trace_analyzer.questions.gaps.analysis import GapsResult, gaps, gaps_runs
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.questions.kernels.analysis import KernelsResult, kernels
from trace_analyzer.questions.launches.analysis import LaunchesResult, launches
from trace_analyzer.questions.ops.analysis import OpsResult, ops
from trace_analyzer.questions.ranks.analysis import RanksResult, ranks
from trace_analyzer.questions.report.timeline import TimelineResult, timeline

HISTOGRAM_BINS = 24
QUEUE_LANES = 8  # the lanes whose queue a report draws: the longest queues first


def busiest(result: LaunchesResult) -> LaunchesResult:
    """Return ``result`` with the queue of its ``QUEUE_LANES`` lanes with the longest queues
    only (the page embeds each lane's queue; every lane keeps its row)."""
    top = result.lanes.sort("queue_max", "launches", descending=True, nulls_last=True)
    keep = top.head(QUEUE_LANES)["lane"].implode()
    return replace(result, queue=result.queue.filter(pl.col("lane").is_in(keep)))


@dataclass(frozen=True, repr=False)
class ReportResult:
    """What one report shows; ``base`` and the base's parts are None without a base."""

    path: str
    base: str | None
    gaps: RunResults[GapsResult]
    ops: RunResults[OpsResult]
    timeline: RunResults[TimelineResult]
    diff: RunResults[DiffResult] | None = None
    base_gaps: RunResults[GapsResult] | None = None
    base_timeline: RunResults[TimelineResult] | None = None
    ranks: RunResults[RanksResult] | None = None  # the run's ranks and steps (docs/distributed.md)
    kernels: RunResults[KernelsResult] | None = None  # its kernels or NEFFs (docs/kernels.md)
    launches: RunResults[LaunchesResult] | None = None  # its lanes' launches (docs/launches.md)
    # its device profiles' engines and roofline (docs/device.md): None without an export
    engines: RunResults[EnginesResult] | None = None
    engines_note: str | None = None  # why a device-profile export could not be read

    def __repr__(self) -> str:
        return f"ReportResult(path={self.path!r}, base={self.base!r})"


def report(
    head: Profile,
    base: Profile | None = None,
    *,
    path: str | None = None,
    base_path: str | None = None,
    device: DeviceRun | None = None,
    device_note: str | None = None,
    base_device: DeviceRun | None = None,
) -> ReportResult:
    """Return the report of one run, ``head``, compared with ``base`` when given.

    ``path``, ``base_path``: how the page names them (default: their roots). ``device``: the
    run's device-profile exports (``load_device``), whose engines the report adds when it
    holds any; ``device_note``: why they could not be read (the report says so, no more).
    ``base_device``: the base's, for the table below its ops (as ``traceana gaps`` has it).
    """
    label = str(head.root) if path is None else path
    g = gaps(head)
    g_base = None if base is None else gaps(base)
    edges = histogram_edges([g] if g_base is None else [g, g_base])  # one x scale for both
    device_result = engines(device) if device and device.profiles else None
    below = None if device_result is None else below_the_ops(head, device_result)
    parts = {
        "gaps": gaps_runs([replace(g, engines=below)], label, warnings=[head.warnings]),
        "ops": RunResults(label, (replace(ops(head), engines=below),), warnings=[head.warnings]),
        "timeline": RunResults(label, (timeline(head, g, histogram=gap_histogram(g, edges)),)),
        "ranks": RunResults(label, (ranks(head),)),
        "kernels": RunResults(label, (kernels(head),)),
        "launches": RunResults(label, (busiest(launches(head)),)),
        "engines": None if device_result is None else RunResults(label, (device_result,)),
        "engines_note": device_note,
    }
    if base is None or g_base is None:
        return ReportResult(label, None, **parts)  # type: ignore[arg-type]
    b_label = str(base.root) if base_path is None else base_path
    compared = diff(base, head, base_label=b_label, head_label=label, base_gaps=g_base, head_gaps=g)
    return ReportResult(
        label,
        b_label,
        diff=diff_runs(compared),
        base_gaps=gaps_runs(
            [replace(g_base, engines=_below(base, base_device))], b_label, warnings=[base.warnings]
        ),
        base_timeline=RunResults(
            b_label, (timeline(base, g_base, histogram=gap_histogram(g_base, edges)),)
        ),
        **parts,  # type: ignore[arg-type]
    )


def _below(run: Profile, device: DeviceRun | None) -> pl.DataFrame | None:
    """The table below ``run``'s ops from its device profiles, None without any."""
    return below_the_ops(run, engines(device)) if device and device.profiles else None


def histogram_edges(results: Sequence[GapsResult]) -> tuple[list[float], bool]:
    """Return the bin edges (ns) of the device gap durations of ``results`` (one x scale for
    a run and its base) and whether they are logarithmic: geometric bins where the durations
    span over 100×, else linear from 0."""
    found = [r.device_gaps["duration_ns"].cast(pl.Float64) for r in results if r.device_gaps.height]
    if not found:
        return [], False
    d = pl.concat(found)
    lo, hi = cast(float, d.min()), cast(float, d.max())
    n = HISTOGRAM_BINS
    if lo > 0 and hi / lo > 100:
        return [lo * (hi / lo) ** (i / n) for i in range(n + 1)], True
    top = hi if hi > 0 else 1.0
    return [top * i / n for i in range(n + 1)], False


def gap_histogram(g: GapsResult, edges: tuple[list[float], bool]) -> dict[str, Any]:
    """Return the histogram of the device gap durations of ``g`` on ``edges``: ``edges_ns``,
    ``log`` and the count per bin of each cause present (``counts``)."""
    bins, log, device_gaps = *edges, g.device_gaps
    counts: dict[str, list[int]] = {}
    if len(bins) > 1 and device_gaps.height:
        n, lo, hi = len(bins) - 1, bins[0], bins[-1]
        d = pl.col("duration_ns").cast(pl.Float64)
        scaled = (d / lo).log() / math.log(hi / lo) if log else d / (hi or 1.0)
        found = (
            device_gaps.select("cause", b=(scaled * n).floor().clip(0, n - 1).cast(pl.Int64))
            .group_by("cause", "b")
            .len()
        )
        for cause in CAUSES:
            mine = found.filter(pl.col("cause") == cause)
            if mine.height:
                row = [0] * n
                for b, k in mine.select("b", "len").rows():
                    row[b] = k
                counts[cause] = row
    return {"edges_ns": bins, "log": log, "counts": counts}
