"""JSON: the stable, versioned, machine-readable form of every result."""

from __future__ import annotations

from typing import Any

import orjson

from trace_analyzer.analyses.results import RunResults
from trace_analyzer.analyses.rows import json_default
from trace_analyzer.render.view import View


def dumps(doc: object) -> str:
    """Return plain data ``doc`` as indented JSON (integers stay integers: times are ns)."""
    option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    return orjson.dumps(doc, default=json_default, option=option).decode() + "\n"


def render(result: RunResults[Any], *, options: View = View()) -> str:
    """Return a result's ``to_json()`` as indented JSON (``options`` change nothing here)."""
    return dumps(result.to_json())


def parsed(result: RunResults[Any]) -> dict[str, Any]:
    """Return a result as its JSON output says it, parsed back (what the pages draw from)."""
    doc: dict[str, Any] = orjson.loads(render(result))
    return doc
