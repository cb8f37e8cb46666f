"""The critical path of a multi-rank run, a rank at a time (docs/distributed.md, "critical a
rank at a time"): ``critical_passes`` is ``critical(profile)`` of the run read whole (no
window, no step, nothing asked: as ``report`` asks it), measured a file at a time in three
passes (analyses/passes.py; each file's part made by per_file.py).

The run's graph read whole has no dependency from one file's nodes to another's where no
process and no lane is in two files (a thread's chain is on its pid and tid, a lane's on
the lane, launches, waits, stream waits and a step's device work on their process): it is
the disjoint union of the files' graphs, but for the launch latency, a median over the run
that every device lag is made of. So:

1. each file gives its ``FileFacts``: its pids and lanes (shared by two files: None, the
   run is read whole), its launch times (the run's latency is their median), its graph
   API facts, and per step its first start and its two candidate ends (its end marks', its
   device work's), each with the node's order key: the run's windows are the first start
   and the last end over the files, the node that ends it found by ``replay.windows``' own
   rules (the later node of equal mark ends, the first of equal device ends) in the run's
   node order;
2. the file that holds a window's end node walks that window's critical path back, within
   its own graph, to the run's window start (``Walked``): the segments, labelled by its own
   host time, and the events and nodes they name. The reducer holds the path (it grows
   with the steps and the path, not the events) and chooses the what-ifs from it as
   ``analysis._candidates`` does;
3. every file replays every what-if (``Measured``): its windows (the run's: the first start
   and the last end over the files, so ``_period`` is exact), its device time per step
   (added up before the mean), the nodes of its own path segments each changes; and the tie
   counts that make its event ids and node ids the run's (``Renumber``, by either's key).

A what-if replay starts at the first node a change touches and keeps the nodes before it
as recorded; a file's first is not the run's, which is the same only where the replay as
recorded gives every node its recorded times: each file checks that it does (``exact``),
else the run is read whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import polars as pl

from trace_analyzer.analyses.passes import Passes
from trace_analyzer.analyses.rows import longest
from trace_analyzer.questions.critical.analysis import (
    EVIDENCE,
    WARMUP_STEPS,
    CriticalResult,
    _kinds,
    _top,
)
from trace_analyzer.questions.critical.own import UNTRACED
from trace_analyzer.questions.critical.per_file import (
    NODE_KEY,
    End,
    FileFacts,
    Measured,
    Spec,
    Tasks,
    Walked,
    facts,
    measured,
    walked,
)
from trace_analyzer.questions.gaps.per_rank import Renumber, _median

# A window of the run: its start, its end, and the node that ends it (file, node).
Window = tuple[int, int, tuple[int, int]]
Spans = dict[int | None, Window]


def critical_passes(root: str) -> Passes[CriticalResult | None]:
    """``critical`` of the run ``root`` (read whole: no window, no step, nothing asked), a
    file at a time (module doc); None where that is not the run read whole's: two files
    share a process or a lane (the run's graph links them), a file's replay as recorded
    does not give every node its recorded times, or the run has no window."""
    found: list[FileFacts] = yield partial(facts)
    spans = _windows(found)
    if spans is None:
        return None
    latency = _latency([f.since for f in found])
    tasks: Tasks = {}
    for s, (a, _, (i, node)) in spans.items():
        tasks.setdefault(found[i].key, []).append((s, a, node))
    walks: list[Walked] = yield partial(walked, latency=latency, tasks=tasks)
    if not all(w.exact for w in walks):
        return None
    segs = _path(walks)
    specs = _specs(segs, _api(found), spans)
    pins = [
        _pin(spans, frozenset({arg}) if kind == "warmup" else frozenset()) for kind, arg in specs
    ]
    ids = Renumber([w.refs for w in walks])
    nodes = Renumber([w.nodes.rename({"node": "id"}) for w in walks], NODE_KEY)
    got: list[Measured] = yield partial(
        measured, latency=latency, tasks=tasks, specs=specs, pins=pins,
        events=ids.queries, nodes=nodes.queries,
    )  # fmt: skip
    for i, m in enumerate(got):
        if m.events is not None:
            ids.add(i, *m.events)
        if m.nodes is not None:
            nodes.add(i, *m.nodes)
    segs = _renamed(segs, ids, nodes, len(found))
    return CriticalResult(
        root=root,
        window=None,
        latency_ns=latency,
        steps=_steps(spans),
        path=segs.drop("_file", "_local"),
        kinds=_kinds(segs, spans),  # type: ignore[arg-type]
        fixes=_fixes(got, segs, spans),
        notes=(),
    )


def _shared(values: Sequence[frozenset[Any]]) -> bool:
    """True where some value is in two of ``values``."""
    return sum(len(v) for v in values) != len(frozenset().union(*values))


def _windows(found: list[FileFacts]) -> Spans | None:
    """The run's windows from its files' (``FileFacts.windows``), as ``replay.windows`` makes
    them of the run read whole; None where two files share a pid or a lane, or none holds a
    window. A node's place in the run's order: its order key, then its file, then its own
    place in its file."""
    if _shared([f.pids for f in found]) or _shared([f.lanes for f in found]):
        return None
    marked = any(f.marked for f in found)
    starts: dict[int | None, int] = {}
    marks: dict[int | None, tuple[Any, ...]] = {}
    work: dict[int | None, tuple[Any, ...]] = {}

    def ranked(end: End, i: int) -> tuple[Any, ...]:
        return (end[0], end[1], i, end[2])

    for i, f in enumerate(found):
        for s, (a, mark, dev) in f.windows.items():
            if (s is None) == marked:
                continue  # a file without steps in a run with steps: no window
            starts[s] = min(a, starts.get(s, a))
            if mark is not None:
                marks[s] = max(marks.get(s, ranked(mark, i)), ranked(mark, i))
            if dev is not None and s is None:  # the last of equal ends
                work[s] = max(work.get(s, ranked(dev, i)), ranked(dev, i))
            elif dev is not None:  # the first of equal ends
                d = (-dev[0], dev[1], i, dev[2])
                work[s] = min(work.get(s, d), d)
    out: Spans = {}
    for s in sorted(starts, key=lambda k: -1 if k is None else k):
        m, w = marks.get(s), work.get(s)
        if w is not None and s is not None:
            w = (-w[0], *w[1:])
        end = w if m is None or (w is not None and w[0] > m[0]) else m
        assert end is not None
        out[s] = (starts[s], end[0], (end[2], end[3]))
    return out or None


def _latency(counts: list[pl.DataFrame]) -> int:
    """The run's launch latency from its files' launch times (``per_file.since_counts``): their
    median (the mean of the two middle values), truncated, and 0 where none or below."""
    median, _ = _median(counts)
    return 0 if median is None else max(0, int(median))


def _api(found: list[FileFacts]) -> str | None:
    """The run's graph API (analysis._graph_api) from its files' facts."""
    cuda, rocm, replays = (any(f.api[k] for f in found) for k in range(3))
    api = "CUDA" if cuda else "HIP" if rocm else None
    return None if replays else api


def _path(walks: list[Walked]) -> pl.DataFrame:
    """The run's path from the files' segments, each with its file (``_file``) and its node
    there (``_local``), by file (``_renamed`` puts them in the run's order)."""
    frames = [
        w.segments.with_columns(_file=pl.lit(i, pl.Int64), _local=pl.col("node"))
        for i, w in enumerate(walks)
    ]
    return pl.concat(frames, how="vertical_relaxed")


def _specs(segs: pl.DataFrame, api: str | None, spans: Spans) -> list[Spec]:
    """The what-ifs the path suggests, in ``analysis._candidates``' order."""
    out: list[Spec] = [
        ("host", v) for v in _top(segs.filter(pl.col("label") != UNTRACED), "label", "host")
    ]
    out += [("sync", v) for v in _top(segs, "name", "sync")]
    out += [("copy", v) for v in _top(segs, "name", "memory")]
    if api and segs.filter(pl.col("kind").is_in(["launch", "call", "host"])).height:
        out.append(("graphs", api))
    steps = sorted(s for s in spans if s is not None)
    if len(steps) >= WARMUP_STEPS and spans[steps[0]][1] - spans[steps[0]][0] > max(
        b - a for s, (a, b, _) in spans.items() if s != steps[0]
    ):
        out.append(("warmup", steps[0]))
    return out


def _pin(spans: Spans, skip: frozenset[int]) -> int | None:
    """The first measured step, whose start marks the what-if keeps (``_first_marks``)."""
    kept = sorted((a, s) for s, (a, _, _) in spans.items() if s is not None and s not in skip)
    return kept[0][1] if kept else None


def _renamed(segs: pl.DataFrame, ids: Renumber, nodes: Renumber, files: int) -> pl.DataFrame:
    """``segs`` with each event id and node the run's."""
    parts = []
    for i in range(files):
        mine = segs.filter(pl.col("_file") == i)
        if mine.height:
            mine = ids.renamed(mine, i, columns=("event_id",))
            parts.append(nodes.renamed(mine, i, columns=("node",)))
    return pl.concat(parts).sort("step", "order", maintain_order=True) if parts else segs


def _steps(spans: Spans) -> pl.DataFrame:
    """Per window: its start, end and time; replayed as recorded (the same: each file's
    replay gave its recorded times); the error (analysis._steps)."""
    rows = [
        {"step": s, "start_ns": a, "end_ns": b, "window_ns": b - a, "replayed_ns": b - a}
        for s, (a, b, _) in spans.items()
    ]
    schema = {c: pl.Int64 for c in ("step", "start_ns", "end_ns", "window_ns", "replayed_ns")}
    out = pl.DataFrame(rows, schema=schema)
    error = (pl.col("replayed_ns") - pl.col("window_ns")).abs() / pl.col("window_ns") * 100
    return out.with_columns(replay_error_pct=pl.when(pl.col("window_ns") > 0).then(error))


def _period(
    spans: Spans, got: list[dict[int | None, tuple[int, int]]], skip: frozenset[int]
) -> float:
    """``analysis._period`` from the files' windows ``got``: the first start and the last end
    over every file and every measured window, over the number of windows."""
    kept = [s for s in spans if s not in skip]
    if not kept:
        return 0.0
    a = min(w[s][0] for w in got for s in kept if s in w)
    b = max(w[s][1] for w in got for s in kept if s in w)
    return (b - a) / len(kept)


def _device(spans: Spans, got: list[dict[int | None, int]], skip: frozenset[int]) -> int:
    """``analysis._device_time`` from the files' per-step sums ``got``."""
    kept = {s for s in spans if s not in skip}
    if not kept:
        return 0
    return round(sum(d.get(s, 0) for d in got for s in kept) / len(kept))


FIXES: dict[str, pl.DataType | type[pl.DataType]] = {
    "fix": pl.String, "scenario": pl.String, "step_ns": pl.Int64, "replayed_ns": pl.Int64,
    "saved_ns": pl.Int64, "saved_pct": pl.Float64, "device_ns": pl.Int64, "path_segments": pl.Int64,
    "path_ns": pl.Int64, "evidence": EVIDENCE, "assumption": pl.String,
}  # fmt: skip


def _fixes(got: list[Measured], segs: pl.DataFrame, spans: Spans) -> pl.DataFrame:
    """Each what-if's row (analysis._ranked's), from every file's ``Measured``."""
    recorded = [{s: (a, b) for s, (a, b, _) in spans.items()}]
    base = _period(spans, recorded, frozenset())
    where = pl.col("_file") * (1 << 40) + pl.col("_local")
    rows = []
    for k, (fix, key, assumption, kinds, skip) in enumerate(got[0].about if got else []):
        after = _period(spans, [m.spans[k] for m in got], skip)
        if skip:
            on = pl.col("step").is_in(list(skip))
        else:
            touched = [i * (1 << 40) + n for i, m in enumerate(got) for n in m.touched[k]]
            on = pl.col("kind").is_in(kinds) & where.is_in(
                pl.Series(touched, dtype=pl.Int64).implode()
            )
        hit = segs.select("duration_ns", row=pl.int_range(pl.len()), on=on).filter("on")
        examples = segs[longest(hit, 3, "duration_ns")["row"]]
        rows.append({
            "fix": fix, "scenario": key, "step_ns": round(base), "replayed_ns": round(after),
            "saved_ns": round(base - after),
            "saved_pct": (base - after) / base * 100 if base else None,
            "device_ns": _device(spans, [m.device[k] for m in got], skip),
            "path_segments": hit.height, "path_ns": int(hit["duration_ns"].sum()),
            "evidence": examples.select("step", "kind", "name", "label", "start_ns", "duration_ns",
                                        "event_id").to_dicts(),
            "assumption": assumption,
        })  # fmt: skip
    out = pl.DataFrame(rows, schema=FIXES) if rows else pl.DataFrame(schema=FIXES)
    return out.sort("saved_ns", "fix", descending=[True, False]).with_row_index("rank", offset=1)
