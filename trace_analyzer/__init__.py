"""traceana: offline analysis of exported accelerator profiles (Neuron, Kineto).

    import trace_analyzer as ta
    p = ta.load("./profile_out")      # one run: p.events, p.edges (polars DataFrames)
    g = ta.gaps(p)                    # GapsResult: g.summary, g.devices, g.gaps, g.ops
    o = ta.ops(p)                     # OpsResult: the offline key_averages(), o.table
    r = ta.ranks(p)                   # RanksResult: per rank and step, comm vs compute
    k = ta.kernels(p)                 # KernelsResult: kernels (Neuron: NEFFs) by device time
    e = ta.engines(ta.load_device("./profile_out"))  # EnginesResult: device profiles, per
                                      # NEFF and core: engines, MFU, roofline
    q = ta.launches(p)                # LaunchesResult: per lane, launch latency and queue
    c = ta.chains(p, op="aten::*")    # ChainResult: op → dispatch → runtime → hardware
    d = ta.diff(ta.load("base/"), p)  # DiffResult: verdict, metrics, ops that changed
    ta.info(p)                        # InfoResult: sources, processes, lanes by kind
    ta.export(ta.load("./profile_out", args=True), "annotated.json")  # for the Perfetto UI
    runs = ta.load_runs("./archive")  # every run under a folder

Every result is a frozen dataclass of polars frames and scalars with ``to_json()`` (the
command's JSON output for that run), ``to_pandas()``, and a summary table in Jupyter
(docs/library.md).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_analyzer._version import __version__
from trace_analyzer.questions import QUESTIONS

if TYPE_CHECKING:
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.batch import BatchResult, run_batch
    from trace_analyzer.cache import Cache
    from trace_analyzer.errors import InputError, TraceanaError, UsageError
    from trace_analyzer.inputs.discover import discover
    from trace_analyzer.loading.profile import Profile
    from trace_analyzer.model.device import DeviceRun
    from trace_analyzer.model.schema import EVENTS_SCHEMA, LANE_KINDS, Args
    from trace_analyzer.questions.chain.analysis import ChainResult, chains
    from trace_analyzer.questions.diff.analysis import DiffResult, diff
    from trace_analyzer.questions.diff.sides import baseline
    from trace_analyzer.questions.engines.analysis import EnginesResult, engines
    from trace_analyzer.questions.gaps.analysis import GapsResult, Window, gaps
    from trace_analyzer.questions.graph.writer import graph
    from trace_analyzer.questions.info.analysis import InfoResult, info
    from trace_analyzer.questions.kernels.analysis import KernelsResult, kernels
    from trace_analyzer.questions.launches.analysis import LaunchesResult, launches
    from trace_analyzer.questions.ops.analysis import OpsResult, ops
    from trace_analyzer.questions.ranks.analysis import RanksResult, ranks
    from trace_analyzer.questions.report.analysis import ReportResult, report
    from trace_analyzer.questions.tables.analysis import tables
    from trace_analyzer.questions.trend.analysis import TrendResult, trend
    from trace_analyzer.readers.device_profile import load_device

# The face, imported on first use (PEP 562): ``import trace_analyzer`` (and so the
# ``traceana`` command, which lives in this package) loads no polars until a name needs it.
# Each question's names come from the questions' registry (``face``, from its analysis).
_LAZY = {
    "RunResults": "analyses.results", "Cache": "cache", "Profile": "loading.profile",
    "EVENTS_SCHEMA": "model.schema", "LANE_KINDS": "model.schema",
    "InputError": "errors", "TraceanaError": "errors", "UsageError": "errors",
    "discover": "inputs.discover",
    "DeviceRun": "model.device", "load_device": "readers.device_profile",
}  # fmt: skip
_LAZY = {name: f"{__name__}.{where}" for name, where in _LAZY.items()}

# The names above and each question's (the registry's ``face``), as first registered.
__all__ = [
    "EVENTS_SCHEMA", "LANE_KINDS", "Cache", "ChainResult", "DiffResult", "GapsResult",
    "InfoResult", "InputError", "KernelsResult", "LaunchesResult", "OpsResult", "Profile",
    "RanksResult", "RunResults", "TraceanaError", "UsageError", "Window", "__version__",
    "chains", "diff", "discover", "export", "gaps", "info", "kernels", "launches", "load",
    "load_runs", "ops", "ranks", "report", "ReportResult", "tables", "trend", "TrendResult",
    "run_batch", "BatchResult", "graph", "baseline",
    "EnginesResult", "engines", "DeviceRun", "load_device", "critical", "CriticalResult", "Asked",
]  # fmt: skip


def _where(name: str) -> str | None:
    """The module offering the face's ``name``: one of ``_LAZY``, else a question's analysis
    that the registry says offers it (a question registered later is found too)."""
    found = _LAZY.get(name)
    if found is None:
        found = next((q.analysis for q in QUESTIONS if q.analysis and name in q.face), None)
    return found


def __getattr__(name: str) -> Any:
    """Import a name of the face on first use (PEP 562), then keep it here."""
    where = _where(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def load(
    path: str | Path,
    *,
    args: Args = False,
    strict: bool = False,
    max_bytes: int | None = None,
    cache: Cache | bool | str | Path | None = None,
    run: str | None = None,
) -> Profile:
    """Return the one run under ``path`` (a profile folder, a trace file, an archive).

    ``args``: keep each event's args as JSON text, ``args_json`` (``export`` shows them);
    ``"later"`` (``LATER``): where a plain Kineto trace's lie in its file, ``args_at``, read
    when written (``traceana export``: loading/args_at.py), the text of the others;
    ``"collectives"``: the same, but of a compressed Kineto trace only its collectives' args
    (``traceana ranks``: docs/distributed.md).
    ``strict``: malformed events are an InputError instead of a warning. ``max_bytes``: the
    most a compressed input may inflate to (default: an eighth of the memory, at most 16 GiB).
    ``cache``: None or False (the default) reads the files every time and writes nothing;
    True keeps the analysis cache in traceana's folder of the user's cache directory
    (``~/.cache/traceana``); a folder keeps it there; ``Cache(in_profile=True)`` (from
    ``trace_analyzer.cache``) in ``.traceana-cache/`` inside the named folder (docs/cache.md).
    ``run``: which run, when ``path`` holds several: its folder below ``path``, a part of a
    folder of traces recorded far apart, or one of its files (docs/formats.md, "Layouts and
    runs").
    Several runs under ``path`` and no ``run`` are a UsageError that names them (or use
    ``load_runs``).
    """
    from trace_analyzer.cache import as_cache
    from trace_analyzer.loading import profile as _profile

    store = as_cache(cache)
    if store is None:
        return _profile.load(path, args=args, strict=strict, max_bytes=max_bytes, run=run)
    return store.load(path, args=args, strict=strict, max_bytes=max_bytes, run=run)


def load_runs(
    path: str | Path,
    *,
    args: Args = False,
    strict: bool = False,
    max_bytes: int | None = None,
    cache: Cache | bool | str | Path | None = None,
    run: str | None = None,
) -> list[Profile]:
    """Return every run under ``path`` (a folder of many runs, an archive), each loaded; a
    folder whose traces were recorded far apart is a run per part.

    ``args``, ``strict``, ``max_bytes``, ``cache`` and ``run`` are those of ``load``.
    """
    from trace_analyzer.cache import as_cache
    from trace_analyzer.loading import profile as _profile

    store = as_cache(cache)
    if store is None:
        return _profile.load_runs(path, args=args, strict=strict, max_bytes=max_bytes, run=run)
    return store.load_runs(path, args=args, strict=strict, max_bytes=max_bytes, run=run)


def export(
    profile: Profile, output: str | Path | None = None, *, source: str | None = None
) -> dict[str, Any]:
    """Return one run as a Chrome/Perfetto trace document, with its links, gaps and critical
    path drawn in.

    ``output``: also write it there (``.json``, or ``.json.gz`` compressed). ``source``: the
    trace's name (default: the run's root). Load with ``args=True`` (or ``"later"``: read
    from the file as written) for the events' args.
    """
    from trace_analyzer.questions.critical.analysis import critical
    from trace_analyzer.questions.export import perfetto
    from trace_analyzer.questions.gaps.analysis import gaps

    doc = perfetto.build(profile, gaps(profile), source=source, critical=critical(profile))
    if output is not None:
        perfetto.write(doc, Path(output))
    return doc


def __dir__() -> list[str]:
    """``dir(trace_analyzer)``: the library's face, not the subpackages it is made of."""
    return sorted({*__all__, *(name for q in QUESTIONS for name in q.face)})
