"""The readers' registry: every format traceana reads, and ``read_source``.

The registry is ``REGISTRY``: each reader module declares the format it reads (``FORMAT``, a
``format.Format``) and is listed there once. ``read_source`` reads a discovered source with
the formats of its source kind: each one's streaming ``read_path`` first, then the JSON
parsed once and sniffed by its top-level keys, in registry order. Adding a format is one
module and one line in ``REGISTRY``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.discover import Source
from trace_analyzer.readers import (
    chrome_array,
    device_json,
    execution_trace,
    explorer_json,
    explorer_parquet,
    kineto,
    perfetto,
    rocprof,
    rocprof_tracer,
)
from trace_analyzer.readers.common import ReadResult, load_json
from trace_analyzer.readers.format import Format

if TYPE_CHECKING:
    from trace_analyzer.model.schema import Args

__all__ = ["FORMATS", "REGISTRY", "Format", "ReadResult", "read_source", "sniff"]

# Every format traceana recognises, in the order a JSON document is sniffed.
REGISTRY: tuple[Format, ...] = (
    rocprof_tracer.FORMAT,  # before Kineto's streaming reader, which would read it as Kineto
    kineto.FORMAT,
    chrome_array.FORMAT,
    explorer_json.FORMAT,
    explorer_parquet.FORMAT,
    execution_trace.FORMAT,
    rocprof.FORMAT,
    device_json.FORMAT,
    perfetto.FORMAT,
)
FORMATS: Mapping[str, Format] = {f.name: f for f in REGISTRY}  # format name -> declaration


def sniff(doc: object) -> str | None:
    """Return the format of a parsed JSON document, or None when it is not a trace we read."""
    for fmt in REGISTRY:
        if fmt.sniff is not None and isinstance(doc, fmt.top) and fmt.sniff(doc):
            return fmt.name
    return None


def read_source(
    src: Source,
    keep_args: Args = False,
    *,
    max_bytes: int | None = None,
    in_order: bool = False,
) -> ReadResult | None:
    """Read one source with the first format of its kind that takes it.

    Returns a ReadResult (``read`` False when the format is recognised and skipped, or when
    a JSON file found in a folder is not a trace). A file the user named directly must be a
    trace: anything else is an InputError. ``keep_args`` keeps every record's args as JSON
    text (``args_json``); ``max_bytes`` caps what a compressed input may inflate to
    (limits.py; None: an archive member's own cap, else the default); ``in_order``: the
    source is its run's only one (format.PathReader).
    """
    formats = [f for f in REGISTRY if f.source_kind == src.kind]
    for fmt in formats:
        if fmt.read_path is not None:
            result = fmt.read_path(src, keep_args, max_bytes=max_bytes, in_order=in_order)
            if result is not None:
                return result
    if not any(f.read is not None for f in formats):
        raise InputError(str(src.path), f"no reader takes a {src.kind} source")
    if not src.named and _empty(src):  # `traceana gaps P --format json > P/gaps.json`
        return ReadResult.skipped(src, "json", EMPTY)
    doc = load_json(src.path, max_bytes=max_bytes)
    for fmt in formats:
        if fmt.sniff is not None and fmt.read is not None and isinstance(doc, fmt.top):
            if fmt.sniff(doc):
                return fmt.read(src, doc)
    what = "a JSON object" if isinstance(doc, dict) else f"a JSON {type(doc).__name__}"
    problem = own_output(doc) or f"{what} without traceEvents (nor trace_event): not a trace"
    if src.named:
        raise InputError(str(src.path), problem)
    return ReadResult.skipped(src, "json", problem)


EMPTY = "an empty file (one being written, as by a redirect into this folder?): not read"


def _empty(src: Source) -> bool:
    """True when a source found in a folder is a plain file of no bytes."""
    if not isinstance(src.path, Path):  # an archive member: read and judged as it is
        return False
    try:
        return src.path.stat().st_size == 0
    except OSError:
        return False


def own_output(doc: object) -> str | None:
    """Return what traceana output ``doc`` is, when it is one of traceana's own JSON outputs
    (``--format json`` of an analysis, ``traceana graph``'s node-link JSON), else None."""
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("runs"), list) and "schema_version" in doc and "path" in doc:
        return "traceana's own JSON output (`--format json` of an analysis): not a trace"
    if {"directed", "nodes", "edges"} <= doc.keys() and isinstance(doc["nodes"], list):
        return "a graph in node-link JSON (as `traceana graph` writes): not a trace"
    return None
