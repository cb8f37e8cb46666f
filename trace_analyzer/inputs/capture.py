"""``capture.json``: what `python -m capture` profiled, and how (docs/capture.md)."""

from __future__ import annotations

from typing import Any

import orjson

from trace_analyzer.inputs.archive import AnyPath
from trace_analyzer.inputs.discover import CAPTURE_JSON


def read_capture_json(path: AnyPath) -> dict[str, Any] | None:
    """Return the parsed capture.json, or None when absent or unreadable."""
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


def capture_backend(folder: AnyPath) -> object:
    """Return the backend a capture.json in ``folder`` names (cpu, cuda, neuron), if any.

    The value as written: a str in a capture.json that ``python -m capture`` wrote, anything
    in one written by hand (callers compare it, never use it as text).
    """
    doc = read_capture_json(folder / CAPTURE_JSON)
    return doc.get("backend") if doc else None
