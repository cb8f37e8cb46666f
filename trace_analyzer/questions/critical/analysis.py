"""What bounds each step, and what fixing it buys: `traceana critical` (docs/critical-path.md).

The run's dependency graph (graph.py) is replayed (replay.py): as recorded, it gives each
step's window back; the critical path of each step is walked through it; each what-if
(scenarios.py), found on the path or asked for, is replayed, and the fixes are ranked by
the mean step time they save.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import polars as pl

from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.analyses.rows import longest
from trace_analyzer.errors import UsageError
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import Text
from trace_analyzer.numbers import duration, percent
from trace_analyzer.progress import step as said
from trace_analyzer.questions.critical import scenarios as what
from trace_analyzer.questions.critical.graph import Graph, build
from trace_analyzer.questions.critical.link import OWN_CODES
from trace_analyzer.questions.critical.own import LABELS, UNTRACED, labelled, own_time
from trace_analyzer.questions.critical.replay import (
    KIND_CODES,
    Change,
    Times,
    replay,
    walk_all,
    windows,
)
from trace_analyzer.units import glob_regex

T = TypeVar("T")
R = TypeVar("R")
# A window's key (its step; None: the whole run) to its start, end and the node that ends it.
Spans = dict[int | None, tuple[int, int, int]]
# A first step is told apart from the rest only among this many steps (of two, the second is
# as likely the odd one: a profile's last step is often cut short).
WARMUP_STEPS = 3
# How many of each kind of fix found on the path are replayed.
CANDIDATES = 3
# The texts dictionary-encoded, as the events table keeps them: a path of every step of a
# large run holds hundreds of thousands of segments, most of a few names.
PATH_COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
    "step": pl.Int64, "order": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64,
    "duration_ns": pl.Int64, "kind": Text, "name": Text, "label": Text, "lane": Text,
    "pid": pl.Int64, "tid": pl.Int64, "event_id": pl.Int64, "node": pl.Int64,
}  # fmt: skip

# A fix's evidence: the longest segments of the recorded critical path it changes.
EVIDENCE = pl.List(pl.Struct({
    "step": pl.Int64, "kind": pl.String, "name": pl.String, "label": pl.String,
    "start_ns": pl.Int64, "duration_ns": pl.Int64, "event_id": pl.Int64,
}))  # fmt: skip


@dataclass(frozen=True)
class Asked:
    """The what-ifs asked for by hand (shell globs of names; None where not asked): ``fuse``
    the device work of the ops it names (× ``factor``), ``host`` the host time in the ops,
    frames and annotations it names, ``sync`` make the waiting calls it names asynchronous,
    ``copy`` remove the device copies it names."""

    fuse: str | None = None
    factor: float = 1.0
    host: str | None = None
    sync: str | None = None
    copy: str | None = None


@dataclass(frozen=True, repr=False)
class CriticalResult(RunResult):
    """The critical path of each window of one run and the fixes ranked by what they save.

    ``window``: the annotation regex the windows are (None: the ProfilerSteps, or the whole
    run where it has none). ``steps``: per window its recorded time, its replayed time as
    recorded (``replayed_ns``) and the replay's error. ``path``: the critical path's segments
    (``PATH_COLUMNS``), latest last. ``kinds``: per window and kind, the path's time and
    share. ``fixes``: per what-if, ranked by ``saved_ns`` (the mean step time saved): the
    fix, its assumption and its evidence (the path's segments it changes). ``notes``."""

    root: str
    window: str | None
    latency_ns: int
    steps: pl.DataFrame
    path: pl.DataFrame
    kinds: pl.DataFrame
    fixes: pl.DataFrame
    notes: tuple[str, ...] = ()

    csv_table = "path"

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "verdict": self.verdict,
            "window": self.window,
            "latency_ns": self.latency_ns,
            "fixes": self.fixes.to_dicts(),
            "steps": self.steps.to_dicts(),
            "kinds": self.kinds.to_dicts(),
            "path": self.path.to_dicts(),
            "notes": list(self.notes),
        }

    def main_frame(self) -> pl.DataFrame:
        return self.path

    @property
    def step_ns(self) -> float | None:
        """The mean window (step) time, ns."""
        return None if not self.steps.height else float(self.steps["window_ns"].mean())  # type: ignore[arg-type]

    @property
    def verdict(self) -> str:
        """The sentence every output opens with: the fix that saves the most per step."""
        return verdict(self.fixes.to_dicts(), self.steps.height, self.window is not None or (
            self.steps.height > 0 and self.steps["step"].null_count() > 0))  # fmt: skip

    def summary_rows(self) -> list[tuple[str, object]]:
        top = self.fixes.head(1).to_dicts()
        return [
            ("run", self.root),
            ("windows", self.steps.height),
            ("mean window (ns)", self.step_ns),
            ("top fix", top[0]["fix"] if top else None),
            ("top fix saves (ns)", top[0]["saved_ns"] if top else None),
        ]

    def __repr__(self) -> str:
        return frame_repr("CriticalResult", run=self.root, path=self.path, fixes=self.fixes)


