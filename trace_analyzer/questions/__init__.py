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
    """A question's part of ``traceana report``: computed from the report's run, embedded in
    the page as its JSON (``traceana-<name>``, its long lists cut) and drawn from that JSON,
    parsed back, as one section of the page (and of the Markdown report, when it has one).

    ``compute``: ``module:function`` returning the part's result (a ``RunResult``) of the
    run's ``Profile``, or with ``device`` of its device-profile exports (a ``DeviceRun``),
    only when the run holds some: without, the part is absent (no section, no JSON), and
    where they could not be read its section is the note saying why. ``section``:
    ``module:function(run_json, png | None) -> html``, the result's run as the page embeds
    it and its plot (None with ``--no-images``). ``command``: what prints the same JSON,
    ``{path}`` for the run (the page's Data list names it). ``plot``: ``module:function(
    run_json) -> png bytes``, optional. ``markdown``: ``module:function(run_json, image |
    None) -> str``, the part's section of the Markdown report, ``image`` its plot's file
    beside the .md (``<stem>.<the plot function's name>.png``; None with ``--no-images``);
    without, the part is on the page only. ``cuts``: the result's frames cut to their first
    rows before embedding (the page's ``LIST_CAP``), each saying so under its run's
    ``listed``. ``order``: the part's place on the page, after the report's own sections,
    lowest first (the registry's order among equals). ``headline``: the key of the part's
    JSON run that holds a one-line sentence the report opens with (in its header, and under
    the Markdown report's title), if it has one.
    """

    compute: str
    section: str
    command: str
    plot: str | None = None
    markdown: str | None = None
    cuts: tuple[str, ...] = ()
    device: bool = False
    order: int = 100
    headline: str | None = None


@dataclass(frozen=True)
class Question:
    """One question: its command, its place in the face, its layouts and its report part.

    ``name``: the command's name; ``summary``: the first paragraph of its help (listed by
    ``traceana --help`` with nothing imported; tests/cli/test_startup.py holds it to the
    command's own); ``command``: the module holding the click command; ``face``: the names
    ``import trace_analyzer as ta`` offers from ``analysis`` (never a subpackage's name:
    ``ta.batch`` is the package of ``ta.run_batch``); ``layouts``: a result type
    (``module:Class``) to its text layout (``module:function(result, style, view) -> blocks``);
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
        "later.", _q("diff.command"), _q("diff.sides"), ("baseline",),
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
        "critical", "The critical path of each step and a what-if replay that ranks the fixes "
        "by time saved.", _q("critical.command"), _q("critical.analysis"),
        ("critical", "CriticalResult", "Asked"),
        {_q("critical.analysis:CriticalResult"): _q("critical.text:critical_layout")},
        answers=True,
        report=Part(
            _q("critical.analysis:critical"), _q("critical.html:critical_section"),
            "traceana critical {path} --format json",
            markdown=_q("critical.text_report:critical_markdown"),
            cuts=("path", "kinds", "steps"), order=0, headline="verdict",
        ),
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
        report=Part(
            _q("engines.analysis:engines"), _q("engines.html:engines_section"),
            "traceana engines {path} --format json", plot=_q("engines.plots:roofline"),
            markdown=_q("engines.text_report:engines_markdown"),
            cuts=("neffs", "cores", "engines", "tops", "roofline", "comparison"), device=True,
            order=4,
        ),
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
        report=Part(
            _q("kernels.analysis:kernels"), _q("kernels.html:kernels_section"),
            "traceana kernels {path} --format json", plot=_q("kernels.plots:kernels"),
            cuts=("kernels",), order=2,
        ),
    ),
    Question(
        "launches", "Per lane: launch latency and delay, queue length over time, time blocked "
        "on a full queue.", _q("launches.command"), _q("launches.analysis"),
        ("launches", "LaunchesResult"),
        {_q("launches.analysis:LaunchesResult"): _q("launches.text:launches_layout")},
        report=Part(
            _q("launches.busiest:busiest_launches"), _q("launches.html:launches_section"),
            "traceana launches {path} --format json (the queue of the busiest lanes)",
            plot=_q("launches.plots:launches"), cuts=("lanes",), order=3,
        ),
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
        report=Part(
            _q("ranks.analysis:ranks"), _q("ranks.html:ranks_section"),
            "traceana ranks {path} --format json", plot=_q("ranks.plots:ranks"),
            cuts=("steps", "stragglers", "collectives"), order=1,
        ),
    ),
    Question(
        "report", "One page for one run: timeline, gap histogram, summary, ops and gaps; with "
        "--base, the diff.", _q("report.command"), _q("report.analysis"),
        ("report", "ReportResult"),
    ),
    Question(
        "tables", "Write one run's tables as Parquet: events, edges, chains, gaps, devices, ops.",
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
