"""``capture.json``: what `python -m capture` profiled, and how (docs/capture.md)."""

from __future__ import annotations

from pathlib import Path

import orjson

from trace_analyzer.inputs.discover import CAPTURE_JSON


def read_capture_json(path: Path) -> dict | None:
    """Return the parsed capture.json, or None when absent or unreadable."""
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


def capture_backend(folder: Path) -> str | None:
    """Return the backend a capture.json in ``folder`` names (cpu, cuda, neuron), if any."""
    doc = read_capture_json(folder / CAPTURE_JSON)
    return doc.get("backend") if doc else None
