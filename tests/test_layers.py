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
                  "trace_analyzer.atomic", "trace_analyzer._version", "trace_analyzer.progress"),
        "may_import": (),  # base only (units imports errors)
    },
    "registry": {  # the questions' registry: names and dotted paths, nothing imported
        "holds": ("trace_analyzer.questions",),
        "may_import": ("base",),
    },
    "inputs": {
        "holds": ("trace_analyzer.inputs.*",),
        "may_import": ("base",),
    },
    "model": {  # the events table, nesting, the device-profile tables: what readers may use
        "holds": ("trace_analyzer.model.*",),
        "may_import": ("base",),
    },
    "readers": {
        "holds": ("trace_analyzer.readers.*",),
        "may_import": ("base", "inputs", "model"),
    },
    "loading": {  # a run assembled from readers: deduplicated, aligned, linked
        "holds": ("trace_analyzer.loading.*",),
        "may_import": ("base", "inputs", "model", "readers"),
    },
    "analysis": {  # shared analysis pieces, and every question module that is neither a
        # layout nor a command: another question's analysis may be used, never its output
        "holds": ("trace_analyzer.analyses.*", "question:analysis"),
        "may_import": ("base", "registry", "inputs", "model", "loading"),
    },
    "render": {  # shared output machinery: formats, tables, budget, safe text, the sink
        "holds": ("trace_analyzer.render.*",),
        "may_import": ("base", "registry", "model", "trace_analyzer.analyses.*"),
    },
    "layout": {  # a question's text, page section, plots, files for other tools: drawn from
        # results (a report or an export draws other questions' results too), never from
        # another question's layout (the registry names those)
        "holds": ("question:layout",),
        "may_import": ("base", "registry", "model", "loading", "analysis", "render",
                       "own-question"),
    },
    "cache": {
        "holds": ("trace_analyzer.cache", "trace_analyzer.cache.*"),  # a module, or a package
        "may_import": ("base", "registry", "inputs", "model", "loading", "analysis"),
    },
    "batch": {
        "holds": ("trace_analyzer.batch.*",),
        "may_import": ("base", "registry", "inputs", "model", "readers", "loading", "analysis",
                       "render", "layout", "cache"),
    },
    "cli": {  # the group and what every command shares; never a command
        "holds": ("trace_analyzer.cli", "trace_analyzer.cli.*"),  # a module, or a package
        "may_import": ("base", "registry", "inputs", "model", "readers", "loading", "analysis",
                       "render", "layout", "cache", "batch"),
    },
    "command": {  # a question's command: flags -> loading -> its function -> a renderer
        "holds": ("question:command",),
        "may_import": ("base", "registry", "inputs", "model", "readers", "loading", "analysis",
                       "render", "layout", "cache", "batch", "cli"),
    },
    "face": {
        "holds": ("trace_analyzer",),
        "may_import": ("base", "registry", "inputs", "model", "readers", "loading", "analysis",
                       "render", "layout", "cache", "batch"),  # ta.run_batch, imported when used
    },
}
# A question's module's role, by its name: ``command.py`` is its command; these are its
# layouts (text, page sections, plots, files for other tools); any other is its analysis.
COMMAND = "command"
LAYOUTS = ("text", "text_*", "html", "html_*", "page", "sections", "plots", "plots_*", "files",
           "perfetto", "flows", "gap_slices", "writer", "parquet")
QUESTIONS = "trace_analyzer.questions."

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


def question_of(module: str) -> str | None:
    """The question a module belongs to (``trace_analyzer.questions.<q>.<m>``), or None."""
    if not module.startswith(QUESTIONS):
        return None
    return module[len(QUESTIONS):].split(".")[0]


def role_of(module: str) -> str:
    """The role of a question's module: command, layout or analysis (by its name)."""
    leaf = module.rpartition(".")[2]
    if leaf == COMMAND:
        return "command"
    if any(leaf == n or (n.endswith("*") and leaf.startswith(n[:-1])) for n in LAYOUTS):
        return "layout"
    return "analysis"


