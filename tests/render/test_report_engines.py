"""traceana report's Engines section: a run's device-profile exports, per NEFF, with the
roofline plot and the engines JSON (issue 22; docs/report.md, docs/device.md).

The expected figures come from the library (`ta.engines(ta.load_device(...))`) and the CLI's
JSON, never from the page; a run without a device-profile export has no such section.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from conftest import X, kineto, run_cli, write_trace
from PIL import Image  # matplotlib's own dependency
from test_report import parse, png_size

import trace_analyzer as ta
from trace_analyzer.questions.engines import plots as engines_plots
from trace_analyzer.questions.report import plots

ROOT = Path(__file__).resolve().parents[2]
COMPILED = ROOT / "fixtures" / "rmsnorm_compiled"
NAIVE = ROOT / "fixtures" / "rmsnorm_naive"
RESNET = ROOT.parent / "shared" / "corpus" / "real" / "kineto" / "tb_plugin_resnet50"


def rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))


@pytest.fixture(scope="module")
def compiled_page(tmp_path_factory) -> Path:
    page = tmp_path_factory.mktemp("engines") / "compiled.html"
    code, _, err = run_cli("report", COMPILED, "-o", page)
    assert code == 0, err
    return page


@pytest.fixture(scope="module")
def compiled_engines():
    """The engines of the compiled fixture's device profile, from the library."""
    return ta.engines(ta.load_device(COMPILED))


