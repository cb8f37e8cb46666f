"""The library's face: what `import trace_analyzer as ta` offers, and how results show."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import trace_analyzer as ta

ROOT = Path(__file__).resolve().parents[1]
NAIVE = ROOT / "fixtures" / "rmsnorm_naive"
FUNCTIONS = ("load", "load_runs", "gaps", "ops", "chains", "diff", "info", "export", "engines",
             "load_device", "ranks", "kernels", "launches", "report", "tables", "trend",
             "run_batch", "graph", "baseline")
TYPES = ("Profile", "GapsResult", "OpsResult", "ChainResult", "DiffResult", "InfoResult",
         "RunResults", "EnginesResult", "DeviceRun", "ReportResult", "TrendResult", "BatchResult")


def test_dir_shows_the_face_and_no_subpackage():
    shown = dir(ta)
    for name in FUNCTIONS + TYPES + ("InputError", "UsageError", "TraceanaError"):
        assert name in shown, name
    for leaked in ("analyses", "core", "readers", "inputs", "render", "cache", "batch", "cli"):
        assert leaked not in shown, leaked


@pytest.mark.parametrize("name", FUNCTIONS)
def test_each_function_documents_every_parameter(name):
    fn = getattr(ta, name)
    doc = inspect.getdoc(fn) or ""
    assert doc, name
    assert "Return" in doc, name
    for param in inspect.signature(fn).parameters:
        if param not in ("profile", "path", "base", "head", "p"):
            assert f"``{param}``" in doc, (name, param)
    assert inspect.signature(fn).return_annotation is not inspect.Signature.empty, name


def test_results_show_in_one_short_line():
    p = ta.load(NAIVE)
    shown = [p, ta.gaps(p), ta.ops(p), ta.chains(p), ta.info(p),
             ta.diff(p, ta.load(ROOT / "fixtures" / "rmsnorm_fused"))]
    for obj in shown:
        text = repr(obj)
        assert "\n" not in text and len(text) < 160, text
        assert text.startswith(type(obj).__name__ + "("), text
    assert repr(p) == "Profile(run=" + repr(str(NAIVE)) + ", 69 events, 4 lanes)"


def test_results_are_frozen():
    g = ta.gaps(ta.load(NAIVE))
    with pytest.raises(AttributeError):
        g.summary = {}  # type: ignore[misc]


def test_library_errors_name_the_parameter_and_the_cli_the_flag():
    p = ta.load(NAIVE)
    with pytest.raises(ta.UsageError) as e:
        ta.gaps(p, lanes="nothing*")
    assert str(e.value) == "no hardware lane matches lanes 'nothing*'"
    assert e.value.worded({"lanes": "--lane"}) == "no hardware lane matches --lane 'nothing*'"


def test_importing_the_package_loads_no_polars_until_a_name_is_used():
    import subprocess
    import sys

    code = ("import sys, trace_analyzer as ta; before = 'polars' in sys.modules; ta.gaps; "
            "print(before, 'polars' in sys.modules, sorted(ta.__all__) == dir(ta))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.split() == ["False", "True", "True"], out


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        ta.nothing  # noqa: B018
