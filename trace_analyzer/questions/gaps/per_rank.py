"""The gaps of a run, a rank at a time (docs/distributed.md, "gaps a rank at a time").

What a rank's gaps need from the whole run is decided first, from each file's ``GapsFacts``
(``gaps_facts``: its hardware span, the samples of the two medians the causes read, its
executions' sources, its ProfilerSteps), into the run's ``Fixed`` (``fixed_of``: the window,
the launch latency, the median launch call, every file's steps). Each file is then measured
with it (``gaps_part``: its lanes' and devices' rows, its listed gaps, every device gap
tallied, what the hints ask of its events), and the parts are reduced (``combine_gaps``)
into the ``GapsResult`` of the run read whole: the rows concatenated, the quantiles made
again from them, the tallies added up. Every figure is the run read whole's, the event ids
the gap rows name too: a file's ids are its own numbering, made the run's by ``Renumber``
from how many events of each other file sort before each event named (``tie_counts``, a
third pass).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import polars as pl

from trace_analyzer.analyses.busy import Window, step_numbers, steps_said
from trace_analyzer.analyses.passes import Passes, Streamed
from trace_analyzer.analyses.results import Listed
from trace_analyzer.analyses.states import step_end
from trace_analyzer.errors import UsageError
from trace_analyzer.loading.by_file import lane_prefixes, lane_spans
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import gather_each, matching, text
from trace_analyzer.questions.gaps.analysis import Fixed, GapsResult, _gaps
from trace_analyzer.questions.gaps.causes import LATENCY_NS, STEP, by_op, by_step, hardware
from trace_analyzer.questions.gaps.evidence import launch_calls
from trace_analyzer.questions.gaps.hints import REPLAYS, TRAINING, hints
from trace_analyzer.questions.gaps.kept import Keep, durations_of, kept
from trace_analyzer.questions.gaps.summary import run_summary
from trace_analyzer.questions.gaps.tally import NONE, Tally, merged, sorted_steps, steps_of
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
    ``delays`` and the times of the ``calls`` that launch them (``_counts``: the medians); its
    ``lanes``' spans and its files' ``formats`` (``shared``); its ProfilerSteps
    (``tally.steps_of``: every file's gaps are placed in the run's)."""

    hw: tuple[int, int] | None
    matched: bool
    sources: dict[str, int] = field(default_factory=dict)
    delays: pl.DataFrame = field(default_factory=pl.DataFrame)
    calls: pl.DataFrame = field(default_factory=pl.DataFrame)
    lanes: pl.DataFrame = field(default_factory=pl.DataFrame)
    formats: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    steps: pl.DataFrame = field(default_factory=pl.DataFrame)


def _hardware(profile: Profile, lanes: str | None) -> pl.DataFrame:
    """The hardware executions of ``profile`` as ``_gaps`` takes them (``--lane``'s only)."""
    hw = profile.events.filter(pl.col("lane_kind") == "hardware")
    if lanes:
        hw = hw.filter(text("lane").str.contains(glob_regex(lanes)))
    return hw


@dataclass(frozen=True)
class WindowFacts:
    """What one file tells of the window of ``--step`` or ``--window``: that step's rows on
    the host (``host``: first start, last end) and anywhere (``any``), the end of the work
    it launched (``end``, ``states.step_end``), the file's step numbers and its first event."""

    host: tuple[int, int] | None
    any: tuple[int, int] | None
    end: int | None
    steps: list[int]
    first: int | None


def window_facts(profile: Profile, step: int | None) -> WindowFacts:
    """Return the ``WindowFacts`` of ``profile`` (one file of a run) for ProfilerStep#``step``
    (None: ``--window``, its first event alone)."""
    events = profile.events
    first = events["start_ns"].min()
    start = None if first is None else int(first)  # type: ignore[arg-type]
    if step is None:
        return WindowFacts(None, None, None, [], start)
    rows = events.filter(pl.col("name") == f"ProfilerStep#{step}")
    host = rows.filter(pl.col("source") == "framework")  # not a GPU's copy of it

    def span(found: pl.DataFrame) -> tuple[int, int] | None:
        lo, hi = found.select(pl.col("start_ns").min(), pl.col("end_ns").max()).row(0)
        return None if lo is None else (int(lo), int(hi))

    end = step_end(events, profile.edges, step) if rows.height else None
    return WindowFacts(span(host), span(rows), end, step_numbers(events), start)


