"""The text and Markdown of `traceana info` (questions/info/analysis.py's JSON)."""

from __future__ import annotations

from typing import Any

from trace_analyzer.numbers import DASH, count, duration, instant, number
from trace_analyzer.questions.info.analysis import InfoResult
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
from trace_analyzer.render.text import as_doc, warnings_block
from trace_analyzer.render.view import View


def _info(run: dict[str, Any], style: Style) -> list[Block]:
    origin = run["start_ns"]
    cov = run.get("links") or {}
    layouts = ", ".join(run["layouts"]) or "plain files"
    span = None if origin is None else run["end_ns"] - origin
    blocks: list[Block] = [
        heading(f"run: {shown(run['root'], style)}", style),
        "",
        f"{plural(run['events'], 'event')}{'' if span is None else ' over ' + duration(span)}; "
        f"{plural(run['hardware_lanes'], 'hardware lane')}; layout: {layouts}",
    ]
    if cov.get("hardware_executions"):
        blocks.append(coverage_line(cov))
    blocks += [_sources(run["sources"]), _processes(run["processes"])]
    blocks.append(_lanes(run["lanes"], origin))
    blocks += [_captures(run.get("captures") or []), _pairs(run["neff_ntff"])]
    blocks += _neff_advice(run, style)
    notes = run["notes"] + [f"{s['path']}: {n}" for s in run["sources"] for n in s["notes"]]
    if run["warnings"]:
        blocks.append(warnings_block(run["warnings"], style))
    blocks.append(Items("notes", [shown(n, style) for n in notes], noun="notes"))
    return blocks


def _neff_advice(run: dict[str, Any], style: Style) -> list[Block]:
    """Return the list of the unpaired NEFF/NTFF files and the device export commands of an
    info ``run`` (empty lists draw nothing)."""
    lone = run.get("unpaired") or {}
    names = [f"NTFF without a NEFF: {n}" for n in lone.get("ntff", [])]
    names += [f"NEFF without an NTFF: {n}" for n in lone.get("neff", [])]
    commands = [plain(c) for c in run.get("device_export") or []]
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


def _lanes(lanes: list[dict[str, Any]], origin: int | None) -> Table:
    columns = (
        text_col("lane", cut=20, keep_end=True),
        text_col("kinds", cut=12, drop=1),
        num_col("events"),
        num_col("start"),
        num_col("span"),
    )
    rows = [
        [
            lane["lane"],
            ", ".join(lane["kinds"]),
            count(lane["events"]),
            instant(lane["start_ns"], origin),
            duration(lane["span_ns"]),
        ]
        for lane in lanes
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


def _pairs(pairs: list[dict[str, Any]]) -> Table:
    columns = (
        text_col("ntff", cut=20, keep_end=True),
        text_col("neff", cut=20, keep_end=True),
        Column("mode", optional=True),
    )
    rows = [[p["ntff"], p["neff"], p["mode"]] for p in pairs]
    return Table("NEFF/NTFF files (not decoded)", columns, rows, noun="files")


def info_from_json(run: dict[str, Any], style: Style, view: View) -> list[Block]:
    """Return the blocks of one run of `traceana info` (its JSON ``run``)."""
    return _info(run, style)


def info_layout(result: InfoResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    return info_from_json(as_doc(result, style, view), style, view)
