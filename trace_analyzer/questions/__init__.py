"""The questions traceana answers, one folder each, and ``QUESTIONS``: the one registry of them.

Each question is a folder under ``trace_analyzer/questions/`` holding its analysis (a function
of a loaded run returning a typed result), its layouts (text and Markdown, a report section,
plots, files for other tools) and its command (``command.py``). What the rest of traceana
needs to know of a question is one line here, ``Question(...)``, as ``Format`` is for the
inputs (readers/format.py): the group lists the commands from it and imports a command's
module only when that command runs; the text renderer finds a result's layout in it; the
library's face takes its names from it; the report its parts and sections.

Nothing is imported here: every place is a dotted name (``module`` or ``module:attribute``),
so that ``traceana --help`` and ``import trace_analyzer`` load no polars. ``resolve`` imports
one when it is used. A question added to ``QUESTIONS`` (a test adds a toy one from another
package) is reached from the CLI, the face and the report with no other change.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

PACKAGE = "trace_analyzer.questions"


@dataclass(frozen=True)
class Part:
    """A question's part of ``traceana report``: computed from the report's run and drawn as
    one section of the page (and its Markdown), from the part's embedded JSON.

    ``compute``: ``module:function(profile, device) -> RunResult | None`` (None: the run has
    nothing for it); ``section``: ``module:function(run_json, plot_png | None) -> html``;
    ``plot``: ``module:function(run_json) -> png bytes`` (optional); ``markdown``:
    ``module:function(run_json) -> list[str]`` (optional); ``cuts``: the long lists cut
    before embedding (the result's frame, its JSON key, rows kept, longest first);
    ``command``: the command whose JSON the part embeds, ``{path}`` for the run.
    """

    compute: str
    section: str
    command: str
    plot: str | None = None
    markdown: str | None = None
    cuts: tuple[tuple[str, str, int, bool], ...] = ()


@dataclass(frozen=True)
class Question:
    """One question: its command, its place in the face, its layouts and its report part.

    ``name``: the command's name; ``summary``: the first paragraph of its help (listed by
    ``traceana --help`` with nothing imported; tests/cli/test_startup.py holds it to the
    command's own); ``command``: the module holding the click command; ``face``: the names
    ``import trace_analyzer as ta`` offers from ``analysis`` (never a subpackage's name:
    ``ta.batch`` is the package of ``ta.run_batch``); ``layouts``: a result type
    (``module:Class``) to its text layout (``module:function(doc, style, view) -> blocks``);
    ``answers``: whether an unchanged run's output may be answered from the cache
    (cli/answers.py); ``report``: its part of the report page, if it has one.
    """

    name: str
    summary: str
    command: str
    analysis: str | None = None
    face: tuple[str, ...] = ()
    layouts: dict[str, str] = field(default_factory=dict)
    answers: bool = False
    report: Part | None = None


def _q(path: str) -> str:
    return f"{PACKAGE}.{path}"


QUESTIONS: list[Question] = [
    Question(
        "baseline", "Save a profile's summary (the numbers diff compares), to compare against "
        "later.", _q("diff.command"),
    ),
    Question(
        "batch", "Analyse every run under ROOTS into one Parquet table, one row per run × "
        "device.", _q("batch.command"), "trace_analyzer.batch",
        ("run_batch", "BatchResult"),
    ),
    Question(
        "chain", "The dependency chain of every hardware execution: op, dispatch, schedule, "
        "hardware.", _q("chain.command"), _q("chain.analysis"), ("chains", "ChainResult"),
        {_q("chain.analysis:ChainResult"): _q("chain.text:chain_layout")}, answers=True,
    ),
    Question(
        "diff", "Compare two sides (BASE, then HEAD): window, device time, idle, gaps, ops, "
        "causes.", _q("diff.command"), _q("diff.analysis"), ("diff", "DiffResult"),
        {_q("diff.analysis:DiffResult"): _q("diff.text:diff_layout")},
    ),
    Question(
        "engines", "Per NEFF and physical core: each engine's busy time, DMA, MFU/HFU/MBU and "
        "roofline.", _q("engines.command"), _q("engines.analysis"),
        ("engines", "EnginesResult"),
        {
            _q("engines.analysis:EnginesResult"): _q("engines.text:engines_layout"),
            _q("engines.diff:EnginesDiffResult"): _q("engines.text_diff:engines_diff_layout"),
        },
    ),
    Question(
        "export", "Export one run as a trace for the Perfetto UI, with links and gaps drawn "
        "in.", _q("export.command"),
    ),
    Question(
        "gaps", "Every idle gap on the hardware lanes, attributed to the op that ended it and "
        "a cause.", _q("gaps.command"), _q("gaps.analysis"), ("gaps", "GapsResult", "Window"),
        {_q("gaps.analysis:GapsResult"): _q("gaps.text:gaps_layout")}, answers=True,
    ),
    Question(
        "graph", "Export the dependency graph of one run: framework op → runtime → hardware.",
        _q("graph.command"), _q("graph.writer"), ("graph",),
    ),
    Question(
        "info", "Show what PATH holds: sources and formats, processes, lanes by kind, "
        "NEFF/NTFF files.", _q("info.command"), _q("info.analysis"), ("info", "InfoResult"),
        {_q("info.analysis:InfoResult"): _q("info.text:info_layout")}, answers=True,
    ),
    Question(
        "kernels", "Per rank, the kernels (Neuron: NEFFs) by total device time, with their "
        "kind and spread.", _q("kernels.command"), _q("kernels.analysis"),
        ("kernels", "KernelsResult"),
        {_q("kernels.analysis:KernelsResult"): _q("kernels.text:kernels_layout")},
    ),
    Question(
        "launches", "Per lane: launch latency and delay, queue length over time, time blocked "
        "on a full queue.", _q("launches.command"), _q("launches.analysis"),
        ("launches", "LaunchesResult"),
        {_q("launches.analysis:LaunchesResult"): _q("launches.text:launches_layout")},
    ),
    Question(
        "ops", "The offline key_averages(): per op, calls, self CPU, device time and device "
        "%.", _q("ops.command"), _q("ops.analysis"), ("ops", "OpsResult"),
        {_q("ops.analysis:OpsResult"): _q("ops.text:ops_layout")}, answers=True,
    ),
    Question(
        "ranks", "Per rank and step: compute against communication, clock offsets, each "
        "step's straggler.", _q("ranks.command"), _q("ranks.analysis"),
        ("ranks", "RanksResult"),
        {_q("ranks.analysis:RanksResult"): _q("ranks.text:ranks_layout")},
    ),
    Question(
        "report", "One page for one run: timeline, gap histogram, summary, ops and gaps; with "
        "--base, the diff.", _q("report.command"), _q("report.analysis"),
        ("report", "ReportResult"),
    ),
    Question(
        "tables", "Write one run's tables as Parquet: events, edges, chains, gaps and ops.",
        _q("tables.command"), _q("tables.analysis"), ("tables",),
    ),
    Question(
        "trend", "Idle % and device time over capture time, per group, from a `traceana "
        "batch` table.", _q("trend.command"), _q("trend.analysis"), ("trend", "TrendResult"),
        {_q("trend.analysis:TrendResult"): _q("trend.text:trend_layout")},
    ),
]  # fmt: skip


def by_name() -> dict[str, Question]:
    """Return the registered questions by command name."""
    return {q.name: q for q in QUESTIONS}


def resolve(where: str) -> Any:
    """Return what ``module:attribute`` names (the module itself without ``:attribute``),
    importing the module."""
    module, _, attr = where.partition(":")
    found = importlib.import_module(module)
    return getattr(found, attr) if attr else found


def layouts() -> Iterator[tuple[str, str]]:
    """Yield (``module:Class`` of a result, ``module:function`` of its text layout)."""
    for q in QUESTIONS:
        yield from q.layouts.items()


def type_name(value: object) -> str:
    """Return ``module:Class`` of ``value``'s type, as ``layouts`` names it."""
    kind = type(value)
    return f"{kind.__module__}:{kind.__qualname__}"