def verdict(fixes: list[dict[str, Any]], windows: int, not_steps: bool) -> str:
    """The sentence a pull request comment opens with, from the ranked ``fixes`` (their
    rows): the fix that saves the most, per step (per window where the ``windows`` are
    ``not_steps``: annotations, or the whole run)."""
    if not windows:
        return "no window to replay: the run holds no work"
    saving = [f for f in fixes if f["saved_ns"] > 0]
    if not saving:
        return "no fix replayed here shortens the step: see the critical path"
    top = saving[0]
    per = "per window" if not_steps else "per step"
    return (
        f"{top['fix']} saves ~{duration(top['saved_ns'])} {per} "
        f"({percent(top['saved_pct'])} of {duration(top['step_ns'])})"
    )


def next_fix(profile: Profile, *, step: int | None = None) -> str | None:
    """The run's verdict (``verdict``) where a fix replayed there saves time, else None: what
    ``diff`` says under its verdict (with ``step``, that step's; docs/diff.md)."""
    result = critical(profile, step=step)
    return result.verdict if (result.fixes["saved_ns"] > 0).any() else None


def critical(
    profile: Profile,
    *,
    window: str | None = None,
    step: int | None = None,
    asked: Asked | None = None,
) -> CriticalResult:
    """Return the critical path of each step of ``profile`` (or of each annotation the glob
    ``window`` names; with ``step``, of that one only, the fixes measured on it) and the fixes
    ranked by the step time they save (module doc)."""
    said("the critical path of each step")
    pattern, window = window, None if window is None else glob_regex(window)
    events = profile.keyed
    with ThreadPoolExecutor(max_workers=1) as pool:  # the host's own time beside the graph
        # on every thread: a label is looked up on a call's thread only, the rest go unused
        owned = pool.submit(own_time, events, None, window)
        g = build(profile, window)
        own = owned.result()
    if window and not g.marks:
        raise UsageError(f"no annotation matches {{window}} {pattern!r}")
    # Replayed as recorded, through every node (a change that changes nothing): the windows
    # it gives are the steps' replayed times (``_steps``: against the recorded ones).
    base = replay(g, Change(dur={0: g.dur[0]})) if g.n else replay(g)
    spans = windows(g, base)
    if step is not None:
        if step not in spans:
            have = ", ".join(str(s) for s in spans if s is not None) or "none"
            raise UsageError(f"no window {step} in this run (its windows: {have})", param="step")
        spans = {step: spans[step]}
    notes: list[str] = []
    segs = _path_table(g, base, spans)
    segs = labelled(segs, own)
    scenarios = _candidates(g, segs, own, profile, asked or Asked(), spans, notes)
    fixes = _ranked(g, scenarios, base, segs, spans)
    return CriticalResult(
        root=profile.name,
        window=window,
        latency_ns=g.latency_ns,
        steps=_steps(g, spans),
        path=segs,
        kinds=_kinds(segs, spans),
        fixes=fixes,
        notes=tuple(notes),
    )


