"""JSON: the stable, versioned, machine-readable form of every result."""

from __future__ import annotations

import re
from typing import Any

import orjson

from trace_analyzer.analyses.results import RunResults
from trace_analyzer.analyses.rows import json_default
from trace_analyzer.render.view import View

# What orjson writes as it is but a terminal would act on or reorder (DEL, C1, bidirectional
# marks, overrides and isolates) or JavaScript once read as a line end: written as \u
# escapes, which parse back to the same characters. orjson escapes C0 itself.
UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def dumps(doc: object) -> str:
    """Return plain data ``doc`` as indented JSON (integers stay integers: times are ns).

    Names stay exactly as the trace wrote them, and the text holds no character a terminal
    acts on: those only occur inside JSON strings, so each is written as its ``\\u`` escape.
    """
    option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    text = orjson.dumps(doc, default=json_default, option=option).decode()
    return UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text) + "\n"


def render(result: RunResults[Any], *, options: View = View()) -> str:
    """Return a result's ``to_json()`` as indented JSON (``options`` change nothing here)."""
    return dumps(result.to_json())


def parsed(result: RunResults[Any]) -> dict[str, Any]:
    """Return a result as its JSON output says it, parsed back (what the pages draw from)."""
    doc: dict[str, Any] = orjson.loads(render(result))
    return doc