def window_from(facts: list[WindowFacts], step: int | None, span: tuple[int, int] | None) -> Window:
    """The window of ``--step`` or ``--window`` over every file of a run, as ``window_of``
    and ``_gaps`` make it of the run read whole (the same errors)."""
    if step is None:
        assert span is not None
        origin = min(f.first for f in facts if f.first is not None)
        if span[1] <= span[0]:
            raise UsageError("{param} START:END needs START < END", param="span")
        return Window(origin + span[0], origin + span[1], "--window")
    rows = [f.host for f in facts if f.host] or [f.any for f in facts if f.any]
    if not rows:
        held = sorted({n for f in facts for n in f.steps})
        raise UsageError(
            f"no ProfilerStep#{step} in this profile; {steps_said(held)}", param="step"
        )
    w = Window(min(r[0] for r in rows), max(r[1] for r in rows), f"ProfilerStep#{step}")
    end = max((f.end for f in facts if f.end is not None), default=None)
    return w if end is None or end <= w.end_ns else Window(w.start_ns, end, w.origin)


def gaps_facts(
    profile: Profile, lanes: str | None = None, window: Window | None = None
) -> GapsFacts:
    """Return the ``GapsFacts`` of ``profile`` (one file of a run); ``window``: the run's, where
    ``--step`` or ``--window`` gave one (``window_from``)."""
    every = profile.events.filter(pl.col("lane_kind") == "hardware")
    span = every.select(pl.col("start_ns").min(), pl.col("end_ns").max()).row(0)
    hw = _hardware(profile, lanes)
    spans = lane_spans(profile.events)
    formats = {str(r.source.path): (r.format, r.rank) for r in profile.reads if r.read}
    steps = steps_of(profile.events, STEP)
    if hw.is_empty():
        found_span = None if span[0] is None else span
        return GapsFacts(found_span, False, lanes=spans, formats=formats, steps=steps)
    own = Window(int(hw["start_ns"].min()), int(hw["end_ns"].max()), "")  # type: ignore[arg-type]
    found = hardware(hw, hw.clear(), window or own)  # all of them: the run's span holds this
    sources = hw.group_by(s=text("source")).agg(n=pl.len())
    return GapsFacts(
        span,
        True,
        dict(sources.iter_rows()),
        _counts(queued(found.clipped, profile.events, profile.edges)),
        _counts(launch_calls(profile.events, profile.edges, True)),
        spans,
        formats,
        steps,
    )


def shared(facts: list[GapsFacts]) -> bool:
    """Whether files of the run share process and device numbers at the same time, so that
    the run read whole tells them apart (``by_file.lane_prefixes``): their gap rows would name
    the lanes otherwise, so such a run is read whole."""
    formats = {f: v for x in facts for f, v in x.formats.items()}
    spans = [x.lanes for x in facts if x.lanes.height]
    if len(formats) < 2 or not spans:
        return False
    return bool(lane_prefixes(pl.concat(spans, how="vertical_relaxed"), formats, str, []))


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


def fixed_of(
    facts: list[GapsFacts], latency_ns: int | None, window: Window | None = None
) -> RunFacts | None:
    """Return what every part is measured with: the run's hardware span (or ``window``, where
    ``--step`` or ``--window`` gave one), the launch latency
    (``latency_ns``, else measured over every file's queued starts as ``waits.launch_latency``
    measures it, ``LATENCY_NS`` on Neuron) and the median launch call; None when no file has
    a hardware lane ``--lane`` matches (the run is then read whole, as its errors and its host
    figures are the whole run's)."""
    spans = [f.hw for f in facts if f.hw is not None]
    if not spans or not any(f.matched for f in facts):
        return None
    if window is None:
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
    steps = sorted_steps(pl.concat([f.steps for f in facts if f.steps.width]))
    return RunFacts(Fixed(window, latency_ns, (typical,), steps), neuron, vendor)