def _steps(g: Graph, spans: Spans) -> pl.DataFrame:
    """Per window: recorded start, end, time; replayed as recorded (``spans``); the error
    (%)."""
    recorded = windows(g, replay(g))  # no change: every node's recorded times
    rows = [
        {"step": s, "start_ns": recorded[s][0], "end_ns": recorded[s][1],
         "window_ns": recorded[s][1] - recorded[s][0], "replayed_ns": b - a}
        for s, (a, b, _) in spans.items()
    ]  # fmt: skip
    schema = {c: pl.Int64 for c in ("step", "start_ns", "end_ns", "window_ns", "replayed_ns")}
    out = pl.DataFrame(rows, schema=schema)
    error = (pl.col("replayed_ns") - pl.col("window_ns")).abs() / pl.col("window_ns") * 100
    return out.with_columns(replay_error_pct=pl.when(pl.col("window_ns") > 0).then(error))


def _path_table(g: Graph, times: Times, spans: Spans) -> pl.DataFrame:
    """The critical path of every window, one row per segment, in time order (walked by the
    compiled walk where the replay was compiled, else by ``replay.path``)."""
    keys = list(spans)
    table = walk_all(g, times, [spans[k][0] for k in keys], [spans[k][2] for k in keys])
    steps = pl.Series("step", keys, dtype=pl.Int64)
    table = table.with_columns(
        step=steps.gather(table["window"]),
        order=pl.int_range(pl.len(), dtype=pl.Int64).over("window"),
        kind=pl.Series(KIND_CODES, dtype=Text).gather(table["kind"]),
    )
    at = g.table.select("name", "lane", "pid", "tid", "event_id")[table["node"]]
    segs = pl.concat([table, at], how="horizontal")
    # host time is named for the call it ends at: "until NAME", made once per name (the texts
    # stay dictionary-encoded: a path holds hundreds of thousands of segments)
    until = segs.filter(pl.col("kind") == "host").select(pl.col("name").unique())
    until = until.with_columns(until=pl.format("until {}", "name").cast(Text), host=pl.lit(True))
    return (
        segs.with_columns(host=pl.col("kind") == "host")
        .join(until, on=["name", "host"], how="left", maintain_order="left")
        .with_columns(
            duration_ns=pl.col("end_ns") - pl.col("start_ns"),
            name=pl.coalesce("until", "name"),
            label=pl.lit(None, Text),
        )
        .select(pl.col(c).cast(t) for c, t in PATH_COLUMNS.items())
    )


def _kinds(segs: pl.DataFrame, spans: Spans) -> pl.DataFrame:
    """Per window and kind of segment, the path's time and its share of the window."""
    sizes = pl.DataFrame(
        {"step": list(spans), "window_ns": [b - a for a, b, _ in spans.values()]},
        schema={"step": pl.Int64, "window_ns": pl.Int64},
    )
    out = segs.group_by("step", "kind").agg(time_ns=pl.col("duration_ns").sum(), segments=pl.len())
    return (
        out.join(sizes, on="step", how="left", nulls_equal=True)
        .with_columns(share_pct=pl.col("time_ns") / pl.col("window_ns") * 100)
        .sort("step", "time_ns", "kind", descending=[False, True, False], nulls_last=True)
    )


def _candidates(
    g: Graph,
    segs: pl.DataFrame,
    own: pl.DataFrame,
    profile: Profile,
    asked: Asked,
    spans: Spans,
    notes: list[str],
) -> list[what.Scenario]:
    """The what-ifs to replay: those the path suggests (the top host ranges, waiting calls
    and copies on it; graphs on CUDA/ROCm; warm-up) and those asked for. A host range found
    on the path loses its own time only (``own``: not the time of the ranges inside it)."""
    events = profile.keyed
    g.host_gaps()  # (found once, before the threads ask)

    def host(label: str) -> what.Scenario:
        mine = own.filter(pl.col("label") == label)
        return what.host_time(g, mine, f"`{label}` (its own time)", f"host:{label}")

    out = _each(host, _top(segs.filter(pl.col("label") != UNTRACED), "label", "host"))
    for name in _top(segs, "name", "sync"):
        calls = set(_named(g, "return", f"^{re.escape(name)}$")["call"].to_list())
        out.append(what.asynchronous(g, calls, f"`{name}`", f"sync:{name}"))
    for name in _top(segs, "name", "memory"):
        copies = set(_named(g, "memory", f"^{re.escape(name)}$")["node"].to_list())
        out.append(what.no_copy(g, copies, f"`{name}`", f"copy:{name}"))
    api = _graph_api(events)
    if api and segs.filter(pl.col("kind").is_in(["launch", "call", "host"])).height:
        out.append(what.graphs(g, api))
    steps = sorted(s for s in spans if s is not None)
    if len(steps) >= WARMUP_STEPS and spans[steps[0]][1] - spans[steps[0]][0] > max(
        b - a for s, (a, b, _) in spans.items() if s != steps[0]
    ):
        out.append(what.warmup(steps[0]))  # the first of three or more steps is the longest
    return out + _asked(g, profile, asked, notes)


