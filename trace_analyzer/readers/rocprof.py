"""rocprofiler-sdk JSON (top-level key ``rocprofiler-sdk-tool``): recognised, and not read.

AMD's rocprofiler writes its own trace format, not a Kineto trace; traceana reads the
Kineto traces ``torch.profiler`` writes on ROCm. A path that holds nothing but such files
is refused with a line naming the format (loading/profile.py).
"""

from __future__ import annotations

from typing import Any

from trace_analyzer.inputs.discover import Source
from trace_analyzer.readers.common import ReadResult
from trace_analyzer.readers.format import Format

NAME = "rocprofiler-sdk"
NOTE = (
    "rocprofiler-sdk JSON (rocprofiler's own format), not a Kineto trace: not read; "
    "profile with torch.profiler to get a trace.json traceana reads"
)


def sniff(doc: dict[str, Any]) -> bool:
    """Return True for rocprofiler-sdk's top level."""
    return "rocprofiler-sdk-tool" in doc


def read(src: Source, doc: dict[str, Any]) -> ReadResult:
    """Return the source as recognised and skipped."""
    return ReadResult.skipped(src, NAME, NOTE)


FORMAT = Format(NAME, "rocprofiler-sdk JSON, not read", "json", sniff=sniff, read=read)