def layer_of(module: str) -> str | None:
    """The layer holding ``module``, or None when no layer does."""
    if question_of(module) is not None and module.count(".") >= 3:
        want = f"question:{role_of(module)}"
        return next(layer for layer, rule in RULES.items() if want in rule["holds"])
    for layer, rule in RULES.items():
        for pattern in rule["holds"]:
            if pattern.endswith(".*"):
                if module == pattern[:-2] or module.startswith(pattern[:-1]):
                    return layer
            elif module == pattern:
                return layer
    if question_of(module) is not None:  # a question's package (its __init__.py)
        return "analysis"
    return None


def _matches(target: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        return target == pattern[:-2] or target.startswith(pattern[:-1])
    return target == pattern


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
    if theirs == "face":
        return "upward import: only the face imports the package root"
    if theirs == "command" and module != target:
        return "nothing imports a command (the group finds it through the registry)"
    if mine == theirs and mine != "layout":
        return None
    allowed = RULES[mine]["may_import"]
    if theirs in allowed or any(_matches(target, a) for a in allowed):
        return None
    own = question_of(module) is not None and question_of(module) == question_of(target)
    if "own-question" in allowed and own:
        return None
    if mine == "layout" and theirs == "layout":
        return "a layout imports only shared render machinery, results and its own layouts"
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
     "trace_analyzer.analyses.fake -> trace_analyzer.cache (analysis may not import cache)"),
    ("trace_analyzer.analyses.fake", "def f():\n    import trace_analyzer.cache\n",
     "trace_analyzer.analyses.fake -> trace_analyzer.cache (analysis may not import cache)"),
    ("trace_analyzer.analyses.fake", "from ..cache import load_result\n",
     "trace_analyzer.analyses.fake -> trace_analyzer.cache (analysis may not import cache)"),
    # (ii) shared render machinery importing a reader, or a question's layout
    ("trace_analyzer.render.fake", "from trace_analyzer.readers.kineto import read\n",
     "trace_analyzer.render.fake -> trace_analyzer.readers.kineto (render may not import "
     "readers)"),
    ("trace_analyzer.render.fake", "from trace_analyzer.questions.gaps.text import gaps_layout\n",
     "trace_analyzer.render.fake -> trace_analyzer.questions.gaps.text (render may not import "
     "layout)"),
    # (iii) a module importing the CLI, and the face importing it
    ("trace_analyzer.loading.fake", "from trace_analyzer.cli import cli\n",
     "trace_analyzer.loading.fake -> trace_analyzer.cli (loading may not import cli)"),
    ("trace_analyzer", "from trace_analyzer import cli\n",
     "trace_analyzer -> trace_analyzer.cli (face may not import cli)"),
    # (iv) a question's analysis importing the CLI or a command (its own or another's)
    ("trace_analyzer.questions.gaps.fake", "from trace_analyzer.cli.common import emit\n",
     "trace_analyzer.questions.gaps.fake -> trace_analyzer.cli.common (analysis may not import "
     "cli)"),
    ("trace_analyzer.questions.gaps.fake", "from trace_analyzer.questions.ops import command\n",
     "trace_analyzer.questions.gaps.fake -> trace_analyzer.questions.ops.command (nothing "
     "imports a command (the group finds it through the registry))"),
    # (v) a layout importing another question's layout, or the cache
    ("trace_analyzer.questions.ops.text_more",
     "from trace_analyzer.questions.gaps.text import gaps_layout\n",
     "trace_analyzer.questions.ops.text_more -> trace_analyzer.questions.gaps.text (a layout "
     "imports only shared render machinery, results and its own layouts)"),
    ("trace_analyzer.questions.ops.html", "from trace_analyzer.cache import Cache\n",
     "trace_analyzer.questions.ops.html -> trace_analyzer.cache (layout may not import cache)"),
    # (vi) a command importing another command; shared CLI machinery importing a command
    ("trace_analyzer.questions.diff.command", "from trace_analyzer.questions.gaps import command\n",
     "trace_analyzer.questions.diff.command -> trace_analyzer.questions.gaps.command (nothing "
     "imports a command (the group finds it through the registry))"),
    ("trace_analyzer.cli.fake", "import trace_analyzer.questions.gaps.command\n",
     "trace_analyzer.cli.fake -> trace_analyzer.questions.gaps.command (nothing imports a "
     "command (the group finds it through the registry))"),
    # (vii) the registry importing anything but the base; the upward import; a reader
    # reaching past the data model
    ("trace_analyzer.questions", "from trace_analyzer.questions.gaps import analysis\n",
     "trace_analyzer.questions -> trace_analyzer.questions.gaps.analysis (registry may not "
     "import analysis)"),
    ("trace_analyzer.inputs.fake", "from trace_analyzer import load\n",
     "trace_analyzer.inputs.fake -> trace_analyzer (upward import: only the face imports the "
     "package root)"),
    ("trace_analyzer.readers.fake", "from trace_analyzer.loading import profile\n",
     "trace_analyzer.readers.fake -> trace_analyzer.loading.profile (readers may not import "
     "loading)"),
], ids=["analysis-cache", "analysis-cache-in-function", "analysis-cache-relative",
        "render-reader", "render-layout", "loading-cli", "face-cli", "analysis-cli",
        "analysis-command", "layout-other-layout", "layout-cache", "command-command",
        "cli-command", "registry-analysis", "upward", "reader-loading"])
