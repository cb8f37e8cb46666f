"""The gaps of a run, a rank at a time (docs/distributed.md, "gaps a rank at a time").

What a rank's gaps need from the whole run is decided first, from each file's ``GapsFacts``
(``gaps_facts``: its hardware span, the samples of the two medians the causes read, its
executions' sources), into the run's ``Fixed`` (``fixed_of``: the window, the launch latency,
the median launch call). Each file is then measured with it (``gaps_part``: its lanes' and
devices' rows, its gaps, every device gap, its ProfilerStep rows and what the hints ask of
its events), and the parts are reduced (``combine_gaps``) into the ``GapsResult`` of the run
read whole: the rows concatenated, the sums, the quantiles and the hints made again from the
concatenated device gaps. Every figure is the run read whole's; the event ids are not (each
file's numbering, offset by the events of the files before it: ``combine_gaps``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from trace_analyzer.analyses.busy import Window
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import matching, text
from trace_analyzer.questions.gaps.analysis import Fixed, GapsResult, _gaps
from trace_analyzer.questions.gaps.causes import LATENCY_NS, STEP, by_op, by_step, hardware
from trace_analyzer.questions.gaps.evidence import launch_calls
from trace_analyzer.questions.gaps.hints import REPLAYS, TRAINING, hints
from trace_analyzer.questions.gaps.summary import run_summary
from trace_analyzer.questions.gaps.waits import QUEUED_LEAST, queued
from trace_analyzer.units import glob_regex

# the columns of a gap row that are an event's id (its row in the events table read whole;
# comm_event, transfer_event and sync_event are names)
ID_COLUMNS = ("prev_event", "next_event", "next_op_event", "launch_event")


def _counts(values: pl.Series) -> pl.DataFrame:
    """A sample as its distinct values and how often each comes: what travels for a median."""
    return values.to_frame("value").group_by("value").agg(n=pl.len())


@dataclass(frozen=True)
class GapsFacts:
    """What one file tells the run before any part is measured: its ``hw`` span (every
    hardware lane: the window), whether a hardware lane matches ``--lane`` (``matched``),
    the ``sources`` of those executions (their count: the vendor, Neuron), their queued
    ``delays`` and the times of the ``calls`` that launch them (``_counts``: the medians)."""

    hw: tuple[int, int] | None
    matched: bool
    sources: dict[str, int] = field(default_factory=dict)
    delays: pl.DataFrame = field(default_factory=pl.DataFrame)
    calls: pl.DataFrame = field(default_factory=pl.DataFrame)


def _hardware(profile: Profile, lanes: str | None) -> pl.DataFrame:
    """The hardware executions of ``profile`` as ``_gaps`` takes them (``--lane``'s only)."""
    hw = profile.events.filter(pl.col("lane_kind") == "hardware")
    if lanes:
        hw = hw.filter(text("lane").str.contains(glob_regex(lanes)))
    return hw


def gaps_facts(profile: Profile, lanes: str | None = None) -> GapsFacts:
    """Return the ``GapsFacts`` of ``profile`` (one file of a run)."""
    every = profile.events.filter(pl.col("lane_kind") == "hardware")
    span = every.select(pl.col("start_ns").min(), pl.col("end_ns").max()).row(0)
    hw = _hardware(profile, lanes)
    if hw.is_empty():
        return GapsFacts(None if span[0] is None else span, False)
    own = Window(int(hw["start_ns"].min()), int(hw["end_ns"].max()), "")  # type: ignore[arg-type]
    found = hardware(hw, hw.clear(), own)  # all of them: the run's window holds this span
    sources = hw.group_by(s=text("source")).agg(n=pl.len())
    return GapsFacts(
        span,
        True,
        dict(sources.iter_rows()),
        _counts(queued(found.clipped, profile.events, profile.edges)),
        _counts(launch_calls(profile.events, profile.edges, True)),
    )


def _median(counts: list[pl.DataFrame]) -> tuple[float | None, int]:
    """The median of the samples ``counts`` hold together (polars' ``median``: the mean of the
    two middle values), and how many they are."""
    held = [c for c in counts if c.height]
    if not held:
        return None, 0
    c = pl.concat(held).group_by("value").agg(pl.col("n").sum()).sort("value")
    total = int(c["n"].sum())
    cum = c["n"].cum_sum()
    lo, hi = (c["value"][int((cum > i).arg_max())] for i in ((total - 1) // 2, total // 2))  # type: ignore[arg-type]
    return (lo + hi) / 2, total


@dataclass(frozen=True)
class RunFacts:
    """The run's ``Fixed`` and what its hints read of the executions: ``neuron``, ``vendor``."""

    fixed: Fixed
    neuron: bool
    vendor: str


def fixed_of(facts: list[GapsFacts], latency_ns: int | None) -> RunFacts | None:
    """Return what every part is measured with: the run's hardware span, the launch latency
    (``latency_ns``, else measured over every file's queued starts as ``waits.launch_latency``
    measures it, ``LATENCY_NS`` on Neuron) and the median launch call; None when no file has
    a hardware lane ``--lane`` matches (the run is then read whole, as its errors and its host
    figures are the whole run's)."""
    spans = [f.hw for f in facts if f.hw is not None]
    if not spans or not any(f.matched for f in facts):
        return None
    window = Window(min(s[0] for s in spans), max(s[1] for s in spans), "hardware span")
    sources: dict[str, int] = {}
    for f in facts:
        for s, n in f.sources.items():
            sources[s] = sources.get(s, 0) + n
    top = max(sources.values())
    vendor = min(s for s, n in sources.items() if n == top)
    neuron = "neuron_hw" in sources
    typical, _ = _median([f.calls for f in facts])
    if latency_ns is None:
        median, n = _median([f.delays for f in facts])
        latency_ns = LATENCY_NS
        if not neuron and n >= QUEUED_LEAST and median is not None:
            latency_ns = max(LATENCY_NS, round(1.5 * median))
    return RunFacts(Fixed(window, latency_ns, (typical,)), neuron, vendor)


@dataclass(frozen=True, repr=False)
class GapsPart:
    """One file's gaps measured with the run's ``Fixed``: its ``lanes`` and ``devices`` rows,
    its listed ``gaps`` and ``device_gaps`` (worded), ``every`` device gap (what the sums,
    the steps and the hints read), its ProfilerStep rows (``steps``), how many ``events`` it
    has, and ``marks``: whether it records Python frames, framework ops, a backward pass, a
    graph replayed (``hints.run_hints``)."""

    events: int
    lanes: pl.DataFrame
    devices: pl.DataFrame
    gaps: pl.DataFrame
    device_gaps: pl.DataFrame
    every: pl.DataFrame
    steps: pl.DataFrame
    marks: tuple[bool, bool, bool, bool]

    def __repr__(self) -> str:
        return f"GapsPart({self.events} events, {self.device_gaps.height} device gaps)"


def gaps_part(
    profile: Profile, fixed: Fixed, *, min_gap_ns: int = 0, lanes: str | None = None
) -> GapsPart:
    """Return the ``GapsPart`` of ``profile`` (one file of a run) measured with ``fixed``."""
    events = profile.events
    names = events["name"]
    marks = (
        bool((events["category"] == "python_function").any()),
        bool((events["lane_kind"] == "framework_op").any()),
        bool(events.select(matching(names, TRAINING).any()).item()),
        bool(events.select(matching(names, REPLAYS).any()).item()),
    )
    steps = events.filter(matching(names, STEP)).select(text("name"), "start_ns", "end_ns")
    none = pl.DataFrame()
    if _hardware(profile, lanes).is_empty():
        return GapsPart(events.height, none, none, none, none, none, steps, marks)
    every: list[pl.DataFrame] = []
    r = _gaps(profile, None, None, min_gap_ns, lanes, None, fixed, every)
    return GapsPart(
        events.height, r.lanes, r.devices, r.gaps, r.device_gaps, every[0], steps, marks
    )


def _joined(frames: list[pl.DataFrame], by: str, offsets: list[int]) -> pl.DataFrame:
    """The parts' rows of one table together, sorted as the run read whole sorts them, their
    event ids offset by the events of the files before theirs."""
    held = [
        f.with_columns(pl.col(c) + o for c in ID_COLUMNS if c in f.columns)
        for f, o in zip(frames, offsets, strict=True)
        if f.width
    ]
    if not held:
        return pl.DataFrame()
    out = pl.concat(held, how="vertical_relaxed")
    return out.sort("start_ns", by) if by != "lane_table" else out


def combine_gaps(parts: list[GapsPart], run: RunFacts, *, root: str) -> GapsResult:
    """Return the gaps of the run ``root`` from its files' ``parts``, each measured with
    ``run.fixed`` (``gaps_part``): the ``GapsResult`` of the run read whole."""
    offsets = [0]
    for p in parts[:-1]:
        offsets.append(offsets[-1] + p.events)
    lanes = _joined([p.lanes for p in parts], "lane_table", offsets).sort("lane")
    devices = _joined([p.devices for p in parts], "lane_table", offsets).sort("device")
    device_gaps = _joined([p.device_gaps for p in parts], "device", offsets)
    every = _joined([p.every for p in parts], "device", offsets)
    steps = pl.concat([p.steps for p in parts], how="vertical_relaxed")
    frames, ops, training, replays = (any(m) for m in zip(*(p.marks for p in parts), strict=True))
    inference = ops and not training and not replays
    fixed = run.fixed
    return GapsResult(
        window=fixed.window,
        lanes=lanes,
        devices=devices,
        gaps=_joined([p.gaps for p in parts], "lane", offsets),
        device_gaps=device_gaps,
        ops=by_op(every),
        steps=by_step(every, steps),
        summary=run_summary(devices, device_gaps, every, (lanes.height, fixed.latency_ns)),
        root=root,
        hints=tuple(
            hints(every, run.neuron, frames=frames, vendor=run.vendor, inference=inference)
        ),
    )
