"""Text for people: plain tables for a terminal and Markdown for pull requests.

``render_table`` and ``render_markdown`` take what a command prints (a ``RunResults``) and
lay out each run by its result type; ``View`` holds the presentation choices (--by, --top).
Layouts of info, ops and chain are here; those of gaps, diff and trend in text_gaps.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from trace_analyzer.analyses.chain import ChainResult
from trace_analyzer.analyses.diff import DiffResult
from trace_analyzer.analyses.gaps import GapsResult
from trace_analyzer.analyses.info import InfoResult
from trace_analyzer.analyses.ops import OpsResult
from trace_analyzer.analyses.results import RunResult, RunResults
from trace_analyzer.analyses.trend import TrendResult
from trace_analyzer.render import text_diff, text_gaps
from trace_analyzer.render.safe import plain, shown, warning_block
from trace_analyzer.render.tables import (
    MARKDOWN,
    TABLE,
    Style,
    bullets,
    coverage_line,
    frame_text,
    heading,
    ms,
    section,
)
from trace_analyzer.render.view import View

Layout = Callable[[dict[str, Any], Style, View], list[str]]


def render_table(result: RunResults[Any], *, options: View = View()) -> str:
    """Return the terminal text of ``result`` (what a command prints); ``options``: the
    presentation choices (--by, --top)."""
    return _render(result, TABLE, options)


def render_markdown(result: RunResults[Any], *, options: View = View()) -> str:
    """Return the Markdown of ``result``, fit to paste into a pull request; ``options``: the
    presentation choices (--by, --top)."""
    return _render(result, MARKDOWN, options)


def _render(result: RunResults[Any], style: Style, view: View) -> str:
    docs = result.to_json()["runs"]
    return (
        "\n\n".join(
            "\n".join(_run_lines(run, doc, style, view))
            for run, doc in zip(result.runs, docs, strict=True)
        )
        + "\n"
    )


def _run_lines(run: RunResult, doc: dict[str, Any], style: Style, view: View) -> list[str]:
    """Return the lines of one run: its layout, opened (after its heading) by the run's
    warnings when the command gave them (info shows its own)."""
    lines = layout_of(run)(doc, style, view)
    if isinstance(run, InfoResult) or not doc.get("warnings"):
        return lines
    rest = lines[2:] if len(lines) > 1 and lines[1] == "" else lines[1:]
    return [*lines[:1], *warning_block(doc["warnings"], style), "", *rest]


def layout_of(run: RunResult) -> Layout:
    """Return the layout of the result type of ``run`` (TypeError for a type without one)."""
    for kind, layout in LAYOUTS:
        if isinstance(run, kind):
            return layout
    raise TypeError(f"no text layout for {type(run).__name__}")


def _info(run: dict[str, Any], style: Style) -> list[str]:
    origin = run["start_ns"]
    cov = run.get("links") or {}
    layouts = ", ".join(run["layouts"]) or "plain files"
    lines = [
        heading(f"run: {run['root']}", style),
        f"{run['events']} events over {ms(run['end_ns'], origin)} ms; "
        f"{run['hardware_lanes']} hardware lanes; layout: {layouts}",
    ]
    if cov.get("hardware_executions"):
        lines.append(coverage_line(cov))
    lines += section("sources", _sources(run["sources"]), style)
    if run["processes"]:
        lines += section("processes", _processes(run["processes"]), style)
    if run["lanes"]:
        lines += section("lanes (ms from the first event)", _lanes(run["lanes"], origin), style)
    if run.get("captures"):
        lines += section("captures (capture.json)", _captures(run["captures"]), style)
    if run["neff_ntff"]:
        pairs = pl.DataFrame(
            [
                {"ntff": p["ntff"] or "", "neff": p["neff"] or "", "mode": p["mode"] or ""}
                for p in run["neff_ntff"]
            ]
        )
        lines += section("NEFF/NTFF files (not decoded)", pairs, style)
    lines += _neff_advice(run, style)
    notes = run["notes"] + [f"{s['path']}: {n}" for s in run["sources"] for n in s["notes"]]
    warned = warning_block(run["warnings"], style)
    return lines + warned + bullets("notes", [shown(n, style) for n in notes], style)


def _neff_advice(run: dict[str, Any], style: Style) -> list[str]:
    """Return the lines that list the unpaired NEFF/NTFF files and the device export
    commands of an info ``run`` (none when it has neither)."""
    lone = run.get("unpaired") or {}
    names = [f"NTFF without a NEFF: {n}" for n in lone.get("ntff", [])]
    names += [f"NEFF without an NTFF: {n}" for n in lone.get("neff", [])]
    lines = bullets("unpaired NEFF/NTFF files", [shown(n, style) for n in names], style)
    commands = [plain(c) for c in run.get("device_export") or []]
    if not commands:
        return lines
    title = "device export (Neuron Explorer commands)"
    if style == MARKDOWN:
        return lines + ["", heading(title, style, 3), "", "```sh", *commands, "```"]
    return lines + ["", heading(title, style, 3), "", *(f"    {c}" for c in commands)]


def _sources(sources: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "source": s["path"],
                "format": s["format"],
                "schema": s["schema_version"] or "",
                "events": s["events"],
                "read": "yes" if s["read"] else "no",
            }
            for s in sources
        ],
        schema={
            "source": pl.String,
            "format": pl.String,
            "schema": pl.String,
            "events": pl.Int64,
            "read": pl.String,
        },
    )


def _processes(processes: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "host": p["host"] or "",
                "pid": p["pid"],
                "rank": "" if p["rank"] is None else str(p["rank"]),
                "rank from": p["rank_origin"] or "",
                "events": p["events"],
            }
            for p in processes
        ]
    )


def _lanes(lanes: list[dict[str, Any]], origin: int | None) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "lane": lane["lane"],
                "kinds": ", ".join(lane["kinds"]),
                "events": lane["events"],
                "start_ms": ms(lane["start_ns"], origin),
                "span_ms": round(lane["span_ns"] / 1e6, 3),
            }
            for lane in lanes
        ]
    )


CAPTURE_SHOWN = ("backend", "device", "workload", "variant", "torch_version", "started_at", "path")


def _captures(captures: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame([{k: str(c.get(k) or "") for k in CAPTURE_SHOWN} for c in captures])


def _ops(run: dict[str, Any], style: Style) -> list[str]:
    summary = coverage_line(run["coverage"])
    if run["executions"]:
        summary = (
            f"device time {run['total_device_us']} µs in {run['executions']} executions; {summary}"
        )
    lines = [heading(f"ops: {run['root']}", style), summary]
    if run["rows"]:
        lines += ["", frame_text(pl.DataFrame(run["rows"], infer_schema_length=None), style)]
    return lines


CHAIN_SHOWN = {
    "op": "op",
    "hw_name": "hardware",
    "lane": "lane",
    "link_method": "link",
    "dispatch_to_schedule_us": "dispatch→schedule µs",
    "schedule_to_hw_us": "schedule→hw µs",
    "dispatch_to_hw_us": "dispatch→hw µs",
    "hw_duration_us": "hw µs",
    "hw_start_ms": "hw start ms",
}


def _chain(run: dict[str, Any], style: Style) -> list[str]:
    lines = [heading(f"chain: {run['root']}", style), coverage_line(run["coverage"])]
    if not run["rows"]:
        return lines
    df = pl.DataFrame(run["rows"], infer_schema_length=None)
    if "hw_start_ns" in df.columns:  # per execution: show when, relative to the first one
        df = df.with_columns(hw_start_ms=((pl.col("hw_start_ns") - run["start_ns"]) / 1e6).round(3))
    shown = [c for c in CHAIN_SHOWN if c in df.columns]
    rest = [c for c in df.columns if c.endswith("us") and c not in shown or c in ("executions",)]
    df = df.select(shown + rest).rename({c: CHAIN_SHOWN[c] for c in shown})
    return lines + ["", frame_text(df, style)]


# One layout per result type (the text form of each result's to_json()).
LAYOUTS: tuple[tuple[type, Layout], ...] = (
    (InfoResult, lambda run, style, view: _info(run, style)),
    (OpsResult, lambda run, style, view: _ops(run, style)),
    (ChainResult, lambda run, style, view: _chain(run, style)),
    (GapsResult, lambda run, style, view: text_gaps._gaps(run, style, view.by, view.top)),
    (DiffResult, lambda run, style, view: text_diff._diff(run, style, view.top)),
    (TrendResult, lambda run, style, view: text_gaps._trend(run, style)),
)
