"""PyTorch Execution Trace (Chakra): recognised by its top-level keys, and not read.

An execution trace (``ExecutionTraceObserver``, ``*_et.json[.gz]``) is a JSON object with
``nodes`` and ``schema``: the graph of ops a step ran, without their times. It often sits
beside the Kineto trace of the same run; it is a source skipped with a note, not an error,
unless nothing else under the path is a trace (loading/profile.py).
"""

from __future__ import annotations

from typing import Any

from trace_analyzer.inputs.discover import Source
from trace_analyzer.readers.common import ReadResult
from trace_analyzer.readers.format import Format

NAME = "execution-trace"
NOTE = "a PyTorch execution trace (Chakra), not a timing trace: not read"


def sniff(doc: dict[str, Any]) -> bool:
    """Return True for an execution trace's top level: ``nodes`` and ``schema``."""
    return "nodes" in doc and "schema" in doc


def read(src: Source, doc: dict[str, Any]) -> ReadResult:
    """Return the source as recognised and skipped."""
    return ReadResult.skipped(src, NAME, NOTE)


FORMAT = Format(NAME, "PyTorch Execution Trace (Chakra), not read", "json", sniff=sniff, read=read)
