"""traceana: offline analysis of exported accelerator profiles (Neuron, Kineto).

import trace_analyzer as ta
p = ta.load("./profile_out")      # one run: its events table is p.events
g = ta.gaps(p)                    # idle gaps: g.summary, g.lanes, g.gaps, g.ops
runs = ta.load_runs("./archive")  # every run under a folder
"""

from __future__ import annotations

from trace_analyzer._version import __version__  # noqa: E402
from trace_analyzer.analyses.gaps import GapsResult, gaps  # noqa: E402
from trace_analyzer.core.profile import Profile, load, load_runs  # noqa: E402
from trace_analyzer.core.schema import EVENTS_SCHEMA, LANE_KINDS  # noqa: E402
from trace_analyzer.errors import InputError, TraceanaError, UsageError  # noqa: E402
from trace_analyzer.inputs.discover import discover  # noqa: E402

__all__ = [
    "EVENTS_SCHEMA",
    "GapsResult",
    "LANE_KINDS",
    "InputError",
    "Profile",
    "TraceanaError",
    "UsageError",
    "discover",
    "gaps",
    "load",
    "load_runs",
]
