"""Size as a smell, not a cap (issue 33): files are split by meaning, never named for overflow.

A module over ``MODULE_LINES`` lines says why in its docstring (a paragraph starting
``Size:``); no module is named as the overflow of another (``html_more.py``,
``plots_2.py``); no function is over ``FUNCTION_LINES`` lines (issue 14).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "trace_analyzer"
MODULE_LINES, FUNCTION_LINES = 500, 60
OVERFLOW = re.compile(r"(_more|_extra|_misc|_rest|_other|_part|_cont|\d)$")


def says_no_reason(text: str) -> bool:
    """Whether a module's ``text`` is over MODULE_LINES and its docstring gives no ``Size:``."""
    doc = ast.get_docstring(ast.parse(text)) or ""
    return len(text.splitlines()) > MODULE_LINES and not re.search(r"^Size: \S", doc, re.M)


def named_for_overflow(names: list[str]) -> list[str]:
    """The module names (stems) among ``names`` that read as another module's overflow."""
    return [n for n in names if OVERFLOW.search(n) and not n.startswith("_")]


def test_a_long_module_says_why():
    long = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if says_no_reason(p.read_text())]
    assert not long, long


def test_no_module_is_named_for_overflow():
    stems = [p.stem for p in PACKAGE.rglob("*.py")]
    assert not named_for_overflow(stems)


def test_the_smells_are_found():
    assert named_for_overflow(["html_more", "plots_2", "text_diff", "analysis", "_kscan"]) == [
        "html_more", "plots_2"]
    body = "\n".join(f"x{i} = {i}" for i in range(MODULE_LINES + 1))
    assert says_no_reason(f'"""Long."""\n{body}\n')
    assert not says_no_reason(f'"""Long.\n\nSize: a table of codes, one per line."""\n{body}\n')
    assert not says_no_reason('"""Short."""\nx = 1\n')


def test_no_function_over_60_lines():
    long = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1  # def line to last line, no decorators
                if n > FUNCTION_LINES:
                    long[f"{path.relative_to(PACKAGE)}:{node.name}"] = n
    assert not long, long
