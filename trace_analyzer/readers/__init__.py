"""Readers: one module per input format, each returning rows of the events table.

``read_source`` is the registry: it opens a discovered source, decides its format (JSON
files are sniffed by their top-level keys) and hands it to the reader that owns the format.
"""

from __future__ import annotations

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.discover import Source
from trace_analyzer.readers import explorer_json, explorer_parquet, kineto
from trace_analyzer.readers.common import ReadResult, load_json

__all__ = ["ReadResult", "read_source", "FORMATS"]

# format name -> (what it is, the reader). Adding a format is one entry here and one module.
FORMATS = {
    "kineto-json": ("PyTorch profiler (Kineto) Chrome trace", kineto.read),
    "explorer-parquet": ("Neuron Explorer Parquet export", explorer_parquet.read),
    "explorer-json": ("Neuron Explorer legacy JSON export", explorer_json.read),
}


def sniff(doc: object) -> str | None:
    """Return the format of a parsed JSON document, or None when it is not a trace we read."""
    if not isinstance(doc, dict):
        return None
    if "traceEvents" in doc:
        return "kineto-json"
    if "trace_event" in doc or "trace_events" in doc:
        return "explorer-json"
    if "nodes" in doc and "schema" in doc:
        return "execution-trace"
    return None


def read_source(
    src: Source, keep_args: bool = False, *, max_bytes: int | None = None
) -> ReadResult | None:
    """Read one source; return None when a JSON file found in a folder is not a trace.

    A file the user named directly must be a trace: anything else is an InputError.
    Kineto traces are read by the streaming path when it can (``kineto.read_fast``), else
    parsed whole; ``keep_args`` keeps every record's args as JSON text (``args_json``).
    """
    if src.kind == "explorer-parquet":
        return explorer_parquet.read(src)
    fast = kineto.read_fast(src, keep_args)
    if fast is not None:
        return fast
    doc = load_json(src.path)
    fmt = sniff(doc)
    if fmt == "execution-trace":
        return ReadResult.skipped(src, fmt, "PyTorch Execution Trace (Chakra): not read")
    if fmt is None:
        what = "a JSON object" if isinstance(doc, dict) else f"a JSON {type(doc).__name__}"
        problem = f"{what} without traceEvents (nor trace_event): not a trace"
        if src.named:
            raise InputError(src.path, problem)
        return ReadResult.skipped(src, "json", problem)
    return FORMATS[fmt][1](src, doc)
