"""The gaps of a run, and its summary, as slices of the Perfetto export
(questions/export/perfetto.py).

Each gap is a slice named by its cause on a track ``<lane> gaps`` beside its hardware lane, its
evidence and its hint (``questions.tables.analysis.gap_rows``) in its args; the run's summary (what
``traceana gaps`` totals) is one slice over the measured window, on a track of its own in a process
``traceana``, with the totals and the hints in its args: the Perfetto UI shows them when the slice
is selected, and SQL reads them from ``args`` (docs/graph.md). Each window's critical path
(``traceana critical``) is a track of that process, one slice per segment."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trace_analyzer.questions.critical.analysis import CriticalResult
from trace_analyzer.questions.export.flows import us
from trace_analyzer.questions.gaps.analysis import GapsResult

GAP_CAT, SUMMARY_CAT = "traceana_gap", "traceana_summary"
SUMMARY = "traceana summary"
GAP_ARGS_US = {"duration_us": "duration_ns", "transfer_us": "transfer_ns", "sync_us": "sync_ns"}


def gap_slice(g: dict[str, Any], pid: int, tid: int, base: int) -> dict[str, Any]:
    """Return the slice of one gap (a row of ``questions.tables.analysis.gap_rows``: with its
    hint)."""
    args: dict[str, Any] = {
        "lane": g["lane"],
        "cause": g["cause"],
        "evidence": g["evidence"],
        "hint": g["hint"],
        "next_op": g["next_op"],
        "prev_op": g["prev_op"],
        "next_runtime": g["next_runtime"],
        "link_method": g["link_method"],
        "prev_event_id": g["prev_event"],
        "next_event_id": g["next_event"],
    }
    for key, col in GAP_ARGS_US.items():
        args[key] = None if g[col] is None else us(g[col])
    return {
        "ph": "X",
        "cat": GAP_CAT,
        "name": g["cause"],
        "pid": pid,
        "tid": tid,
        "ts": us(g["start_ns"] - base),
        "dur": us(g["duration_ns"]),
        "args": args,
    }


def summary_track(result: GapsResult, pid: int, tid: int, base: int) -> list[dict[str, Any]]:
    """Return the process ``traceana``, its track and the summary slice over
    the window; nothing for a run with no hardware lane (no window)."""
    w = result.window
    if w is None:
        return []
    meta = [
        ("process_name", pid, 0, {"name": "traceana"}),
        ("thread_name", pid, tid, {"name": SUMMARY}),
    ]
    args = {**result.summary, "window_origin": w.origin, "hints": list(result.hints)}
    return [{"ph": "M", "name": n, "pid": p, "tid": t, "args": a} for n, p, t, a in meta] + [
        {
            "ph": "X",
            "cat": SUMMARY_CAT,
            "name": SUMMARY,
            "pid": pid,
            "tid": tid,
            "ts": us(w.start_ns - base),
            "dur": us(w.duration_ns),
            "args": args,
        }
    ]


CRITICAL_CAT = "traceana_critical"
CRITICAL = "traceana critical path"


def critical_track(
    result: CriticalResult, pid: int, tid: int, base: int, size: int
) -> Iterator[list[dict[str, Any]]]:
    """Yield the tracks ``traceana critical path`` in the process ``traceana`` (from ``tid``
    on), in lists of at most about ``size`` records: each segment of every window's critical
    path as a slice named ``<kind>: <name>``, with its kind, name, label, lane, step and event
    in its args; the verdict and the ranked fixes in the args of the first slice. A window's
    segments tile it; windows that overlap (a device running behind its host) go on tracks of
    their own, ``(overlap N)``, each on the first whose last window has ended."""
    if not result.path.height:
        return
    lanes: list[int] = []  # per track, the end of its last window
    track: dict[Any, int] = {}
    for w in result.steps.sort("start_ns").iter_rows(named=True):
        free = next((k for k, end in enumerate(lanes) if end <= w["start_ns"]), len(lanes))
        lanes[free : free + 1] = [w["end_ns"]]
        track[w["step"]] = free
    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid + k,
         "args": {"name": CRITICAL + (f" (overlap {k})" if k else "")}}
        for k in range(len(lanes))
    ]  # fmt: skip
    fixes = [{k: f[k] for k in ("rank", "fix", "saved_ns", "saved_pct", "assumption")}
             for f in result.fixes.to_dicts()]  # fmt: skip
    first = {"verdict": result.verdict, "fixes": fixes}
    for part in result.path.iter_slices(size):
        for r in part.to_dicts():
            args = {k: r[k] for k in ("kind", "name", "label", "lane", "step", "event_id")}
            out.append({
                "ph": "X", "cat": CRITICAL_CAT, "name": f"{r['kind']}: {r['name']}", "pid": pid,
                "tid": tid + track[r["step"]], "ts": us(r["start_ns"] - base),
                "dur": us(r["duration_ns"]), "args": args | first,
            })  # fmt: skip
            first = {}
        yield out
        out = []
