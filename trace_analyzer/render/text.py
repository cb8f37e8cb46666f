"""Text for people: plain tables for a terminal and Markdown for pull requests.

``render_table`` and ``render_markdown`` take what a command prints (a ``RunResults``) and
lay out each run by its result type (``LAYOUTS``); ``View`` holds the presentation choices
(--by, --top). Layouts of info, ops and chain are here; those of gaps and trend in
text_gaps.py, of diff in text_diff.py. A terminal table fits ``width``; a Markdown document
stays under ``BUDGET`` characters, its tables cut to fewer rows when it would not (``fit``;
docs/output.md says both).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from trace_analyzer.analyses.chain import ChainResult
from trace_analyzer.analyses.diff import DiffResult
from trace_analyzer.analyses.distributed import RanksResult
from trace_analyzer.analyses.engines import EnginesResult
from trace_analyzer.analyses.engines_diff import EnginesDiffResult
from trace_analyzer.analyses.gaps import GapsResult
from trace_analyzer.analyses.info import InfoResult
from trace_analyzer.analyses.kernels import KernelsResult
from trace_analyzer.analyses.launches import LaunchesResult
from trace_analyzer.analyses.ops import OpsResult
from trace_analyzer.analyses.results import RunResult, RunResults
from trace_analyzer.analyses.trend import TrendResult
from trace_analyzer.numbers import DASH, count, duration, from_us, instant, number, percent
from trace_analyzer.render import text_diff, text_gaps
from trace_analyzer.render.budget import BUDGET, fit
from trace_analyzer.render.safe import plain, shown, warning_texts
from trace_analyzer.render.tables import (
    MARKDOWN,
    TABLE,
    Block,
    Column,
    Items,
    Style,
    Table,
    coverage_line,
    draw,
    heading,
    num_col,
    plural,
    text_col,
)
from trace_analyzer.render.text_below import engines_below
from trace_analyzer.render.text_engines import engines_layout
from trace_analyzer.render.text_engines_diff import engines_diff_layout
from trace_analyzer.render.text_gaps import total
from trace_analyzer.render.text_kernels import kernels_layout
from trace_analyzer.render.text_launches import launches_layout
from trace_analyzer.render.text_ranks import ranks_layout
from trace_analyzer.render.view import View

Layout = Callable[[dict[str, Any], Style, View], Sequence[Block]]
WARNING_CHARS = 500  # a warning longer than this is cut in Markdown (a document has a budget)


def render_table(
    result: RunResults[Any], *, options: View = View(), width: int | None = None
) -> str:
    """Return the terminal text of ``result`` (what a command prints); ``options``: the
    presentation choices (--by, --top); ``width``: the terminal's, which every line fits
    (None: as wide as the tables are)."""
    runs = [draw(blocks, TABLE, width=width) for blocks in _blocks(result, TABLE, options)]
    return "\n\n".join("\n".join(lines) for lines in runs) + "\n"


def render_markdown(
    result: RunResults[Any], *, options: View = View(), budget: int = BUDGET
) -> str:
    """Return the Markdown of ``result``, fit to paste into a pull request: never more than
    ``budget`` characters (tables cut to fewer rows, shared by the runs, when it would be);
    ``options``: the presentation choices (--by, --top)."""
    return fit(_blocks(result, MARKDOWN, options), budget)


def _blocks(result: RunResults[Any], style: Style, view: View) -> list[list[Block]]:
    docs = shown_docs(result, style, view.top)
    return [_run_blocks(run, doc, style, view) for run, doc in zip(result.runs, docs, strict=True)]


def shown_docs(result: RunResults[Any], style: Style, top: int) -> list[dict[str, Any]]:
    """Return each run's document (``to_json()``) as the layouts read it, its long tables cut
    to the ``top`` rows shown before any row is made a dict, and their counts in all under
    ``"totals"`` (``text_gaps.total``): the ops a gaps report lists, and the rows of ops and
    chain in Markdown (a terminal table shows them all). A chain over a large trace has a
    row per hardware execution, and a Markdown report shows ten of them."""
    cut: list[RunResult] = []
    totals: list[dict[str, int]] = []
    for run in result.runs:
        if isinstance(run, GapsResult):
            cut.append(replace(run, ops=run.ops.head(top)))
            totals.append({"ops": run.ops.height})
        elif isinstance(run, (ChainResult, OpsResult)) and style == MARKDOWN:
            cut.append(replace(run, table=run.table.head(top)))
            totals.append({"rows": run.table.height})
        else:
            cut.append(run)
            totals.append({})
    docs: list[dict[str, Any]] = replace(result, runs=tuple(cut)).to_json()["runs"]
    return [{**doc, "totals": n} if n else doc for doc, n in zip(docs, totals, strict=True)]


def _run_blocks(run: RunResult, doc: dict[str, Any], style: Style, view: View) -> list[Block]:
    """Return the blocks of one run: its layout, opened (after its heading) by the run's
    warnings when the command gave them (info shows its own)."""
    blocks = list(layout_of(run)(doc, style, view))
    if isinstance(run, InfoResult) or not doc.get("warnings"):
        return blocks
    rest = blocks[2:] if len(blocks) > 1 and blocks[1] == "" else blocks[1:]
    return [*blocks[:1], _warnings(doc["warnings"], style), "", *rest]


def _warnings(warnings: Sequence[str], style: Style) -> Items:
    most = WARNING_CHARS if style == MARKDOWN else None
    return Items("warnings", warning_texts(warnings, style, most), noun="warnings")


def layout_of(run: RunResult) -> Layout:
    """Return the layout of the result type of ``run`` (TypeError for a type without one)."""
    for kind, layout in LAYOUTS:
        if isinstance(run, kind):
            return layout
    raise TypeError(f"no text layout for {type(run).__name__}")


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
        blocks.append(_warnings(run["warnings"], style))
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


def _ops(run: dict[str, Any], style: Style, view: View) -> list[Block]:
    summary = coverage_line(run["coverage"])
    if run["executions"]:
        device = from_us(run["total_device_us"])
        summary = f"device time {device} in {plural(run['executions'], 'execution')}; {summary}"
    blocks: list[Block] = [heading(f"ops: {shown(run['root'], style)}", style), "", summary]
    rows = run["rows"]
    shown_rows = rows[: view.top] if style == MARKDOWN else rows
    columns = (
        text_col("op", cut=20),
        num_col("calls"),
        num_col("self CPU", drop=4),
        num_col("CPU total", drop=5),
        num_col("device"),
        num_col("device %"),
        num_col("executions", drop=3),
        num_col("executions per call", drop=1),
        num_col("dispatch→hw (mean)", drop=2, optional=True),
    )
    cells = [
        [
            r["name"],
            count(r["calls"]),
            from_us(r["self_cpu_us"]),
            from_us(r["cpu_total_us"]),
            from_us(r["device_us"]),
            percent(r["device_pct"]),
            count(r["executions"]),
            number(r["executions_per_call"]),
            from_us(r["mean_dispatch_to_hw_us"]),
        ]
        for r in shown_rows
    ]
    more = "`--top N` shows more, `--format json` has them all"
    title = "ops by device time"
    n = total(run, "rows")
    blocks.append(Table(title, columns, cells, total=n, noun="ops", more=more))
    if not run.get("engines"):
        return blocks
    return [*blocks, engines_below(run["engines"], [r["name"] for r in shown_rows])]


HOPS = (  # the hops of a chain: the JSON's µs columns, as the tables name them; which a
    # narrow terminal drops first (0: none); Neuron's schedule hops are hidden elsewhere
    ("dispatch_to_schedule_us", "dispatch→schedule", 4),
    ("schedule_to_hw_us", "schedule→hw", 5),
    ("dispatch_to_hw_us", "dispatch→hw", 0),
    ("hw_duration_us", "hw", 0),
)


def _chain(run: dict[str, Any], style: Style, view: View) -> list[Block]:
    blocks: list[Block] = [
        heading(f"chain: {shown(run['root'], style)}", style),
        "",
        coverage_line(run["coverage"]),
    ]
    rows = run["rows"]
    if not rows:
        return blocks
    per_execution = "hw_start_ns" in rows[0]
    columns: list[Column] = [text_col("op", cut=20)]
    if per_execution:
        columns += [text_col("hardware", cut=12, drop=2), text_col("lane", 12, 3, keep_end=True)]
    else:
        columns.append(num_col("executions"))
    columns.append(Column("link", drop=1))
    columns += [num_col(name, drop=drop, optional=bool(drop)) for _, name, drop in HOPS]
    if per_execution:
        columns.append(num_col("start"))
    shown_rows = rows[: view.top] if style == MARKDOWN else rows
    cells = [_chain_cells(r, per_execution, run["start_ns"]) for r in shown_rows]
    title = (
        "per execution (start = time after the first execution)"
        if per_execution
        else "per op (the mean of each hop)"
    )
    more = "`--top N` shows more, `--format json` has them all"
    noun = "executions" if per_execution else "ops"
    n = total(run, "rows")
    return [*blocks, Table(title, tuple(columns), cells, total=n, noun=noun, more=more)]


def _chain_cells(r: dict[str, Any], per_execution: bool, origin: int | None) -> list[str]:
    cells = [r["op"] or "(unlinked)"]
    cells += [r["hw_name"], r["lane"]] if per_execution else [count(r["executions"])]
    cells.append(r["link_method"] or DASH)
    cells += [from_us(r.get(key)) for key, _, _ in HOPS]
    if per_execution:
        cells.append(instant(r["hw_start_ns"], origin))
    return cells


# One layout per result type (the text form of each result's to_json()).
LAYOUTS: tuple[tuple[type, Layout], ...] = (
    (InfoResult, lambda run, style, view: _info(run, style)),
    (OpsResult, _ops),
    (ChainResult, _chain),
    (GapsResult, lambda run, style, view: text_gaps._gaps(run, style, view.by, view.top)),
    (DiffResult, lambda run, style, view: text_diff._diff(run, style, view.top)),
    (TrendResult, lambda run, style, view: text_gaps._trend(run, style)),
    (RanksResult, ranks_layout),
    (KernelsResult, kernels_layout),
    (LaunchesResult, launches_layout),
    (EnginesResult, engines_layout),
    (EnginesDiffResult, engines_diff_layout),
)