@dataclass(frozen=True, repr=False)
class GapsPart:
    """One file's gaps measured with the run's ``Fixed``: its ``lanes`` and ``devices`` rows,
    its listed ``gaps`` and ``device_gaps`` (worded), ``every`` device gap tallied in the
    run's steps (what the ops', steps' and summary's sums and the hints read: ``tally``), how
    many ``events`` it has, and ``marks``: whether it records Python frames, framework ops,
    a backward pass, a graph replayed (``hints.run_hints``); ``refs``: the events its gap
    rows name (``id``, ``start_ns``, ``end_ns``: what ``Renumber`` reads). Kept for a report
    (``Keep``): ``counted``, how many rows its two tables had, and ``durations``, every device
    gap's duration counted per duration and cause (``n``, ``idle``)."""

    events: int
    lanes: pl.DataFrame
    devices: pl.DataFrame
    gaps: pl.DataFrame
    device_gaps: pl.DataFrame
    every: Tally
    marks: tuple[bool, bool, bool, bool]
    refs: pl.DataFrame = field(default_factory=pl.DataFrame)
    counted: tuple[int, int] | None = None
    durations: pl.DataFrame | None = None

    def __repr__(self) -> str:
        return f"GapsPart({self.events} events, {self.device_gaps.height} device gaps)"


def gaps_part(
    profile: Profile,
    fixed: Fixed,
    *,
    min_gap_ns: int = 0,
    lanes: str | None = None,
    keep: Keep | None = None,
) -> GapsPart:
    """Return the ``GapsPart`` of ``profile`` (one file of a run) measured with ``fixed``;
    with ``keep``, its rows a report draws only (``Keep``)."""
    events = profile.events
    names = events["name"]
    marks = (
        bool((events["category"] == "python_function").any()),
        bool((events["lane_kind"] == "framework_op").any()),
        bool(events.select(matching(names, TRAINING).any()).item()),
        bool(events.select(matching(names, REPLAYS).any()).item()),
    )
    none = pl.DataFrame()
    if _hardware(profile, lanes).is_empty():
        return GapsPart(events.height, none, none, none, none, NONE, marks)
    every: list[Tally] = []
    r = _gaps(profile, None, None, min_gap_ns, lanes, None, fixed, every)
    gaps, device_gaps, counted, durations = r.gaps, r.device_gaps, None, None
    if keep is not None:
        counted = (gaps.height, device_gaps.height)
        gaps, device_gaps, durations = kept(r, keep)
    named = pl.concat(
        [f.get_column(c) for f in (gaps, device_gaps) for c in ID_COLUMNS if c in f.columns]
    )
    ids = named.drop_nulls().unique().sort().cast(pl.Int64)
    refs = events.select("start_ns", "end_ns")[ids].with_columns(id=ids)  # an id is its row
    return GapsPart(
        events.height, r.lanes, r.devices, gaps, device_gaps, every[0], marks, refs,
        counted, durations,
    )  # fmt: skip


KEY = ("start_ns", "end_ns")  # the order the run read whole numbers its events in


def tie_counts(
    events: pl.DataFrame, queries: pl.DataFrame, key: tuple[str, ...] = KEY
) -> tuple[pl.Series, pl.DataFrame]:
    """For each of ``queries`` (distinct values of ``key``, in order; by default (start, end)
    pairs), how many of ``events`` (one file's, or any rows with ``key``: the critical path's
    nodes) sort before it (``lt``, one per query) and how many have its value (``eq``: the
    queries' rows ``q`` where some do, and how many)."""
    asked = queries.select(*key, q=pl.int_range(pl.len(), dtype=pl.Int64))
    mine = events.select(*key, q=pl.lit(None, pl.Int64))
    both = pl.concat([asked, mine]).sort(*key, "q", nulls_last=True)  # a query before its ties
    lt = both.select(pl.col("q").is_null().cum_sum().filter(pl.col("q").is_not_null()))
    same = mine.group_by(*key).agg(eq=pl.len().cast(pl.Int64))
    eq = asked.join(same, on=list(key)).select("q", "eq")
    return lt.to_series().cast(pl.Int64), eq


