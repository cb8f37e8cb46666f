"""traceana report: one self-contained HTML page, or Markdown with its plots beside it.

The page must carry the JSON of `gaps`, `ops` and `diff` and show nothing else; the expected
values here come from the CLI's JSON and the library, never from the page itself. The
browser test loads the page in Debian's chromium, headless and without network.
"""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import run_cli
from PIL import Image  # matplotlib's own dependency

from trace_analyzer import load
from trace_analyzer.render import plots
from conftest import gaps_doc

ROOT = Path(__file__).resolve().parents[2]
NAIVE = ROOT / "fixtures" / "rmsnorm_naive"
FUSED = ROOT / "fixtures" / "rmsnorm_fused"
PNG = b"\x89PNG\r\n\x1a\n"
CHROMIUM = Path("/usr/bin/chromium")


def cli_json(*args) -> dict:
    code, out, err = run_cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    """The page of the naive run alone, and compared with the fused run as its base."""
    out = tmp_path_factory.mktemp("pages")
    made = {"alone": out / "alone.html", "base": out / "base.html"}
    for args in ([NAIVE, "-o", made["alone"]], [NAIVE, "--base", FUSED, "-o", made["base"]]):
        code, _, err = run_cli("report", *args)
        assert code == 0, err
        assert err.startswith("wrote ")
    assert sorted(p.name for p in out.iterdir()) == ["alone.html", "base.html"]
    return made


class Page(HTMLParser):
    """The parts of a page the tests read: JSON blocks, images, summary rows, table cells."""

    def __init__(self, text: str):
        super().__init__()
        self.blocks, self.imgs, self.rows, self.tables = {}, [], [], {}
        self._block = self._table = self._row = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script" and a.get("type") == "application/json":
            self._block = a["id"]
            self.blocks[self._block] = ""
        elif tag == "img":
            self.imgs.append(a)
        elif tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = []
        elif tag == "tr":
            self._row = {"key": a.get("data-key"), "cells": []}
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "script":
            self._block = None
        elif tag in ("td", "th") and self._cell is not None:
            self._row["cells"].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._table].append(self._row)
            if self._row["key"]:
                self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._block is not None:
            self.blocks[self._block] += data
        elif self._cell is not None:
            self._cell.append(data)


def parse(path: Path) -> Page:
    return Page(path.read_text(encoding="utf-8"))


def number(text: str) -> float:
    return float(text.replace(",", ""))


def lookup(run: dict, key: str):
    for part in key.split("."):
        run = run[part]
    return run


def numbers_in(doc) -> set:
    if isinstance(doc, dict):
        return set().union(*(numbers_in(v) for v in doc.values())) if doc else set()
    if isinstance(doc, list):
        return set().union(*(numbers_in(v) for v in doc)) if doc else set()
    return {doc} if isinstance(doc, (int, float)) and not isinstance(doc, bool) else set()


# ---- the HTML page


@pytest.mark.parametrize("name", ["alone", "base"])
def test_the_page_is_self_contained(pages, name):
    text = pages[name].read_text(encoding="utf-8")
    for banned in ("http://", "https://", "<link", "@import", "url(", "<iframe", "<object"):
        assert banned not in text, banned
    assert not re.search(r"<script[^>]*\bsrc=", text)
    srcs = re.findall(r'\bsrc="([^"]*)"', text)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)


def test_the_page_carries_the_json_of_gaps_ops_and_diff(pages):
    alone, base = parse(pages["alone"]), parse(pages["base"])
    gaps, ops = cli_json("gaps", NAIVE), cli_json("ops", NAIVE)
    assert json.loads(alone.blocks["traceana-gaps"]) == gaps
    assert json.loads(alone.blocks["traceana-ops"]) == ops
    assert "traceana-diff" not in alone.blocks
    assert json.loads(base.blocks["traceana-gaps"]) == gaps
    assert json.loads(base.blocks["traceana-ops"]) == ops
    assert json.loads(base.blocks["traceana-diff"]) == cli_json("diff", FUSED, NAIVE)
    assert json.loads(base.blocks["traceana-base-gaps"]) == cli_json("gaps", FUSED)