def pct(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def test_the_page_has_the_engines_section_with_each_neff_s_figures(compiled_page,
                                                                   compiled_engines):
    text = compiled_page.read_text(encoding="utf-8")
    assert '<section id="engines"><h2>Engines</h2>' in text
    (neff,) = compiled_engines.neffs.to_dicts()
    table = parse(compiled_page).tables["engines-neffs"]
    assert [c for c in table[0]["cells"]] == ["NEFF", "window", "MFU %", "MBU %", "FLOP/byte",
                                              "verdict", "headroom ×", "busiest engine",
                                              "active %"]
    (row,) = [r["cells"] for r in table[1:]]
    assert row[0] == neff["neff"]
    # a percentage as the text outputs write one: at most two decimals (data-sort: in full)
    assert row[2] == pct(neff["mfu_pct"]) and row[3] == pct(neff["mbu_pct"])
    assert row[5] == neff["verdict"] == "compute-bound"  # as the fixture was built
    assert row[6] == f"{neff['headroom']:,}"
    # the busiest engine: the highest active % of the NEFF's engines
    engines = compiled_engines.engines.sort("active_pct", descending=True).to_dicts()
    assert row[7] == engines[0]["engine"] and row[8] == pct(engines[0]["active_pct"])
    every = parse(compiled_page).tables["engines-engines"][1:]
    assert len(every) == compiled_engines.engines.height
    # the hints, worded as the library words them
    for h in compiled_engines.hints:
        assert h["text"] in text


def test_the_page_embeds_the_engines_json_as_the_cli_prints_it(compiled_page, compiled_engines):
    doc = json.loads(parse(compiled_page).blocks["traceana-engines"])
    (run,) = doc["runs"]
    assert [n["neff"] for n in run["neffs"]] == compiled_engines.neffs["neff"].to_list()
    code, out, err = run_cli("engines", COMPILED, "--format", "json")
    assert code == 0, err
    assert doc == json.loads(out)  # few rows: nothing cut


def test_the_roofline_plot_draws_the_roof_and_the_neff_in_its_verdict_s_colour(compiled_page):
    (img,) = [i for i in parse(compiled_page).imgs if i["id"] == "plot-roofline"]
    data = base64.b64decode(img["src"].split(",", 1)[1])
    width, height = png_size(data)
    assert width == plots.WIDTH_IN * plots.DPI and height > 300
    image = Image.open(io.BytesIO(data)).convert("RGB")
    axes = image.crop((0, 0, width, height - 40))  # above the legend
    colours = {c: n for n, c in axes.getcolors(1 << 24)}
    assert colours.get(rgb(engines_plots.ROOF_COLOUR), 0) > 1000  # the roof: a 2 pt line
    compute = colours.get(rgb(engines_plots.VERDICT_COLOURS["compute-bound"]), 0)
    assert compute > 50  # the NEFF's dot, compute-bound
    assert colours.get(rgb(engines_plots.VERDICT_COLOURS["memory-bound"]), 0) == 0


def test_the_naive_run_s_six_neffs_are_memory_bound_and_each_named(tmp_path):
    page = tmp_path / "naive.html"
    code, _, err = run_cli("report", NAIVE, "-o", page)
    assert code == 0, err
    neffs = ta.engines(ta.load_device(NAIVE)).neffs
    rows = [r["cells"] for r in parse(page).tables["engines-neffs"][1:]]
    assert [r[0] for r in rows] == neffs["neff"].to_list() and len(rows) == 6
    assert {r[5] for r in rows} == {"memory-bound"}


def test_markdown_has_the_engines_section_and_the_roofline_beside_it(tmp_path):
    code, _, err = run_cli("report", COMPILED, "-o", tmp_path / "r.md")
    assert code == 0, err
    md = (tmp_path / "r.md").read_text()
    assert "\n## engines\n" in md and "](r.roofline.png)" in md
    png_size((tmp_path / "r.roofline.png").read_bytes())
    neff = ta.engines(ta.load_device(COMPILED)).neffs.to_dicts()[0]
    (line,) = [ln for ln in md.splitlines() if ln.startswith(f"| {neff['neff']}")]
    assert "compute-bound" in line
    code, _, err = run_cli("report", COMPILED, "--no-images", "-o", tmp_path / "t.md")
    assert code == 0, err
    text = (tmp_path / "t.md").read_text()
    assert "## engines" in text and ".png" not in text


def kineto_folder(folder: Path) -> Path:
    events = [X("kernel", "k", 10.0 * i, 5.0, pid=0, tid=7, device=0, stream=7)
              for i in range(4)]  # fmt: skip
    write_trace(folder / "trace.json", kineto(events))
    return folder


def test_a_run_without_a_device_profile_has_no_engines_section(tmp_path):
    run = kineto_folder(tmp_path / "run")
    page = tmp_path / "r.html"
    code, _, err = run_cli("report", run, "-o", page, "--no-cache")
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert 'id="engines"' not in text and "traceana-engines" not in text
    assert "plot-roofline" not in text
    code, _, err = run_cli("report", run, "-o", tmp_path / "r.md", "--no-cache")
    assert code == 0, err
    assert "## engines" not in (tmp_path / "r.md").read_text()
    assert not (tmp_path / "r.roofline.png").exists()


def test_a_kineto_corpus_run_has_no_engines_section(tmp_path):
    if not RESNET.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {RESNET}")
    page = tmp_path / "r.html"
    code, _, err = run_cli("report", RESNET, "-o", page, "--no-cache", "--no-images")
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert 'id="engines"' not in text and "traceana-engines" not in text


def test_a_broken_device_export_is_a_note_not_a_failure(tmp_path):
    run = kineto_folder(tmp_path / "run")
    export = run / "device" / "broken_i-0_pid_1_nc_0_session_0"
    export.mkdir(parents=True)
    import polars as pl

    pl.DataFrame({"nothing": [1]}).write_parquet(export / "Instruction.parquet")
    page = tmp_path / "r.html"
    code, _, err = run_cli("report", run, "-o", page, "--no-cache", "--no-images")
    assert code == 0, err  # the report is about the system view first
    text = page.read_text(encoding="utf-8")
    assert '<section id="engines"><h2>Engines</h2><p class="note">' in text
    assert "the device-profile export could not be read" in text and "Instruction" in text
    assert "traceana-engines" not in text  # no JSON: nothing was read
    code, _, err = run_cli("report", run, "-o", tmp_path / "r.md", "--no-cache", "--no-images")
    assert code == 0, err
    assert "could not be read" in (tmp_path / "r.md").read_text()