def _each(f: Callable[[T], R], items: list[T]) -> list[R]:
    """``f`` of each of ``items``, in their order, on as many threads as there are cores (the
    compiled parts under each let the others run)."""
    workers = min(len(items), os.cpu_count() or 1)
    if workers <= 1:
        return [f(x) for x in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(f, items))


def _top(segs: pl.DataFrame, by: str, kind: str) -> list[str]:
    """The ``CANDIDATES`` values of ``by`` that hold the most path time of ``kind``."""
    rows = segs.filter(pl.col("kind") == kind).group_by(by).agg(pl.col("duration_ns").sum())
    top = rows.sort("duration_ns", by, descending=[True, False]).head(CANDIDATES)
    return [str(v) for v in top[by].to_list() if v is not None]


def _ranges(events: pl.DataFrame, regex: str) -> pl.DataFrame:
    """The instances of the ops and annotations whose name matches ``regex``."""
    from trace_analyzer.model.schema import matching

    rows = events.select("name", "lane_kind", "pid", "tid", "start_ns", "end_ns")
    return rows.filter(pl.col("lane_kind").is_in(LABELS) & matching(rows["name"], regex)).select(
        "pid", "tid", "start_ns", "end_ns"
    )


def _graph_api(events: pl.DataFrame) -> str | None:
    """The graph API (``CUDA``, ``HIP``) of a run whose device work is a GPU's and that
    replays no graph yet, else None."""
    from trace_analyzer.questions.gaps.hints import REPLAYS

    hardware = events.select("lane_kind", "source").filter(pl.col("lane_kind") == "hardware")
    sources = set(hardware["source"].cast(pl.String).unique())
    api = "CUDA" if "cuda" in sources else "HIP" if "rocm" in sources else None
    if api and events["name"].unique().cast(pl.String).str.contains(REPLAYS).any():
        return None  # it replays graphs already
    return api


def _asked(g: Graph, profile: Profile, asked: Asked, notes: list[str]) -> list[what.Scenario]:
    """The what-ifs asked for by hand."""
    out: list[what.Scenario] = []
    if asked.host:
        ranges = _ranges(profile.keyed, glob_regex(asked.host))
        out.append(what.host_time(g, ranges, f"`{asked.host}`", f"host:{asked.host}"))
    if asked.sync:
        calls = set(_named(g, "return", glob_regex(asked.sync))["call"].to_list())
        out.append(what.asynchronous(g, calls, f"`{asked.sync}`", f"sync:{asked.sync}"))
        if not calls:
            notes.append(f"no call matching `{asked.sync}` waited for the device")
    if asked.copy:
        copies = set(_named(g, "memory", glob_regex(asked.copy))["node"].to_list())
        out.append(what.no_copy(g, copies, f"`{asked.copy}`", f"copy:{asked.copy}"))
        if not copies:
            notes.append(f"no device copy matches `{asked.copy}`")
    if asked.fuse:
        ops = _ops(g, profile)
        regex = glob_regex(asked.fuse)
        if not any(re.search(regex, o) for o in ops.values()):
            notes.append(f"no device work of an op matching `{asked.fuse}`: nothing to fuse")
        out.append(what.fuse(g, ops, asked.fuse, asked.factor))
    return out


def _named(g: Graph, kind: str, regex: str) -> pl.DataFrame:
    """The nodes of ``kind`` whose name matches ``regex``."""
    from trace_analyzer.model.schema import matching

    nodes = g.table.select("node", "kind", "name").with_columns(g.links("call"))
    return nodes.filter((pl.col("kind") == kind) & matching(nodes["name"], regex))


