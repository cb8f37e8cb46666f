"""Modules of about 100-350 lines, none over 400, and no function over 60 (issue 14)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "trace_analyzer"
MODULE_LINES, FUNCTION_LINES = 400, 60


def test_no_module_over_400_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MODULE_LINES}
    assert not long, long


def test_no_function_over_60_lines():
    long = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1  # def line to last line, no decorators
                if n > FUNCTION_LINES:
                    long[f"{path.relative_to(PACKAGE)}:{node.name}"] = n
    assert not long, long