def test_the_checker_reports_a_broken_rule(module, source, expect):
    _, known = tree_sources()
    known |= {"trace_analyzer.questions.ops.command", "trace_analyzer.questions.gaps.command"}
    assert violations({module: (source, False)}, known) == [expect]


def test_the_checker_lets_allowed_imports_pass():
    _, known = tree_sources()
    ok = {
        "trace_analyzer.readers.fake": ("from trace_analyzer.model.schema import conform\n"
                                        "from ..inputs import discover\n", False),
        "trace_analyzer.units": ("from trace_analyzer.errors import UsageError\n", False),
        "trace_analyzer.cli": ("import trace_analyzer.batch\nfrom trace_analyzer import cache\n",
                               False),
        "trace_analyzer": ("from trace_analyzer.loading.profile import load\n", True),
        # a question's analysis using another question's analysis; a layout its own layouts
        # and another question's results; a command the CLI's machinery and its layouts
        "trace_analyzer.questions.ops.fake": (
            "from trace_analyzer.questions.chain.analysis import chains\n", False),
        "trace_analyzer.questions.report.html_fake": (
            "from trace_analyzer.questions.report.plots import require\n"
            "from trace_analyzer.questions.gaps.causes import CAUSES\n", False),
        "trace_analyzer.questions.gaps.command": (
            "from trace_analyzer.cli.common import emit\n"
            "from trace_analyzer.questions.gaps.text import gaps_layout\n", False),
    }
    assert violations(ok, known) == []


def test_every_question_module_has_a_role_and_every_module_a_layer():
    # a module the rules do not place is reported, not let through
    assert layer_of("trace_analyzer.somewhere_new") is None
    assert breaks("trace_analyzer.somewhere_new", "trace_analyzer.errors") == (
        "trace_analyzer.somewhere_new is in no layer of RULES")
    assert role_of("trace_analyzer.questions.gaps.command") == "command"
    assert role_of("trace_analyzer.questions.gaps.text") == "layout"
    assert role_of("trace_analyzer.questions.engines.text_diff") == "layout"
    assert role_of("trace_analyzer.questions.gaps.causes") == "analysis"
    for module in modules():
        assert layer_of(module) is not None, module
