"""The gaps of a run, and its summary, as slices of the Perfetto export
(questions/export/perfetto.py).

Each gap is a slice named by its cause on a track ``<lane> gaps`` beside its hardware lane, its
evidence and its hint (``questions.tables.analysis.gap_rows``) in its args; the run's summary (what
``traceana gaps`` totals) is one slice over the measured window, on a track of its own in a process
``traceana``, with the totals and the hints in its args: the Perfetto UI shows them when the slice
is selected, and SQL reads them from ``args`` (docs/graph.md)."""

from __future__ import annotations

from typing import Any

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