def _ops(g: Graph, profile: Profile) -> dict[int, str]:
    """Per device node, the op its chain reaches (chain.analysis.chain_table)."""
    from trace_analyzer.questions.chain.analysis import chain_table

    table = chain_table(profile.keyed, profile.edges).select("hw_event_id", "op").drop_nulls()
    by_event = dict(table.iter_rows())
    return {i: by_event[g.event[i]] for i in g.device_nodes() if g.event[i] in by_event}


def _period(g: Graph, times: Times, keep: Spans, skip: frozenset[int]) -> float:
    """The mean step time under ``times``: from the first measured window's start to the
    last one's end, over the number of windows (those of ``keep``, less those in ``skip``):
    overlapping windows (the device behind the host) are counted once."""
    spans = windows(g, times)
    kept = [v for s, v in spans.items() if s in keep and s not in skip]
    if not kept:
        return 0.0
    return (max(b for _, b, _ in kept) - min(a for a, _, _ in kept)) / len(kept)


def _first_marks(g: Graph, spans: Spans, skip: frozenset[int]) -> frozenset[int]:
    """The start marks of the first measured window (none for a run without steps)."""
    kept = sorted((a, s) for s, (a, _, _) in spans.items() if s is not None and s not in skip)
    return frozenset(g.marks[kept[0][1]][0]) if kept else frozenset()


def _device_time(g: Graph, change: Change, spans: Spans) -> int:
    """The mean over the windows (less the change's ``skip``) of the device work launched in
    each, summed, under ``change``: the recorded sums, less what it takes off each node."""
    kept = {s for s in spans if s not in change.skip}
    if not kept:
        return 0
    per_step = g.device_sums()
    total = sum(per_step.get(s, 0) for s in kept)
    if change.dur:  # (each node's step, a list, made only where a duration changes)
        step, dur, own, call = g.step, g.dur, g.own, OWN_CODES["call"]
        total -= sum(dur[i] - v for i, v in change.dur.items() if own[i] < call and step[i] in kept)
    return round(total / len(kept))


def _ranked(
    g: Graph, scenarios: list[what.Scenario], recorded: Times, segs: pl.DataFrame, spans: Spans
) -> pl.DataFrame:
    """Each what-if replayed: the mean window it leaves, what it saves, its evidence."""
    base = _period(g, recorded, spans, frozenset())
    g.device_sums()  # (found once, before the threads ask)

    def row(sc: what.Scenario) -> dict[str, Any]:
        times = replay(g, sc.change, _first_marks(g, spans, sc.change.skip))
        after = _period(g, times, spans, sc.change.skip)
        if sc.change.skip:
            on = pl.col("step").is_in(list(sc.change.skip))
        else:
            touched = sc.nodes().cast(segs["node"].dtype).implode()
            on = pl.col("kind").is_in(sc.kinds) & pl.col("node").is_in(touched)
        # the segments it changes, by row: only the three longest gathered whole
        hit = segs.select("duration_ns", row=pl.int_range(pl.len()), on=on).filter("on")
        examples = segs[longest(hit, 3, "duration_ns")["row"]]
        return {
            "fix": sc.fix, "scenario": sc.key, "step_ns": round(base), "replayed_ns": round(after),
            "saved_ns": round(base - after),
            "saved_pct": (base - after) / base * 100 if base else None,
            "device_ns": _device_time(g, sc.change, spans),
            "path_segments": hit.height, "path_ns": int(hit["duration_ns"].sum()),
            "evidence": examples.select("step", "kind", "name", "label", "start_ns", "duration_ns",
                                        "event_id").to_dicts(),
            "assumption": sc.assumption,
        }  # fmt: skip

    rows = _each(row, scenarios)
    schema: dict[str, pl.DataType | type[pl.DataType]] = {
        "fix": pl.String, "scenario": pl.String, "step_ns": pl.Int64, "replayed_ns": pl.Int64,
        "saved_ns": pl.Int64, "saved_pct": pl.Float64, "device_ns": pl.Int64,
        "path_segments": pl.Int64,
        "path_ns": pl.Int64, "evidence": EVIDENCE, "assumption": pl.String,
    }  # fmt: skip
    out = pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
    return out.sort("saved_ns", "fix", descending=[True, False]).with_row_index("rank", offset=1)
