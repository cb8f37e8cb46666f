"""The package's layer rules (issue 14), checked on the source: every module of trace_analyzer/
is parsed with ``ast`` (nothing is imported) and every import of a trace_analyzer module is
collected, those inside functions too, relative ones resolved.

RULES is the whole contract (docs/architecture.md copies it). For each layer, ``holds``: the
modules in it ("x.*" is the package x and every module under it; "x" with "x.*": a module
that may become a package); ``may_import``: what it may import besides its own layer, layers
by name or single modules by dotted name (readers use three modules of core). The face (the
package's ``__init__.py``) is in no layer's list, so importing the package root from any
other module (``import trace_analyzer``, or ``from trace_analyzer import X`` where X is not
a submodule) is reported as an upward import. Imports under ``if TYPE_CHECKING:`` count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RULES: dict[str, dict[str, tuple[str, ...]]] = {
    "base": {
        "holds": ("trace_analyzer.errors", "trace_analyzer.units", "trace_analyzer.numbers",
                  "trace_analyzer.atomic",
                  "trace_analyzer._version"),
        "may_import": (),  # base only (units imports errors)
    },
    "inputs": {
        "holds": ("trace_analyzer.inputs.*",),
        "may_import": ("base",),
    },
    "readers": {
        "holds": ("trace_analyzer.readers.*",),
        "may_import": ("base", "inputs", "trace_analyzer.core.schema",
                       "trace_analyzer.core.intervals",
                       "trace_analyzer.core.device"),  # of core, these three modules only
    },
    "core": {
        "holds": ("trace_analyzer.core.*",),
        "may_import": ("base", "inputs", "readers"),
    },
    "analyses": {
        "holds": ("trace_analyzer.analyses.*",),
        "may_import": ("base", "inputs", "core"),
    },
    "render": {
        "holds": ("trace_analyzer.render.*",),
        "may_import": ("base", "core", "analyses"),
    },
    "cache": {
        "holds": ("trace_analyzer.cache", "trace_analyzer.cache.*"),  # a module, or a package
        "may_import": ("base", "inputs", "core", "analyses"),
    },
    "batch": {
        "holds": ("trace_analyzer.batch.*",),
        "may_import": ("base", "inputs", "readers", "core", "analyses", "render", "cache"),
    },
    "cli": {
        "holds": ("trace_analyzer.cli", "trace_analyzer.cli.*"),  # a module, or a package
        "may_import": ("base", "inputs", "readers", "core", "analyses", "render", "cache",
                       "batch"),
    },
    "face": {
        "holds": ("trace_analyzer",),
        "may_import": ("base", "inputs", "readers", "core", "analyses", "render", "cache"),
    },
}

PACKAGE = "trace_analyzer"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its __init__.py)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def layer_of(module: str) -> str | None:
    """The layer holding ``module``, or None when no layer does."""
    for layer, rule in RULES.items():
        for pattern in rule["holds"]:
            if pattern.endswith(".*"):
                if module == pattern[:-2] or module.startswith(pattern[:-1]):
                    return layer
            elif module == pattern:
                return layer
    return None


def imports(module: str, source: str, is_package: bool, known: set[str]) -> list[str]:
    """The trace_analyzer modules ``module`` imports, anywhere in its source.

    ``from A import X`` imports A.X when that is a module of the package, else A itself.
    """
    here = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = here.split(".")
                if node.level > 1:
                    base_parts = base_parts[: -(node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.append(sub if sub in known else base)
    return [m for m in found if m == PACKAGE or m.startswith(PACKAGE + ".")]


def breaks(module: str, target: str) -> str | None:
    """Why ``module`` may not import ``target``, or None when it may."""
    mine, theirs = layer_of(module), layer_of(target)
    if mine is None:
        return f"{module} is in no layer of RULES"
    if theirs is None:
        return f"{target} is in no layer of RULES"
    if mine == theirs:
        return None
    if theirs == "face":
        return "upward import: only the face imports the package root"
    allowed = RULES[mine]["may_import"]
    if theirs in allowed or target in allowed:
        return None
    if mine == "readers" and theirs == "core":
        return "readers may import of core only " + ", ".join(
            m for m in allowed if m.startswith(PACKAGE + "."))
    return f"{mine} may not import {theirs}"


def violations(sources: dict[str, tuple[str, bool]], known: set[str]) -> list[str]:
    """``module -> imported module (rule)`` for every import that breaks RULES.

    ``sources`` maps a module name to (its source text, whether it is a package).
    """
    out = []
    for module, (source, is_package) in sorted(sources.items()):
        for target in sorted(set(imports(module, source, is_package, known))):
            why = breaks(module, target)
            if why:
                out.append(f"{module} -> {target} ({why})")
    return out


def tree_sources() -> tuple[dict[str, tuple[str, bool]], set[str]]:
    found = modules()
    sources = {m: (p.read_text(encoding="utf-8"), p.name == "__init__.py")
               for m, p in found.items()}
    return sources, set(found)


def test_every_module_keeps_to_the_layer_rules():
    sources, known = tree_sources()
    assert PACKAGE in known and len(known) > 20  # the walk found the package
    bad = violations(sources, known)
    assert not bad, "layer rules broken:\n" + "\n".join(bad)


# --- the checker itself ------------------------------------------------------------------------

@pytest.mark.parametrize("module,source,expect", [
    # (i) an analysis importing the cache (as a submodule of the root, inside a function,
    # and relatively)
    ("trace_analyzer.analyses.fake", "from trace_analyzer import cache\n",
     "trace_analyzer.analyses.fake -> trace_analyzer.cache (analyses may not import cache)"),
    ("trace_analyzer.analyses.fake", "def f():\n    import trace_analyzer.cache\n",
     "trace_analyzer.analyses.fake -> trace_analyzer.cache (analyses may not import cache)"),
    ("trace_analyzer.analyses.fake", "from ..cache import load_result\n",
     "trace_analyzer.analyses.fake -> trace_analyzer.cache (analyses may not import cache)"),
    # (ii) a renderer importing a reader
    ("trace_analyzer.render.fake", "from trace_analyzer.readers.kineto import read\n",
     "trace_analyzer.render.fake -> trace_analyzer.readers.kineto (render may not import "
     "readers)"),
    # (iii) a module importing the CLI
    ("trace_analyzer.core.fake", "from trace_analyzer.cli import cli\n",
     "trace_analyzer.core.fake -> trace_analyzer.cli (core may not import cli)"),
    ("trace_analyzer", "from trace_analyzer import cli\n",
     "trace_analyzer -> trace_analyzer.cli (face may not import cli)"),
    # and the upward import, and a reader reaching past core.schema and core.intervals
    ("trace_analyzer.inputs.fake", "from trace_analyzer import load\n",
     "trace_analyzer.inputs.fake -> trace_analyzer (upward import: only the face imports the "
     "package root)"),
    ("trace_analyzer.readers.fake", "from trace_analyzer.core import profile\n",
     "trace_analyzer.readers.fake -> trace_analyzer.core.profile (readers may import of core "
     "only trace_analyzer.core.schema, trace_analyzer.core.intervals, "
     "trace_analyzer.core.device)"),
], ids=["analysis-cache", "analysis-cache-in-function", "analysis-cache-relative",
        "render-reader", "core-cli", "face-cli", "upward", "reader-core-profile"])
def test_the_checker_reports_a_broken_rule(module, source, expect):
    _, known = tree_sources()
    assert violations({module: (source, False)}, known) == [expect]


def test_the_checker_lets_allowed_imports_pass():
    _, known = tree_sources()
    ok = {
        "trace_analyzer.readers.fake": ("from trace_analyzer.core.schema import conform\n"
                                        "from ..inputs import discover\n", False),
        "trace_analyzer.units": ("from trace_analyzer.errors import UsageError\n", False),
        "trace_analyzer.cli": ("import trace_analyzer.batch\nfrom trace_analyzer import cache\n",
                               False),
        "trace_analyzer": ("from trace_analyzer.core.profile import load\n", True),
    }
    assert violations(ok, known) == []