class Renumber:
    """The run's event ids of the events the parts' gap rows name. The run read whole numbers
    its files' events in one stable sort by (start, end), the files in order
    (``schema.numbered``); an event of file f that is f's ``id``-th is the run's
    ``id + (events of the other files before its times) + (those of files before f at its
    times)``, of which ``id`` counts f's own before it: ``add`` takes each file's
    ``tie_counts`` in any order. ``refs``: per file (in the run's order), the events its
    rows name (``id``, ``start_ns``, ``end_ns``; an empty frame where none), as ``GapsPart``
    has them. ``key``: the order the run numbers its rows in, where they are not its events
    (the critical path's nodes: ``critical.per_file.NODE_KEY``), the files in order at
    equal keys and each file's rows in its own order (its ``id``)."""

    def __init__(self, refs_of: list[pl.DataFrame], key: tuple[str, ...] = KEY) -> None:
        held = [r.with_columns(file=pl.lit(i)) for i, r in enumerate(refs_of) if r.height]
        refs = pl.concat(held) if held else pl.DataFrame(schema={"id": pl.Int64, "file": pl.Int32})
        self.queries = refs.select(*key).unique().sort(*key) if held else pl.DataFrame()
        keyed = self.queries.with_row_index("q")
        self.refs = (
            refs.join(keyed, on=list(key)).select(
                "file", "id", pl.col("q").cast(pl.Int64), base="id"
            )
            if held
            else refs
        )
        self.total = pl.zeros(self.queries.height, pl.Int64, eager=True)

    def add(self, file: int, lt: pl.Series, eq: pl.DataFrame) -> None:
        """Count file ``file``'s ``tie_counts``."""
        at = self.refs["q"]
        ties = pl.zeros(lt.len(), pl.Int64, eager=True).scatter(eq["q"], eq["eq"])
        self.total += lt
        whose = pl.col("file")
        self.refs = self.refs.with_columns(
            pl.col("base")
            - pl.when(whose == file).then(lt.gather(at)).otherwise(0)
            + pl.when(whose > file).then(ties.gather(at)).otherwise(0)
        )

    def renamed(
        self, frame: pl.DataFrame, file: int, columns: tuple[str, ...] = ID_COLUMNS
    ) -> pl.DataFrame:
        """``frame`` (file ``file``'s rows) with each event id (its ``columns``) the run's."""
        mine = self.refs.filter(pl.col("file") == file)
        new = mine["base"] + self.total.gather(mine["q"])
        return frame.with_columns(
            pl.col(c).replace_strict(mine["id"], new, default=None, return_dtype=pl.Int64)
            for c in columns
            if c in frame.columns
        )


def _joined(parts: list[GapsPart], name: str, by: str, ids: Renumber | None = None) -> pl.DataFrame:
    """The parts' rows of their table ``name`` together, sorted as the run read whole sorts
    them, their event ids the run's (``ids``). Each part's table is taken out of it (the
    parts in the list are replaced), so that a table's rows are held twice at most while it
    is sorted, never every table's."""
    frames = []
    for i, p in enumerate(parts):
        frame = getattr(p, name)
        parts[i] = replace(p, **{name: pl.DataFrame()})  # type: ignore[arg-type]
        if frame is not None and frame.width:
            frames.append(frame if ids is None else ids.renamed(frame, i))
        del frame, p
    if not frames:
        return pl.DataFrame()
    out = pl.concat(frames, how="vertical_relaxed", rechunk=False)
    del frames
    if by == "lane_table":
        return out
    order = out.select(pl.arg_sort_by("start_ns", by)).to_series()
    columns = {}
    for column in out.columns:  # each taken out, so that it is let go once gathered
        columns[column] = out.get_column(column)
        out = out.drop(column)
    return pl.DataFrame(list(gather_each(columns, order).values()))


