"""traceana: offline analysis of exported accelerator profiles (Neuron, Kineto).

    import trace_analyzer as ta
    p = ta.load("./profile_out")      # one run: p.events, p.edges (polars DataFrames)
    g = ta.gaps(p)                    # GapsResult: g.summary, g.devices, g.gaps, g.ops
    o = ta.ops(p)                     # OpsResult: the offline key_averages(), o.table
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

from pathlib import Path
from typing import Any

from trace_analyzer._version import __version__
from trace_analyzer.analyses.chain import ChainResult
from trace_analyzer.analyses.chain import chains as chains
from trace_analyzer.analyses.diff import DiffResult
from trace_analyzer.analyses.diff import diff as diff
from trace_analyzer.analyses.gaps import GapsResult, Window
from trace_analyzer.analyses.gaps import gaps as gaps
from trace_analyzer.analyses.info import InfoResult
from trace_analyzer.analyses.info import info as info
from trace_analyzer.analyses.ops import OpsResult
from trace_analyzer.analyses.ops import ops as ops
from trace_analyzer.analyses.results import RunResults
from trace_analyzer.cache import Cache, as_cache
from trace_analyzer.core import profile as _profile
from trace_analyzer.core.profile import Profile
from trace_analyzer.core.schema import EVENTS_SCHEMA, LANE_KINDS
from trace_analyzer.errors import InputError, TraceanaError, UsageError
from trace_analyzer.inputs.discover import discover

__all__ = [
    "EVENTS_SCHEMA", "LANE_KINDS", "Cache", "ChainResult", "DiffResult", "GapsResult",
    "InfoResult", "InputError", "OpsResult", "Profile", "RunResults", "TraceanaError",
    "UsageError", "Window", "__version__", "chains", "diff", "discover", "export", "gaps",
    "info", "load", "load_runs", "ops",
]  # fmt: skip


def load(
    path: str | Path,
    *,
    args: bool = False,
    strict: bool = False,
    max_bytes: int | None = None,
    cache: Cache | bool | str | Path | None = None,
) -> Profile:
    """Return the one run under ``path`` (a profile folder, a trace file, an archive).

    ``args``: keep each Kineto record's args as JSON text (``export`` shows them).
    ``strict``: malformed events are an InputError instead of a warning. ``max_bytes``: the
    most a compressed input may inflate to (default 16 GiB). ``cache``: None or False (the
    default) reads the files every time and writes nothing; True keeps the analysis cache in
    ``.traceana-cache/`` inside the named folder; a folder keeps it there (docs/cache.md).
    Several runs under ``path`` are a UsageError that names them: use ``load_runs``.
    """
    store = as_cache(cache)
    if store is None:
        return _profile.load(path, args=args, strict=strict, max_bytes=max_bytes)
    return store.load(path, args=args, strict=strict, max_bytes=max_bytes)


def load_runs(
    path: str | Path,
    *,
    args: bool = False,
    strict: bool = False,
    max_bytes: int | None = None,
    cache: Cache | bool | str | Path | None = None,
) -> list[Profile]:
    """Return every run under ``path`` (a folder of many runs, an archive), each loaded.

    ``args``, ``strict``, ``max_bytes`` and ``cache`` are those of ``load``.
    """
    store = as_cache(cache)
    if store is None:
        return _profile.load_runs(path, args=args, strict=strict, max_bytes=max_bytes)
    return store.load_runs(path, args=args, strict=strict, max_bytes=max_bytes)


def export(
    profile: Profile, output: str | Path | None = None, *, source: str | None = None
) -> dict[str, Any]:
    """Return one run as a Chrome/Perfetto trace document, with its links and gaps drawn in.

    ``output``: also write it there (``.json``, or ``.json.gz`` compressed). ``source``: the
    trace's name (default: the run's root). Load with ``args=True`` to keep the events' args.
    """
    from trace_analyzer.render import perfetto

    doc = perfetto.build(profile, gaps(profile), source=source)
    if output is not None:
        perfetto.write(doc, Path(output))
    return doc


def __dir__() -> list[str]:
    """``dir(trace_analyzer)``: the library's face, not the subpackages it is made of."""
    return sorted(__all__)