def test_every_summary_number_is_the_json_s(pages):
    expected = gaps_doc([load(NAIVE)], str(NAIVE))  # the library, not the page
    run = expected["runs"][0]
    in_json = numbers_in(run)
    rows = parse(pages["base"]).rows
    assert len(rows) == 25  # window, devices, lanes, 13 times, counts and percentages, 9 causes
    for row in rows:
        label, shown, unit = row["cells"]
        value = lookup(run, row["key"])
        if unit == "µs":  # shown in µs, held in ns: the same number, exactly
            assert round(number(shown) * 1000) == value and value in in_json, label
        else:
            assert number(shown) == value and value in in_json, label
    idle_pct = next(r for r in rows if r["key"] == "summary.idle_pct")
    assert idle_pct["cells"][1] == "11.92"  # the fixture's truth (tests/cli/test_gaps_cli.py)


def test_the_ops_table_is_the_ops_json(pages):
    ops = cli_json("ops", NAIVE)["runs"][0]["rows"]
    table = parse(pages["alone"]).tables["ops-table"][1:]  # after the header row
    columns = ["name", "calls", "self_cpu_us", "cpu_total_us", "device_us", "device_pct",
               "executions", "executions_per_call", "mean_dispatch_to_hw_us"]
    assert len(table) == len(ops) == 4
    for row, op in zip(table, ops):
        assert row["cells"][0] == op["name"]
        assert [number(c) for c in row["cells"][1:]] == [op[c] for c in columns[1:]]


def test_the_gaps_table_lists_every_device_gap(pages):
    run = cli_json("gaps", NAIVE)["runs"][0]
    table = parse(pages["alone"]).tables["gaps-table"][1:]
    assert [(round(number(r["cells"][2]) * 1000), r["cells"][3]) for r in table] == \
        [(g["duration_ns"], g["cause"]) for g in run["device_gaps"]]


@pytest.mark.parametrize("name, plots_shown", [("alone", 2), ("base", 3)])
def test_the_page_holds_its_plots(pages, name, plots_shown):
    imgs = parse(pages[name]).imgs
    assert len(imgs) == plots_shown and all(i["alt"] for i in imgs)
    for img in imgs:
        data = base64.b64decode(img["src"].split(",", 1)[1])
        width, height = png_size(data)
        assert width == plots.WIDTH_IN * plots.DPI and 100 < height < 1500
        assert len(data) > 5000


# ---- Markdown


def test_markdown_writes_the_md_and_its_plots_beside_it_and_nothing_else(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run_cli("report", NAIVE, "--base", FUSED, "-o", out / "report.md")
    assert code == 0, err
    names = {"report.md", "report.timeline.png", "report.base-timeline.png",
             "report.histogram.png"}
    assert {p.name for p in tmp_path.rglob("*")} == {"out"} | names
    md = (out / "report.md").read_text()
    for png in sorted(names - {"report.md"}):
        assert f"]({png})" in md
        data = (out / png).read_bytes()
        assert png_size(data)[0] == plots.WIDTH_IN * plots.DPI and len(data) > 5000
    # the existing Markdown renderers, as the CLI prints them
    for args in (("gaps", NAIVE), ("ops", NAIVE), ("diff", FUSED, NAIVE)):
        code, text, _ = run_cli(*args, "--format", "markdown")
        assert text.strip() in md, args


def test_markdown_without_a_base_has_two_plots(tmp_path):
    code, _, err = run_cli("report", NAIVE, "-o", tmp_path / "r.md")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.histogram.png", "r.md",
                                                          "r.timeline.png"]
    assert "## diff" not in (tmp_path / "r.md").read_text()


# ---- errors


