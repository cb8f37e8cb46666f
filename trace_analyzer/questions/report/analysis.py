"""``traceana report``: the results one page shows, for one run and an optional base.

A report is the ``gaps`` and ``ops`` results of the run (with the run's warnings, which the
report opens with), what its timeline and gap histogram draw (``timeline``: bounded, however
long the trace), and with a base the ``diff`` (base → run) and the base's ``gaps`` (with its
warnings) and ``timeline``, whose histogram shares the run's bins; then the questions' parts
of it, each computed as the questions' registry says (``Part``, questions/__init__.py): the
run's ``ranks`` (each step's window broken down, stragglers), its ``kernels``, its
``launches`` (the queue of its busiest lanes), the ``engines`` of its device-profile
exports when it has some (docs/device.md), and any question's registered since. The
renderers (questions/report/files.py, questions/report/page.py) show nothing else
(docs/report.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import polars as pl

from trace_analyzer.analyses.results import Listed, RunResult, RunResults
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.device import DeviceRun
from trace_analyzer.progress import step as said
from trace_analyzer.questions import QUESTIONS, Part, resolve
from trace_analyzer.questions.diff.analysis import DiffResult, diff, diff_runs
from trace_analyzer.questions.engines.analysis import EnginesResult, engines
from trace_analyzer.questions.engines.below import below_the_ops
from trace_analyzer.questions.gaps.analysis import GapsResult, gaps, gaps_runs
from trace_analyzer.questions.gaps.causes import CAUSES
from trace_analyzer.questions.gaps.kept import COUNTED
from trace_analyzer.questions.ops.analysis import OpsResult, ops
from trace_analyzer.questions.report.timeline import TimelineResult, timeline

HISTOGRAM_BINS = 24
# The report's own results, in the order the page embeds them (the questions' parts follow).
OWN = ("gaps", "ops", "timeline", "diff", "base_gaps", "base_timeline")


def registered_parts() -> list[tuple[str, Part]]:
    """Return the questions' parts of the report (each ``Question.report`` of the registry),
    with their question's name, in the page's order (``Part.order``, then the registry's)."""
    found = [(q.name, q.report) for q in QUESTIONS if q.report is not None]
    return sorted(found, key=lambda item: item[1].order)


@dataclass(frozen=True, repr=False)
class ReportResult:
    """What one report shows; ``base`` and the base's parts are None without a base.

    ``parts``: the questions' parts (``registered_parts``) by name, in the page's order, each
    only where the run has it (``engines`` only with device-profile exports); each is read as
    an attribute too (``report.ranks``), None where the run has none. ``notes``: per part,
    why it could not be computed (a device-profile export that could not be read).
    """

    path: str
    base: str | None
    gaps: RunResults[GapsResult]
    ops: RunResults[OpsResult]
    timeline: RunResults[TimelineResult]
    diff: RunResults[DiffResult] | None = None
    base_gaps: RunResults[GapsResult] | None = None
    base_timeline: RunResults[TimelineResult] | None = None
    parts: Mapping[str, RunResults[Any]] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        """Return the part ``name`` (``report.kernels``), None where the run has none."""
        if not name.startswith("_") and name not in ("parts", "notes"):
            if name in self.parts:
                return self.parts[name]
            if any(name == known for known, _ in registered_parts()):
                return None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def result(self, kind: str) -> RunResults[Any] | None:
        """Return the report's results ``kind``: one of its own (``OWN``) or a question's
        part; None where it has none."""
        if kind in OWN:
            return cast(RunResults[Any] | None, getattr(self, kind))
        return self.parts.get(kind)

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
    run's device-profile exports (``load_device``), whose parts (engines) the report adds
    when it holds any; ``device_note``: why they could not be read (the report says so, no
    more). ``base_device``: the base's, for the table below its ops (as ``traceana gaps``
    has it).
    """
    label = str(head.root) if path is None else path
    found, notes = _parts(head, device, device_note)
    parts = {name: RunResults(label, (result,)) for name, result in found.items()}
    # the engines part, where the run has one, gives the table below its gaps and ops
    device_result = found.get("engines")
    g = gaps(head)
    g_base = None if base is None else gaps(base)
    engines_of = device_result if isinstance(device_result, EnginesResult) else None
    below = None if engines_of is None else below_the_ops(head, engines_of, g.chain)
    edges = histogram_edges([g] if g_base is None else [g, g_base])  # one x scale for both
    own = (
        gaps_runs([replace(g, engines=below)], label, warnings=[head.warnings]),
        RunResults(label, (replace(ops(head), engines=below),), warnings=[head.warnings]),
        RunResults(label, (timeline(head, g, histogram=gap_histogram(g, edges)),)),
    )
    if base is None or g_base is None:
        return ReportResult(label, None, *own, parts=parts, notes=notes)
    b_label = str(base.root) if base_path is None else base_path
    compared = diff(base, head, base_label=b_label, head_label=label, base_gaps=g_base, head_gaps=g)
    return ReportResult(
        label,
        b_label,
        *own,
        diff=diff_runs(compared),
        base_gaps=gaps_runs(
            [replace(g_base, engines=_below(base, base_device, g_base.chain))],
            b_label,
            warnings=[base.warnings],
        ),
        base_timeline=RunResults(
            b_label, (timeline(base, g_base, histogram=gap_histogram(g_base, edges)),)
        ),
        parts=parts,
        notes=notes,
    )


def report_of(
    label: str,
    g: GapsResult,
    o: OpsResult,
    draw: Callable[[GapsResult, dict[str, Any]], TimelineResult],
    parts: Mapping[str, RunResult],
    warnings: list[str],
) -> ReportResult:
    """Return the report of one run, without a base or device-profile exports, from its
    results made elsewhere (a multi-rank run a file at a time, batch/report.py): its gaps
    ``g``, its ops ``o``, what ``draw`` (given ``g`` and its gap histogram) gives of its
    timeline, its questions' ``parts`` by name and its ``warnings``: what ``report`` gives of
    the run read whole."""
    histogram = gap_histogram(g, histogram_edges([g]))
    return ReportResult(
        label,
        None,
        gaps_runs([g], label, warnings=[warnings]),
        RunResults(label, (o,), warnings=[warnings]),
        RunResults(label, (draw(g, histogram),)),
        parts={
            name: RunResults(label, (parts[name],))
            for name, part in registered_parts()
            if not part.device
        },
    )


def _parts(
    run: Profile, device: DeviceRun | None, device_note: str | None
) -> tuple[dict[str, RunResult], dict[str, str]]:
    """Return the questions' parts of ``run``'s report, computed as the registry says, by
    name, and why those of its device-profile exports are absent where they could not be
    read (``device_note``)."""
    found: dict[str, RunResult] = {}
    notes: dict[str, str] = {}
    for name, part in registered_parts():
        said(f"the report's {name}")
        if not part.device:
            found[name] = resolve(part.compute)(run)
        elif device is not None and device.profiles:
            found[name] = resolve(part.compute)(device)
        elif device_note:
            notes[name] = device_note
    return found, notes


def _below(
    run: Profile, device: DeviceRun | None, chain: pl.DataFrame | None
) -> pl.DataFrame | None:
    """The table below ``run``'s ops from its device profiles (``chain``: the run's chain
    table, as its gaps hold it), None without any."""
    return below_the_ops(run, engines(device), chain) if device and device.profiles else None


def counted_durations(g: GapsResult) -> pl.DataFrame:
    """The durations of every device gap of ``g``, per duration and cause: how many (``n``)
    and their idle (``idle``): what the histogram draws, whether ``g`` holds every device
    gap or only those a report lists (``Listed``, a run a rank at a time)."""
    stored = GapsResult.__dict__["device_gaps"].stored(g)
    if isinstance(stored, Listed) and stored.counts is not None:
        return stored.counts
    if "duration_ns" not in g.device_gaps.columns:  # a run without hardware lanes
        return pl.DataFrame(schema=COUNTED)
    return g.device_gaps.group_by("duration_ns", "cause").agg(
        n=pl.len(), idle=pl.col("idle_ns").sum()
    )


def histogram_edges(results: Sequence[GapsResult]) -> tuple[list[float], bool]:
    """Return the bin edges (ns) of the device gap durations of ``results`` (one x scale for
    a run and its base) and whether they are logarithmic: geometric bins where the durations
    span over 100×, else linear from 0."""
    found = [
        c["duration_ns"].cast(pl.Float64) for r in results if (c := counted_durations(r)).height
    ]
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
    ``log``, and per bin of each cause present the gaps' count (``counts``) and their idle
    time (``idle_ns``, each gap's ``idle_ns``: its duration less the exposed communication
    and copying alone in it). The plot draws the idle, so that the few long gaps that hold
    most of it show; the bins add up to the device gaps' idle. Made of the gaps' durations
    counted (``counted_durations``)."""
    bins, log = edges
    durations = counted_durations(g)
    counts: dict[str, list[int]] = {}
    idle: dict[str, list[int]] = {}
    if len(bins) > 1 and durations.height:
        n, lo, hi = len(bins) - 1, bins[0], bins[-1]
        d = pl.col("duration_ns").cast(pl.Float64)
        scaled = (d / lo).log() / math.log(hi / lo) if log else d / (hi or 1.0)
        found = (
            durations.select(
                "cause", "n", "idle", b=(scaled * n).floor().clip(0, n - 1).cast(pl.Int64)
            )
            .group_by("cause", "b")
            .agg(pl.col("n").sum().alias("len"), pl.col("idle").sum())
        )
        for cause in CAUSES:
            mine = found.filter(pl.col("cause") == cause)
            if mine.height:
                counts[cause], idle[cause] = [0] * n, [0] * n
                for b, k, ns in mine.select("b", "len", "idle").rows():
                    counts[cause][b], idle[cause][b] = int(k), int(ns)
    return {"edges_ns": bins, "log": log, "counts": counts, "idle_ns": idle}