def combine_gaps(parts: list[GapsPart], run: RunFacts, ids: Renumber, *, root: str) -> GapsResult:
    """Return the gaps of the run ``root`` from its files' ``parts``, each measured with
    ``run.fixed`` (``gaps_part``), their ids counted by ``ids``: the ``GapsResult`` of the run
    read whole. The parts' tables are taken out of them (``_joined``)."""
    lanes = _joined(parts, "lanes", "lane_table").sort("lane")
    devices = _joined(parts, "devices", "lane_table").sort("device")
    gaps = _joined(parts, "gaps", "lane", ids)
    device_gaps = _joined(parts, "device_gaps", "device", ids)
    every = merged([p.every for p in parts])
    frames, ops, training, replays = (any(m) for m in zip(*(p.marks for p in parts), strict=True))
    inference = ops and not training and not replays
    fixed = run.fixed
    durations = None
    counted = [p.counted for p in parts if p.counted is not None]
    if counted:  # kept for a report: the rows it draws, and how many there were
        counts = durations_of([p.durations for p in parts if p.durations is not None])
        durations = counts.group_by("duration_ns").agg(pl.col("n").sum())
        gaps = Listed(gaps, sum(c[0] for c in counted))  # type: ignore[assignment]
        device_gaps = Listed(device_gaps, sum(c[1] for c in counted), counts)  # type: ignore[assignment]
    return GapsResult(
        window=fixed.window,
        lanes=lanes,
        devices=devices,
        gaps=gaps,
        device_gaps=device_gaps,
        ops=by_op(every),
        steps=by_step(every),
        summary=run_summary(
            devices, device_gaps, every, (lanes.height, fixed.latency_ns), durations
        ),
        root=root,
        hints=tuple(
            hints(every, run.neuron, frames=frames, vendor=run.vendor, inference=inference)
        ),
    )


@dataclass(frozen=True)
class GapsOptions:
    """What the gaps of a run a rank at a time are measured with: ``--lane``, ``--step``,
    ``--window`` (``span``), ``--min-gap``, ``--latency``; ``top``: for a report, only the
    rows it lists kept (``Keep``: these longest; the timeline reads its lanes' gaps where the
    files are, timeline_parts.py)."""

    lanes: str | None = None
    step: int | None = None
    span: tuple[int, int] | None = None
    min_gap_ns: int = 0
    latency_ns: int | None = None
    top: int | None = None


def _lanes_and_longest(parts: list[GapsPart]) -> dict[str, pl.DataFrame]:
    """The run's ``lanes`` rows and the device gaps its parts hold (``device_gaps``), as
    ``combine_gaps`` orders them (their event ids still the files')."""
    lanes = [p.lanes for p in parts if p.lanes.width]
    held = [p.device_gaps for p in parts if p.device_gaps.width]
    device_gaps = pl.concat(held, how="vertical_relaxed") if held else pl.DataFrame()
    if held:
        device_gaps = device_gaps.sort("start_ns", "device", maintain_order=True)
    return {
        "lanes": pl.concat(lanes, how="vertical_relaxed").sort("lane") if lanes else pl.DataFrame(),
        "device_gaps": device_gaps,
    }


def counts_of(profile: Profile, queries: pl.DataFrame) -> tuple[pl.Series, pl.DataFrame]:
    """One file's ``tie_counts`` of ``queries``: the pass ``Renumber`` is counted from."""
    return tie_counts(profile.events, queries)


def gaps_passes(
    how: GapsOptions, root: str, board: dict[str, Any] | None = None
) -> Passes[GapsResult | None]:
    """The gaps of the run ``root`` a file at a time (analyses/passes.py; module doc): with
    ``--step`` or ``--window`` the run's window first (``window_facts``), then each file's
    ``GapsFacts``, its ``GapsPart`` measured with the run's ``Fixed``, and its ``tie_counts``
    (taken as they come); None where the run is to be read whole (no file holds the ranks
    --rank names, files share process numbers, no hardware lane ``--lane`` matches).
    ``board``: where the parts' round tells the report's timeline (``timeline_parts``, run in
    step after it) the run's ``fixed``, its ``lanes`` rows and its longest ``device_gaps``."""
    window = None
    if how.step is not None or how.span is not None:
        told = yield partial(window_facts, step=how.step)
        if not told:
            return None
        window = window_from(told, how.step, how.span)
    facts = yield partial(gaps_facts, lanes=how.lanes, window=window)
    run_facts = None if shared(facts) else fixed_of(facts, how.latency_ns, window)
    if run_facts is None:
        return None
    keep = None if how.top is None else Keep(how.top)
    parts = yield partial(
        gaps_part, fixed=run_facts.fixed, min_gap_ns=how.min_gap_ns, lanes=how.lanes, keep=keep
    )
    if board is not None:
        board.update(fixed=run_facts.fixed, **_lanes_and_longest(parts))
    ids = Renumber([p.refs for p in parts])
    if ids.queries.height:
        yield Streamed(partial(counts_of, queries=ids.queries), lambda i, c: ids.add(i, *c))
    return combine_gaps(parts, run_facts, ids, root=root)