@pytest.mark.parametrize("args, says", [
    (["{fixtures}", "-o", "{tmp}/r.html"], "4 runs found"),
    (["{naive}", "-o", "{tmp}/r.txt"], "writes .html"),
    (["{naive}", "--base", "{fixtures}", "-o", "{tmp}/r.html"], "runs found"),
    (["{tmp}/absent", "-o", "{tmp}/r.html"], "absent"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    paths = {"fixtures": ROOT / "fixtures", "naive": NAIVE, "tmp": tmp_path}
    code, out, err = run_cli("report", *(a.format(**paths) for a in args))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("traceana: error: ") and says in err
    assert list(tmp_path.iterdir()) == []


def test_without_matplotlib_it_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails
    code, _, err = run_cli("report", NAIVE, "-o", tmp_path / "r.html")
    assert code == 2 and err.count("\n") == 1
    assert "pip install 'traceana[report]'" in err
    assert list(tmp_path.iterdir()) == []


def test_matplotlib_is_imported_only_to_draw():
    code = ("import sys, trace_analyzer, trace_analyzer.cli, trace_analyzer.render.report, "
            "trace_analyzer.render.plots, trace_analyzer.render.html; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- the plots' geometry


def test_busy_blocks_and_gaps_fill_the_window():
    run = gaps_doc([load(NAIVE)], str(NAIVE))["runs"][0]
    (lane,) = run["lanes"]
    blocks = plots.busy_blocks(lane, run["gaps"], run["window"])
    assert len(blocks) == lane["executions"] == 6  # no two executions touch in this run
    assert sum(e - s for s, e in blocks) == lane["busy_ns"]
    assert blocks[0][0] == run["window"]["start_ns"] and blocks[-1][1] == run["window"]["end_ns"]


def test_nested_framework_ops_go_one_row_down():
    ops = [{"name": "outer", "start_ns": 0, "end_ns": 100}, {"name": "inner", "start_ns": 10,
           "end_ns": 90}, {"name": "next", "start_ns": 100, "end_ns": 120}]
    assert [[o["name"] for o in row] for row in plots.op_rows(ops)] == [["outer", "next"],
                                                                        ["inner"]]


def test_the_timeline_shows_the_op_that_launched_the_first_execution(pages):
    timeline = json.loads(parse(pages["alone"]).blocks["traceana-timeline"])["runs"][0]
    window = cli_json("gaps", NAIVE)["runs"][0]["window"]
    names = [o["name"] for o in timeline["framework_ops"]]
    assert names == ["aten::mul", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul",
                     "aten::mul"]
    first = timeline["framework_ops"][0]
    assert first["end_ns"] < window["start_ns"] and timeline["start_ns"] == first["start_ns"]


def test_short_lane_names_drop_the_shared_prefix():
    assert plots.short_names(["h/PID:1/neuron_hw/NC0:0", "h/PID:1/neuron_hw/NC0:1"]) == \
        ["neuron_hw/NC0:0", "neuron_hw/NC0:1"]
    assert plots.short_names(["PID:1/GPU:0/stream:7", "PID:1/GPU:1/stream:7"]) == \
        ["GPU:0/stream:7", "GPU:1/stream:7"]


# ---- in a real browser


def chromium(profile: Path, page: Path, *args: str) -> subprocess.CompletedProcess:
    """Run Debian's chromium headless on ``page``, with no way to reach a network."""
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--no-proxy-server", *args, page.as_uri()]
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines()
               if ":CONSOLE" in line or "Uncaught" in line]
    assert console == [], console  # the page logs nothing: no error, no failed resource
    return done


def test_in_a_browser_the_page_loads_and_shows_its_plots(pages, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is absent: apt-get install chromium (.ci/run does, as "
                    "root) to run the browser test of the report")
    page = pages["base"]
    dom = chromium(tmp_path / "profile", page, "--dump-dom").stdout
    root = re.search(r"<html[^>]*>", dom)[0]
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', root))
    assert attrs.get("data-ready") == "yes"  # the inline script ran to its end
    assert attrs["data-images"] == attrs["data-images-loaded"] == "3"  # decoded and laid out
    assert attrs["data-json-blocks"] == "6"  # every JSON block parsed
    assert len(re.findall(r'<a [^>]*download="', dom)) == 6
    srcs = re.findall(r'<img [^>]*src="([^"]*)"', dom)
    assert len(srcs) == 3
    for src in srcs:
        assert src.startswith("data:image/png;base64,")
        png_size(base64.b64decode(src.split(",", 1)[1]))

    shot = tmp_path / "shot.png"
    chromium(tmp_path / "profile2", page, f"--screenshot={shot}", "--window-size=1400,2000")
    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, 2000)
    colours = dict((c, n) for n, c in image.getcolors(1 << 24))
    assert len(colours) > 200  # text, tables and plots, not a blank page
    # the timeline is on screen: its busy blocks and its transfer gap, in their own colours
    rgb = lambda h: tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))  # noqa: E731
    assert colours.get(rgb(plots.BUSY_COLOUR), 0) > 20_000
    assert colours.get(rgb(plots.CAUSE_COLOURS["transfer"]), 0) > 1_000
    top = image.crop((0, 0, 1400, 300)).getcolors(1 << 24)
    assert len(top) > 20  # the header's text is drawn
