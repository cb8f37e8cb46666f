"""The text and Markdown of `traceana info` (questions/info/analysis.py's ``InfoResult``)."""

from __future__ import annotations

from typing import Any

import polars as pl

from trace_analyzer.numbers import DASH, count, duration, instant, number
from trace_analyzer.questions.info.analysis import InfoResult, Pair
from trace_analyzer.render.blocks import (
    Block,
    Column,
    Items,
    Style,
    Table,
    coverage_line,
    heading,
    num_col,
    plural,
    text_col,
)
from trace_analyzer.render.safe import plain, shown
from trace_analyzer.render.text import warnings_block
from trace_analyzer.render.view import View


def info_layout(result: InfoResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    d = result.details  # the plain-data fields (layouts, sources, processes, …)
    origin: int | None = d["start_ns"]
    layouts = ", ".join(d["layouts"]) or "plain files"
    span = None if origin is None else d["end_ns"] - origin
    blocks: list[Block] = [
        heading(f"run: {shown(result.root, style)}", style),
        "",
        f"{plural(result.events, 'event')}{'' if span is None else ' over ' + duration(span)}; "
        f"{plural(result.hardware_lanes, 'hardware lane')}; layout: {layouts}",
    ]
    if result.links.get("hardware_executions"):
        blocks.append(coverage_line(result.links))
    blocks += [_sources(d["sources"]), _processes(d["processes"])]
    blocks.append(_lanes(result.lanes, origin))
    blocks += [_captures(d["captures"] or []), _pairs(d["neff_ntff"])]
    blocks += _neff_advice(d["unpaired"] or {}, d["device_export"] or [], style)
    notes = d["notes"] + [f"{s['path']}: {n}" for s in d["sources"] for n in s["notes"]]
    if d["warnings"]:
        blocks.append(warnings_block(d["warnings"], style))
    blocks.append(Items("notes", [shown(n, style) for n in notes], noun="notes"))
    return blocks


def _neff_advice(lone: dict[str, list[str]], export: list[str], style: Style) -> list[Block]:
    """Return the list of the unpaired NEFF/NTFF files (``lone``) and the device export
    commands (``export``) of a run (empty lists draw nothing)."""
    names = [f"NTFF without a NEFF: {n}" for n in lone.get("ntff", [])]
    names += [f"NEFF without an NTFF: {n}" for n in lone.get("neff", [])]
    commands = [plain(c) for c in export]
    return [
        Items("unpaired NEFF/NTFF files", [shown(n, style) for n in names], noun="files"),
        Items("device export (Neuron Explorer commands)", commands, noun="commands", code=True),
    ]


def _sources(sources: list[dict[str, Any]]) -> Table:
    columns = (
        text_col("source", cut=24, keep_end=True),
        text_col("format", cut=12),
        Column("schema", drop=1, optional=True),
        num_col("events"),
        Column("read", drop=2),
    )
    rows = [
        [
            s["path"],
            s["format"],
            s["schema_version"],
            count(s["events"]),
            "yes" if s["read"] else "no",
        ]
        for s in sources
    ]
    return Table("sources", columns, rows, noun="sources")


def _processes(processes: list[dict[str, Any]]) -> Table:
    columns = (
        Column("host", cut=16, optional=True),
        num_col("pid"),
        # shown when any process has a rank, rank 0 too (an optional column hides zeros)
        num_col("rank", optional=all(p["rank"] is None for p in processes)),
        Column("rank from", drop=1, optional=True),
        num_col("events"),
    )
    rows = [
        [p["host"], str(p["pid"]), number(p["rank"]), p["rank_origin"], count(p["events"])]
        for p in processes
    ]
    return Table("processes", columns, rows, noun="processes")


def _lanes(lanes: pl.DataFrame, origin: int | None) -> Table:
    columns = (
        text_col("lane", cut=20, keep_end=True),
        text_col("kinds", cut=12, drop=1),
        num_col("events"),
        num_col("start"),
        num_col("span"),
    )
    rows = [
        [lane, ", ".join(kinds), count(events), instant(start_ns, origin), duration(span_ns)]
        for lane, kinds, events, start_ns, span_ns in lanes.select(
            "lane", "kinds", "events", "start_ns", "span_ns"
        ).iter_rows()
    ]
    return Table("lanes (start = time after the first event)", columns, rows, noun="lanes")


CAPTURE_SHOWN = ("backend", "device", "workload", "variant", "torch_version", "started_at", "path")


def _captures(captures: list[dict[str, Any]]) -> Table:
    n = len(CAPTURE_SHOWN)  # a narrow terminal drops them from the right
    columns = tuple(
        text_col(k, cut=24 if k == "path" else 10, keep_end=k == "path", drop=i and n - i)
        for i, k in enumerate(CAPTURE_SHOWN)
    )
    rows = [[str(c.get(k) or DASH) for k in CAPTURE_SHOWN] for c in captures]
    return Table("captures (capture.json)", columns, rows, noun="captures")


def _pairs(pairs: list[Pair]) -> Table:
    columns = (
        text_col("ntff", cut=20, keep_end=True),
        text_col("neff", cut=20, keep_end=True),
        Column("mode", optional=True),
    )
    rows = [[p["ntff"] or DASH, p["neff"] or DASH, p["mode"] or DASH] for p in pairs]
    return Table("NEFF/NTFF files (not decoded)", columns, rows, noun="files")
