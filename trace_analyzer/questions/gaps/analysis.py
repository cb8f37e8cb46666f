"""Idle gaps on the hardware lanes, each attributed to the op that ended it and to a cause.

The arithmetic (window, busy intervals merged per lane and device, gap statistics) is in
``busy.py``, the device's states in ``states.py``; the attribution and ``cause()`` in
``causes.py``; this module puts them together into ``GapsResult``; ``gate.py`` evaluates
``--fail-on`` conditions (docs/gaps.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

import polars as pl

from trace_analyzer.analyses.absent import why_none
from trace_analyzer.analyses.busy import (
    Window,
    between,
    device_of,
    merge,
    once_each,
    stats,
    window_of,
)
from trace_analyzer.analyses.results import Later, RunResult, RunResults, frame_repr
from trace_analyzer.analyses.rows import Rows
from trace_analyzer.analyses.states import (
    RESOLUTION_NS,
    STATE_COLUMNS,
    alone,
    device_states,
    step_end,
    within,
)
from trace_analyzer.errors import UsageError
from trace_analyzer.loading.link import link
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.device import DeviceRun
from trace_analyzer.model.schema import text
from trace_analyzer.progress import step as said
from trace_analyzer.questions.chain.analysis import chain_table
from trace_analyzer.questions.engines.below import with_engines
from trace_analyzer.questions.gaps.causes import (
    CAUSES,
    LATENCY_NS,
    STEP,
    UNLINKED,
    Hardware,
    attribute,
    by_op,
    by_step,
    hardware,
    idle_in_loader,
    lanes_are_devices,
)
from trace_analyzer.questions.gaps.evidence import Typical
from trace_analyzer.questions.gaps.gate import METRICS, gate, metrics
from trace_analyzer.questions.gaps.hints import run_hints
from trace_analyzer.questions.gaps.host_summary import HostRun, host_run
from trace_analyzer.questions.gaps.summary import NO_WINDOW, TOTALS, run_summary
from trace_analyzer.questions.gaps.tally import NONE, Tally, steps_of, tally
from trace_analyzer.questions.gaps.waits import launch_latency
from trace_analyzer.questions.gaps.words import Worded, sentence
from trace_analyzer.units import glob_regex

__all__ = [
    "CAUSES", "FRAMES", "METRICS", "UNLINKED", "GapsResult", "Window", "between", "device_of",
    "gaps", "gaps_runs", "gate", "merge", "metrics", "stats", "window_of",
]  # fmt: skip

# --min-gap, --latency (ns) and the run's median launch call where given (``evidence.launches``)
Limits = tuple[int, int, Typical]
FRAMES = ("lanes", "devices", "gaps", "device_gaps", "ops", "steps")


@dataclass(frozen=True, repr=False, kw_only=True)  # kw_only: a required field after `gaps`
class GapsResult(RunResult):
    """The gaps of one run.

    ``window``: what was measured (None when nothing ran on hardware). ``lanes`` and ``devices``:
    busy, idle, leading and trailing idle, idle %, executions and gap statistics per hardware lane
    and per device. ``gaps``: every gap per lane, attributed (the executions around it, the next op,
    its cause and evidence; made when first read where the lanes are not the devices: ``Later``,
    and passed on unmade by ``gate``); ``device_gaps``: the same per device (all its lanes
    idle). ``ops``: the idle before each op, in all and by cause. ``summary``: the totals over
    devices, what ``--fail-on`` and diff read. ``chain``: the chains the gaps were attributed with
    (``questions.chain.analysis.chain_table``). ``root``: the run. ``failed``: the ``--fail-on``
    conditions that held (``gate``); ``gate_notes``: a gate that compared nothing and
    was allowed to pass. ``engines``: where the run has device-profile exports, per op
    and NEFF the NEFF's engines and roofline (``questions.engines.below``; ``gaps(device=...)`` sets
    it), else None. ``next_fix``: where asked for (``gaps --next``), the run's critical-path
    verdict (``critical.analysis.next_fix``). ``no_hardware``: why the run has no hardware lanes;
    ``host``: then its host's figures, step time and ops by self CPU (``host_summary``)."""

    window: Window | None
    lanes: pl.DataFrame
    devices: pl.DataFrame
    gaps: Later = Later()  # a pl.DataFrame when read; made then where not made yet
    device_gaps: Later = Later()  # the same; its evidence written then
    ops: pl.DataFrame
    summary: dict[str, Any]
    chain: pl.DataFrame | None = None
    steps: pl.DataFrame = field(default_factory=pl.DataFrame)
    root: str | None = None
    failed: tuple[str, ...] = ()
    gate_notes: tuple[str, ...] = ()  # a gate that compared nothing, allowed (gates.judge)
    hints: tuple[dict[str, Any], ...] = ()
    engines: pl.DataFrame | None = None  # per op and NEFF, its device profile (device_ops.py)
    next_fix: str | None = None  # with --next: the run's critical-path verdict
    no_hardware: str | None = None  # with no hardware lanes, why (analyses/absent.py)
    host: HostRun | None = None  # with no hardware lanes, the host's figures (host_summary.py)

    csv_table = "gaps"

    def to_json(self) -> dict[str, Any]:
        """Return one run's gaps as plain data: the JSON output's shape (docs/gaps.md)."""
        w = self.window
        return {
            "root": self.root,
            "window": None
            if w is None
            else {
                "start_ns": w.start_ns,
                "end_ns": w.end_ns,
                "duration_ns": w.duration_ns,
                "origin": w.origin,
            },
            "summary": self.summary,
            "devices": self.devices.to_dicts(),
            "lanes": self.lanes.to_dicts(),
            "gaps": Rows(self.gaps),
            "device_gaps": Rows(self.device_gaps),
            "ops": self.ops.to_dicts(),
            "steps": self.steps.to_dicts(),
            "hints": list(self.hints),
            "failed": list(self.failed),
            **({"gate_notes": list(self.gate_notes)} if self.gate_notes else {}),
            **({} if self.engines is None else {"engines": self.engines.to_dicts()}),
            **({} if self.next_fix is None else {"next_fix": self.next_fix}),
            **({} if self.no_hardware is None else {"no_hardware": self.no_hardware}),
            **({} if self.host is None else {"host": self.host.to_json()}),
        }

    def csv_rows(self, data: dict[str, Any]) -> list[Any]:
        """The gaps; a run without hardware lanes has none: its host's ops instead."""
        rows: list[Any] = data["host"]["ops"] if self.host is not None else data[self.csv_table]
        return rows

    def main_frame(self) -> pl.DataFrame:
        return self.gaps

    def picked(self, table: str, choose: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.DataFrame:
        """Return ``choose`` of the table ``table`` (``gaps``, ``device_gaps``; rows chosen by
        any column but ``evidence``), its evidence written for the rows chosen only where the
        table is not made yet (``Later.picked``): what a text report lists."""
        lazy: Later = type(self).__dict__[table]
        return lazy.picked(self, choose)

    def rows_in(self, table: str) -> int:
        """Return the rows of the table ``table`` (``gaps``, ``device_gaps``), not making it."""
        lazy: Later = type(self).__dict__[table]
        return lazy.height(self)

    def summary_rows(self) -> list[tuple[str, object]]:
        s = self.summary
        origin = self.window.origin if self.window else None
        return [("window", origin), *((k, v) for k, v in s.items() if k != "idle_by_cause_ns")] + [
            (f"idle from {c} (ns)", ns) for c, ns in s["idle_by_cause_ns"].items()
        ]

    def __repr__(self) -> str:
        return frame_repr(
            "GapsResult",
            run=self.root,
            idle_pct=self.summary["idle_pct"],
            gaps=self.gaps,
            devices=self.devices,
        )


def gaps(
    profile: Profile | pl.DataFrame,
    *,
    step: int | None = None,
    span: tuple[int, int] | None = None,
    min_gap_ns: int = 0,
    lanes: str | None = None,
    latency_ns: int | None = None,
    device: DeviceRun | None = None,
) -> GapsResult:
    """Return the idle gaps of one run.

    ``profile``: a loaded Profile, or its events table. ``step``: measure ProfilerStep#N
    only. ``span``: (start, end) in ns after the run's first event. ``min_gap_ns``: leave
    shorter gaps out of the gap lists and counts (their time stays idle). ``lanes``: a glob;
    only the hardware lanes it matches. Without step or span the window is the hardware span.
    ``latency_ns``: a queued execution starting within this of the previous end waited only
    for the launch latency (cause ``launch_latency``); None: measured from the run on GPUs
    (``waits.launch_latency``), ``LATENCY_NS`` on Neuron. ``device``: the run's device profiles
    (``ta.load_device(path)``): a Neuron run's result then holds, below its ops, the engines
    of each op's NEFF (``engines``), as ``traceana gaps`` shows them.
    """
    said("finding the gaps and their causes")
    result = _gaps(profile, step, span, min_gap_ns, lanes, latency_ns)
    if device is None or not isinstance(profile, Profile):
        return result
    return with_engines(result, profile, device, result.chain)


@dataclass(frozen=True)
class Fixed:
    """What one rank's part of a run is measured with, decided on the whole run first
    (``per_rank.py``): its ``window``, launch latency and median launch call (``typical``),
    and the ProfilerSteps of all its files (``tally.steps_of``: its gaps are placed in them)."""

    window: Window
    latency_ns: int
    typical: Typical
    steps: pl.DataFrame | None = None


def _gaps(
    profile: Profile | pl.DataFrame,
    step: int | None,
    span: tuple[int, int] | None,
    min_gap_ns: int,
    lanes: str | None,
    latency_ns: int | None,
    fixed: Fixed | None = None,
    every: list[Tally] | None = None,
) -> GapsResult:
    """``gaps``; with ``fixed``, measured with the whole run's window, latency and median
    launch call (one rank's part); ``every`` then gains every device gap (``--min-gap``'s
    shorter ones too) tallied, what the reduce adds up."""
    events = profile.events if isinstance(profile, Profile) else profile
    root = profile.name if isinstance(profile, Profile) else None
    columns = ("event_id", "lane", "lane_kind", "pid", "name", "category", "source")
    hw, copies = (  # the columns the gaps need, not the whole width (a copy of every execution)
        events.lazy().filter(rows).select(*columns, "start_ns", "end_ns").collect()
        for rows in (pl.col("lane_kind") == "hardware", _copies())
    )
    for name, value in (("min_gap_ns", min_gap_ns), ("latency_ns", latency_ns)):
        if value is not None and value < 0:
            raise UsageError("{param} must not be negative", param=name)
    if lanes:
        hw, copies = (t.filter(text("lane").str.contains(glob_regex(lanes))) for t in (hw, copies))
        if hw.is_empty():
            raise UsageError(f"no hardware lane matches {{param}} {lanes!r}", param="lanes")
    w = fixed.window if fixed else window_of(events, step=step, span=span)
    if w is None or hw.is_empty():
        if not hw.is_empty():
            return _empty(w, root)
        return _empty(w, root, why_none(profile), host_run(profile))
    edges = profile.edges if isinstance(profile, Profile) else link(events)
    if step is not None and fixed is None:  # to the end of the work the step launched
        end = step_end(events, edges, step)
        w = w if end is None or end <= w.end_ns else Window(w.start_ns, end, w.origin)
    keyed = profile.keyed if isinstance(profile, Profile) else events  # threads, files apart
    with ThreadPoolExecutor(max_workers=1) as worker:  # the chains made beside the busy time
        chain = worker.submit(chain_table, keyed, edges)
        held = [hardware(hw, copies, w)]
        del hw, copies  # the executions' columns: what the passes read is clipped (held)
        latency_ns = fixed.latency_ns if fixed else latency_ns
        if latency_ns is None:  # measured on GPUs; Neuron's dispatch has no call end
            found = held[0]
            latency_ns = (
                LATENCY_NS
                if found.neuron
                else launch_latency(found.clipped, events, edges, LATENCY_NS)
            )
        limits = (min_gap_ns, latency_ns, fixed.typical if fixed else None)
        steps = fixed.steps if fixed and fixed.steps is not None else steps_of(keyed, STEP)
        out = ([] if every is None else every), steps
        return _measure(keyed, held, w, (chain, edges), limits, root, out)


def _measure(
    events: pl.DataFrame,
    held: list[Hardware],
    w: Window,
    chains: tuple[Future[pl.DataFrame], pl.DataFrame],
    limits: Limits,
    root: str | None,
    every_out: tuple[list[Tally], pl.DataFrame],
) -> GapsResult:
    """Return the gaps of the executions in ``held`` (``causes.hardware``, a one-item list,
    emptied) in ``w`` (``chains``: the chains, a Future, and edges); ``every_out``'s list gains
    every device gap tallied in its steps. The busy time is measured beside the chains."""
    min_gap_ns, latency_ns, _ = limits
    clipped, keys, other, neuron, vendor = held.pop()  # clipped let go once read
    parts: dict[str, tuple[pl.DataFrame, pl.DataFrame, Worded | Callable[[], pl.DataFrame]]] = {}
    all_compute = bool(clipped.select(pl.col("kind").eq("compute").all()).item())
    same = lanes_are_devices(events, all_compute)  # then a device's gaps are its lane's
    merged, every, apart = pl.DataFrame(), pl.DataFrame(), pl.DataFrame()
    for key in ("lane", "device"):
        if key == "device" and same:  # the lanes' busy time and gaps, named by device
            merged, every = _as_devices(merged), _as_devices(every)
        else:  # the device pass reads the compute alone
            part = clipped if key == "lane" else clipped.filter(pl.col("kind") == "compute")
            if same:  # the device pass takes the lanes': clipped is read once
                clipped = clipped.clear()
            merged, every = _pass(key, [part])
            del part
            if key == "device" or same:  # the gaps the sums by cause and op read: now
                every = _attributed(every, key, events, _ready(chains), limits)
        if key == "device":  # what ran on the device while it computed nothing
            apart = alone(merged, other, "device") if other.height else apart
            every = idle_in_loader(within(every, apart, "device"), apart, events)
        kept = _long_enough(every, min_gap_ns)  # the lanes' bare gaps count as well
        # the listed gaps' evidence written when read: a text report words its rows only
        listed: Worded | Callable[[], pl.DataFrame] = Worded(kept, latency_ns)
        if key == "lane" and not same:  # the lanes' gaps attributed when first read
            listed = cache(partial(_lane_gaps, every, events, _ready(chains), limits))
        elif key == "device" and same:  # the lanes' sentences, written once for both
            shape = partial(_as_device_gaps, kept.select(*STATE_COLUMNS))
            listed = Worded(kept, latency_ns, source=(parts["lane"][2], shape))
        table = stats(merged, kept, keys.select(key).unique(), key, w)
        measured = (table, apart, merged, other, w)  # a device's states added to its row
        parts[key] = (device_states(*measured) if key == "device" else table, kept, listed)
    lanes_t = parts["lane"][0].join(keys, on="lane", how="left")
    (devices_t, device_gaps, listed_devices) = parts["device"]
    # Idle sums (per cause, per op) count every gap, as idle does; --min-gap trims lists only.
    every_out[0].append(tallied := tally(every, every_out[1]))
    return GapsResult(
        window=w,
        lanes=lanes_t,
        devices=devices_t,
        gaps=parts["lane"][2],
        device_gaps=listed_devices,
        ops=by_op(tallied),
        steps=by_step(tallied),
        summary=run_summary(devices_t, device_gaps, tallied, (lanes_t.height, latency_ns)),
        chain=_ready(chains)[0],
        root=root,
        hints=run_hints(tallied, events, neuron, vendor),
    )


def _ready(
    chains: tuple[Future[pl.DataFrame], pl.DataFrame],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return the chains, once made (waiting for them), and the edges."""
    return chains[0].result(), chains[1]


def _pass(key: str, held: list[pl.DataFrame]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return the busy intervals per ``key`` of the executions in ``held`` (a one-item list,
    emptied: core/schema.numbered) and the gaps between them (``between``)."""
    part = held.pop()
    merged = merge(part.select(key, "pid", "event_id", "start_ns", "end_ns"), key, RESOLUTION_NS)
    del part
    return merged, between(merged, key)


def _attributed(
    bare: pl.DataFrame,
    key: str,
    events: pl.DataFrame,
    links: tuple[pl.DataFrame, pl.DataFrame],
    limits: Limits,
) -> pl.DataFrame:
    """Return the gaps per ``key``, ``bare`` (``between``), with causes, sorted; their
    evidence is null until written (``Worded``)."""
    chain, edges = links
    found = attribute(bare, events, chain, edges, key, limits[1], limits[2])
    if key == "lane":  # a column, not a join: a join copies the whole table
        found = found.with_columns(device=once_each(found["lane"], device_of))
    every = found.sort("start_ns", key)
    del found  # no copy held beside the sorted one (5 million events: 250 MB)
    return every


def _lane_gaps(
    bare: pl.DataFrame,
    events: pl.DataFrame,
    links: tuple[pl.DataFrame, pl.DataFrame],
    limits: Limits,
) -> pl.DataFrame:
    """Return the lanes' gaps that are listed (``--min-gap``), attributed: ``GapsResult.gaps``
    where the lanes are not the devices, made when first read (``Later``)."""
    min_gap_ns, latency_ns, _ = limits
    listed = _long_enough(_attributed(bare, "lane", events, links, limits), min_gap_ns)
    return sentence(listed, latency_ns)


def _as_device_gaps(states: pl.DataFrame, lanes_gaps: pl.DataFrame) -> pl.DataFrame:
    """Return the lanes' gaps, worded, as the devices' (``lanes_are_devices``), with the
    devices' gaps' states (``states.within``: their rows in the same order)."""
    return _as_devices(lanes_gaps).with_columns(states)


def _copies() -> pl.Expr:
    """The device copies (``states.on_device``: not the host's copy calls)."""
    host = pl.col("source").is_in(["framework", "neuron_rt"])
    return (pl.col("lane_kind") == "transfer") & ~host


def _as_devices(lanes_table: pl.DataFrame) -> pl.DataFrame:
    """Return a lane pass's table (busy intervals, gaps) as the device pass lays out its own
    (``lanes_are_devices``): each lane named by its device."""
    named = (
        lanes_table
        if "device" in lanes_table.columns
        else lanes_table.with_columns(device=once_each(lanes_table["lane"], device_of))
    )
    return named.select(
        ("device" if c == "lane" else c) for c in lanes_table.columns if c != "device"
    )


def _long_enough(every: pl.DataFrame, min_gap_ns: int) -> pl.DataFrame:
    """Return the gaps that are listed: every gap counts in the idle sums, the ones at least
    --min-gap long are listed, and they are the same table when none is shorter."""
    long_enough = pl.col("duration_ns") >= max(min_gap_ns, 1)
    return every if every.select(long_enough.all()).item() else every.filter(long_enough)


def _empty(
    w: Window | None, root: str | None, why: str | None = None, host: HostRun | None = None
) -> GapsResult:
    none = pl.DataFrame()
    summary: dict[str, Any] = dict.fromkeys(TOTALS, 0)  # the window × 0 devices
    summary.update(dict.fromkeys(NO_WINDOW, None), idle_by_cause_ns=dict.fromkeys(CAUSES, 0))
    summary.update(devices=0, lanes=0, idle_in_data_loader_ns=None, latency_ns=None)
    return GapsResult(
        window=w,
        lanes=none,
        devices=none,
        gaps=none,
        device_gaps=none,
        ops=by_op(NONE),
        steps=by_step(NONE),
        summary=summary,
        root=root,
        no_hardware=why,
        host=host,
    )


def gaps_runs(
    results: list[GapsResult],
    path: str,
    *,
    min_gap_ns: int = 0,
    warnings: Sequence[Sequence[str]] | None = None,
) -> RunResults[GapsResult]:
    """Return what ``traceana gaps`` prints: every run's gaps, ``results``, under ``path``,
    with the ``min_gap_ns`` they were computed with and each run's ``warnings``."""
    return RunResults(
        str(path), tuple(results), header={"min_gap_ns": min_gap_ns}, warnings=warnings
    )
