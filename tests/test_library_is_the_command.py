"""The library computes everything a command prints (issue 33).

For every command, the public function of ``import trace_analyzer as ta`` on a run returns the
result the command renders: the command's JSON (or the file it writes) equals the library's
result written by the same renderer. The fixtures with device-profile exports are the case the
CLI once composed itself: ``ta.gaps(p, device=ta.load_device(path))`` holds the table below the
ops that ``traceana gaps`` prints, and so does ``ta.ops``.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import run_cli

import trace_analyzer as ta
from trace_analyzer.analyses.results import RunResults
from trace_analyzer.render.json import parsed

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
WITH_DEVICE = ["rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled"]
RUNS = [*WITH_DEVICE, "rmsnorm_naive_lnc2"]


def cli_run(*args: object, cache: bool = True) -> dict:
    """The first run of a command's JSON, less the warnings the command adds to it (the
    loaded run's, not the result's). ``cache``: the command reads runs (--no-cache)."""
    code, out, err = run_cli(*map(str, args), "--format", "json", *["--no-cache"] * cache)
    assert code == 0, err
    run = json.loads(out)["runs"][0]
    run.pop("warnings", None)
    return run


def lib_run(result: object) -> dict:
    """A library result as its command's JSON writes it (info holds the run's warnings
    itself: they are compared as the others' are not)."""
    run = parsed(RunResults("x", (result,)))["runs"][0]
    run.pop("warnings", None)
    return run


@pytest.mark.parametrize("name", WITH_DEVICE)
def test_gaps_and_ops_with_the_device_profiles_are_the_commands(name):
    path = FIXTURES / name
    p, device = ta.load(path), ta.load_device(path)
    gaps, ops = lib_run(ta.gaps(p, device=device)), lib_run(ta.ops(p, device=device))
    assert gaps["engines"] and ops["engines"]  # below the ops: the NEFFs' engines
    assert gaps == cli_run("gaps", path)
    assert ops == cli_run("ops", path)
    # without the device profiles, the library leaves the table out (a trace alone)
    assert "engines" not in lib_run(ta.gaps(p)) and "engines" not in lib_run(ta.ops(p))


@pytest.mark.parametrize("name", RUNS)
@pytest.mark.parametrize("command,function", [
    ("chain", lambda p: ta.chains(p)), ("info", lambda p: ta.info(p)),
    ("ranks", lambda p: ta.ranks(p)), ("kernels", lambda p: ta.kernels(p)),
    ("launches", lambda p: ta.launches(p)),
])  # fmt: skip
def test_each_run_command_is_its_library_function(name, command, function):
    path = FIXTURES / name
    assert lib_run(function(ta.load(path))) == cli_run(command, path)


@pytest.mark.parametrize("name", WITH_DEVICE)
def test_engines_is_its_library_function(name):
    path = FIXTURES / name
    assert lib_run(ta.engines(ta.load_device(path))) == cli_run("engines", path, cache=False)


def test_diff_is_its_library_function():
    base, head = FIXTURES / "rmsnorm_naive", FIXTURES / "rmsnorm_fused"
    result = ta.diff(ta.load(base), ta.load(head), base_label=str(base), head_label=str(head))
    assert lib_run(result) == cli_run("diff", base, head)


def test_export_is_its_library_function(tmp_path):
    path = FIXTURES / "rmsnorm_naive"
    out = tmp_path / "export.json"
    code, _, err = run_cli("export", path, "-o", out, "--no-cache")
    assert code == 0, err
    doc = ta.export(ta.load(path, args=True), source=str(path))
    assert json.loads(out.read_text()) == json.loads(json.dumps(doc))


def test_tables_is_its_library_function(tmp_path):
    path = FIXTURES / "rmsnorm_naive"
    code, _, err = run_cli("tables", path, "-o", tmp_path / "t", "--no-cache")
    assert code == 0, err
    p = ta.load(path, args=True)  # the events' args are a column of the events table
    frames = ta.tables(p, ta.gaps(p))
    assert set(frames) == {f.stem for f in (tmp_path / "t").glob("*.parquet")}
    for name, frame in frames.items():
        written = pl.read_parquet(tmp_path / "t" / f"{name}.parquet")
        assert written.equals(frame), name


def test_batch_and_trend_are_their_library_functions(tmp_path):
    runs = [FIXTURES / n for n in RUNS]
    code, _, err = run_cli("batch", *runs, "-o", tmp_path / "cli.parquet")
    assert code == 0, err
    done = ta.run_batch(runs, tmp_path / "lib.parquet")
    assert done.analysed == len(runs)
    volatile = ("fingerprint", "modified_time", "analysed_at", "analysis_s")
    cli, lib = (pl.read_parquet(tmp_path / f).drop(volatile) for f in ("cli.parquet", "lib.parquet"))
    assert cli.sort("run_id", "device").equals(lib.sort("run_id", "device"))
    table = tmp_path / "cli.parquet"
    code, out, err = run_cli("trend", table, "--format", "json")
    assert code == 0, err
    assert parsed(ta.trend(pl.read_parquet(table), str(table))) == json.loads(out)


def test_report_is_its_library_function(tmp_path):
    path = FIXTURES / "rmsnorm_naive"
    out = tmp_path / "report.html"
    code, _, err = run_cli("report", path, "-o", out, "--no-images", "--no-cache")
    assert code == 0, err
    page = out.read_text()
    result = ta.report(ta.load(path), path=str(path), device=ta.load_device(path))
    for kind in ("gaps", "ops", "kernels", "engines"):
        embedded = _embedded(page, kind)
        assert embedded["runs"][0]["root"] == parsed(getattr(result, kind))["runs"][0]["root"]
        shown = parsed(getattr(result, kind))
        # the page embeds the result with its long lists cut: the summary is whole
        for key in ("summary", "total_device_us", "neffs"):
            if key in shown["runs"][0]:
                assert embedded["runs"][0][key] == shown["runs"][0][key], (kind, key)


def _embedded(page: str, kind: str) -> dict:
    """The JSON a report page embeds for ``kind`` (its script element ``traceana-<kind>``)."""
    start = page.index(f'id="traceana-{kind}"')
    start = page.index(">", start) + 1
    return json.loads(page[start : page.index("</script>", start)])


def test_graph_is_its_library_function(tmp_path):
    import networkx as nx

    path = FIXTURES / "rmsnorm_naive"
    out = tmp_path / "g.json"
    code, _, err = run_cli("graph", path, "-o", out, "--no-cache")
    assert code == 0, err
    doc = json.loads(out.read_text())
    written = nx.node_link_graph(doc, edges="links" if "links" in doc else "edges")
    g = ta.graph(ta.load(path))
    assert sorted(map(str, written.nodes)) == sorted(map(str, g.nodes))
    assert sorted((str(a), str(b)) for a, b in written.edges) == sorted(
        (str(a), str(b)) for a, b in g.edges)


def test_baseline_save_is_its_library_function(tmp_path):
    path = FIXTURES / "rmsnorm_naive"
    out = tmp_path / "base.json"
    code, _, err = run_cli("baseline", "save", path, "-o", out, "--no-cache")
    assert code == 0, err
    doc = ta.baseline(ta.load_runs(path), label=str(path))
    assert json.loads(out.read_text()) == json.loads(json.dumps(doc))
