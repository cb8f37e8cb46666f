"""JSON: the stable, versioned, machine-readable form of every result."""

from __future__ import annotations

import orjson

from trace_analyzer.analyses.rows import json_default


def render(kind: str, data: dict) -> str:
    """Return ``data`` as indented JSON (integers stay integers: times are ns)."""
    data = {k: v for k, v in data.items() if k != "view"}  # presentation only
    return (
        orjson.dumps(
            data, default=json_default, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        ).decode()
        + "\n"
    )
