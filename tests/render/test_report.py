"""traceana report: one self-contained HTML page, or Markdown with its plots beside it.

The page must carry the JSON of `gaps`, `ops` and `diff` and show nothing else; the expected
values here come from the CLI's JSON and the library, never from the page itself. The
browser test loads the page in Debian's chromium, headless and without network.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
from conftest import X, gaps_doc, kineto, run_cli, write_trace
from PIL import Image  # matplotlib's own dependency

from trace_analyzer import load
from trace_analyzer.numbers import duration, from_us, instant
from trace_analyzer.questions.report import plots
from trace_analyzer.questions.report import timeline as timeline_module
from trace_analyzer.questions.report.lanes import TOP_GAPS

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
            self._row = {"key": a.get("data-key"), "cells": [], "sorts": []}
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            self._row["sorts"].append(a.get("data-sort"))

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
    # window, devices, lanes, 13 times, counts and percentages, 11 causes, the DataLoader
    assert len(rows) == 28
    for row in rows:
        label, shown, unit = row["cells"]
        value = lookup(run, row["key"])
        if value is None:  # nothing to say (no DataLoader in the run): an empty cell
            assert shown == "" and row["key"] == "summary.idle_in_data_loader_ns", label
        elif "_ns" in row["key"]:  # a duration, as every text output writes it (no raw µs),
            # its unit in the cell; the JSON's ns exactly in data-sort
            assert shown == duration(value) and unit == "", label
            assert int(row["sorts"][1]) == value and value in in_json, label
        else:
            assert number(shown) == value and value in in_json, label
    idle_pct = next(r for r in rows if r["key"] == "summary.idle_pct")
    assert idle_pct["cells"][1] == "11.92"  # the fixture's truth (tests/cli/test_gaps_cli.py)


def test_the_ops_table_is_the_ops_json(pages):
    ops = cli_json("ops", NAIVE)["runs"][0]["rows"]
    table = parse(pages["alone"]).tables["ops-table"][1:]  # after the header row
    columns = ["name", "calls", "self_cpu_us", "cpu_total_us", "device_us", "device_pct",
               "executions", "executions_per_call", "mean_dispatch_to_hw_us"]
    durations = {"self_cpu_us", "cpu_total_us", "device_us", "mean_dispatch_to_hw_us"}
    assert len(table) == len(ops) == 4
    for row, op in zip(table, ops, strict=True):
        assert row["cells"][0] == op["name"]
        for c, text, sort in zip(columns[1:], row["cells"][1:], row["sorts"][1:], strict=True):
            assert (None if sort is None else float(sort)) == op[c], c  # sorted by the JSON's
            # a duration as `traceana ops` writes it (7.891 s, never 7,891,466.0 µs)
            assert text == from_us(op[c]) if c in durations else number(text) == op[c], c


def test_the_gaps_table_lists_every_device_gap(pages):
    run = cli_json("gaps", NAIVE)["runs"][0]
    origin = run["window"]["start_ns"]
    table = parse(pages["alone"]).tables["gaps-table"][1:]
    assert [(int(r["sorts"][1]), int(r["sorts"][2]), r["cells"][3]) for r in table] == \
        [(g["start_ns"] - origin, g["duration_ns"], g["cause"]) for g in run["device_gaps"]]
    # at and gap as every text output writes a duration (trace_analyzer/numbers.py)
    assert [(r["cells"][1], r["cells"][2]) for r in table] == \
        [(instant(g["start_ns"], origin), duration(g["duration_ns"])) for g in run["device_gaps"]]
    assert "Every device gap" in pages["alone"].read_text()


@pytest.mark.parametrize("name", ["alone", "base"])
def test_the_page_holds_its_histogram_and_a_canvas_per_timeline(pages, name):
    text = pages[name].read_text(encoding="utf-8")
    imgs = parse(pages[name]).imgs
    # the gap histogram, the ranks' breakdown, the kernels, the queues, and the roofline:
    # the naive run has a device-profile export (docs/report.md)
    ids = [i["id"] for i in imgs]
    assert ids == ["plot-histogram", "plot-ranks", "plot-kernels", "plot-launches",
                   "plot-roofline"]
    assert imgs[0]["alt"]
    data = base64.b64decode(imgs[0]["src"].split(",", 1)[1])
    width, height = png_size(data)
    assert width == plots.WIDTH_IN * plots.DPI and 100 < height < 1500 and len(data) > 5000
    canvases = re.findall(r'<div class="tl" id="([\w-]+)" data-for="traceana-([\w-]+)"', text)
    assert canvases == ([("timeline", "timeline")] if name == "alone" else
                        [("timeline", "timeline"), ("base-timeline", "base-timeline")])
    assert text.count("<canvas") == len(canvases)


# ---- a long trace: a page of bounded size


def many_gaps_trace(folder: Path) -> Path:
    """200,000 kernels on four streams of one GPU, the device idle between every 97th, and
    1,500 framework ops (more than a timeline lists one by one), their names markup."""
    events, t = [], 0.0
    for i in range(200_000):
        dur = 2 + i % 7
        events.append(X("kernel", f"k{i % 50}", round(t, 3), dur, pid=0, tid=7 + i % 4,
                        device=0, stream=7 + i % 4))
        t += dur / 4 + (0.5 if i % 97 else 30 + (i * 7919 % 900))
    events += [X("cpu_op", f"aten::op{j % 13}</script><b>&\u2028", j * t / 1500, t / 3000,
                 pid=100, tid=100) for j in range(1500)]
    return write_trace(folder / "trace.json", kineto(events))


@pytest.fixture(scope="module")
def long_page(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("long")
    trace = many_gaps_trace(folder / "run")
    page = folder / "long.html"
    code, _, err = run_cli("report", trace.parent, "-o", page, "--no-cache")
    assert code == 0, err
    return page


@pytest.fixture(scope="module")
def long_gaps(long_page):
    """The gaps of the long trace, from the library (not the page)."""
    import trace_analyzer as ta

    return ta.gaps(load(long_page.parent / "run"))


def test_the_page_of_a_long_trace_is_small_and_lists_the_longest_gaps(long_page, long_gaps):
    assert long_page.stat().st_size <= 5_000_000
    page = parse(long_page)
    doc = json.loads(page.blocks["traceana-gaps"])
    run = doc["runs"][0]
    total = run["summary"]["gap_count"]
    assert total > 1500 and run["listed"]["device_gaps"] == {"listed": TOP_GAPS, "of": total}
    assert run["listed"]["gaps"]["listed"] == TOP_GAPS == len(run["gaps"])
    table = page.tables["gaps-table"][1:]
    assert len(table) == TOP_GAPS
    shown = [int(r["sorts"][2]) for r in table]  # the longest, in time order
    starts = [int(r["sorts"][1]) for r in table]
    assert starts == sorted(starts)
    everything = long_gaps.device_gaps["duration_ns"].to_list()
    assert len(everything) == total
    longest = sorted(everything, reverse=True)
    assert sorted(shown, reverse=True) == longest[:TOP_GAPS]
    text = long_page.read_text(encoding="utf-8")
    left = re.search(r'<span id="gaps-left-out">([\d,]+)</span>', text)[1]
    assert int(left.replace(",", "")) == total - TOP_GAPS
    # the timeline is bucketed: a bounded number of buckets per lane, the ops too
    t = json.loads(page.blocks["traceana-timeline"])["runs"][0]
    assert t["buckets"] <= 4000 and all(len(lane["busy"]) == t["buckets"] for lane in t["lanes"])
    assert t["op_count"] == 1500 and t["framework_ops"] == [] and t["op_rows"]
    # names from the trace stay data: no markup, and the JSON blocks cannot be closed early
    assert "<b>&" not in text and text.count("</script>") == text.count("<script")
    assert not any(c in raw for raw in page.blocks.values() for c in "<>&\u2028\u2029")
    assert t["op_names"] and all(n.endswith("</script><b>&\u2028") for n in t["op_names"])


def test_bucketed_lanes_add_up_to_their_busy_time(long_page):
    t = json.loads(parse(long_page).blocks["traceana-timeline"])["runs"][0]
    for lane in t["lanes"]:
        assert not lane["exact"] and lane["gaps"]  # the lane's longest gaps, listed
        busy = sum(lane["busy"]) * t["bucket_ns"] / 1000
        rounding = t["buckets"] * t["bucket_ns"] / 2000  # half a per mille of each bucket
        assert abs(busy - lane["busy_ns"]) <= rounding
        assert all(b + i <= 1001 for b, i in zip(lane["busy"], lane["idle"], strict=True))


# ---- Markdown
# ---- Markdown


def test_markdown_writes_the_md_and_its_plots_beside_it_and_nothing_else(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run_cli("report", NAIVE, "--base", FUSED, "-o", out / "report.md")
    assert code == 0, err
    names = {"report.md", "report.timeline.png", "report.base-timeline.png",
             "report.histogram.png", "report.roofline.png"}  # the roofline: NAIVE's device profile
    assert {p.name for p in tmp_path.rglob("*")} == {"out"} | names
    md = (out / "report.md").read_text()
    for png in sorted(names - {"report.md"}):
        assert f"]({png})" in md
        data = (out / png).read_bytes()
        assert png_size(data)[0] == plots.WIDTH_IN * plots.DPI and len(data) > 5000
    assert "a pull-request comment or a CI summary cannot show them" in md and "--no-images" in md
    # the existing Markdown renderers, as the CLI prints them
    for args in (("gaps", NAIVE), ("ops", NAIVE), ("diff", FUSED, NAIVE)):
        code, text, _ = run_cli(*args, "--format", "markdown")
        assert text.strip() in md, args


def test_markdown_with_no_images_writes_the_md_alone_and_needs_no_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails
    code, _, err = run_cli("report", NAIVE, "--no-images", "-o", tmp_path / "r.md")
    assert code == 0, err
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]
    md = (tmp_path / "r.md").read_text()
    assert "![" not in md and ".png" not in md and "--no-images" in md
    code, _, err = run_cli("report", NAIVE, "--no-images", "-o", tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    assert "<img" not in page and "<canvas" in page


def test_markdown_of_a_long_trace_leaves_out_the_per_lane_gaps(long_page, tmp_path):
    run = long_page.parent / "run"
    code, _, err = run_cli("report", run, "--no-images", "-o", tmp_path / "r.md")
    assert code == 0, err
    md = (tmp_path / "r.md").read_text()
    assert "gaps, per lane</summary>" not in md and len(md) < 60_000  # fits a PR comment


def test_markdown_without_a_base_has_two_plots_and_the_roofline(tmp_path):
    code, _, err = run_cli("report", NAIVE, "-o", tmp_path / "r.md")
    assert code == 0, err
    # the roofline too: NAIVE has a device-profile export (the engines section)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.histogram.png", "r.md",
                                                          "r.roofline.png",
                                                          "r.timeline.png"]
    assert "## diff" not in (tmp_path / "r.md").read_text()


# ---- errors


@pytest.mark.parametrize("args, says", [
    (["{fixtures}", "-o", "{tmp}/r.html"], "5 runs found"),
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
    code = ("import sys, trace_analyzer, trace_analyzer.cli, trace_analyzer.questions.report.files, "
            "trace_analyzer.questions.report.plots, trace_analyzer.questions.report.page; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- the plots' geometry


def test_busy_blocks_and_gaps_fill_the_window(pages):
    run = gaps_doc([load(NAIVE)], str(NAIVE))["runs"][0]
    t = json.loads(parse(pages["alone"]).blocks["traceana-timeline"])["runs"][0]
    (lane,) = t["lanes"]
    assert lane["exact"] and len(lane["gaps"]) == len(run["gaps"]) == 5  # few: listed one by one
    blocks = plots.busy_blocks(lane)
    assert len(blocks) == lane["executions"] == 6  # no two executions touch in this run
    assert sum(e - s for s, e in blocks) == run["lanes"][0]["busy_ns"]
    assert blocks[0][0] == 0 and blocks[-1][1] == run["window"]["duration_ns"] == t["to_ns"]


def test_nested_framework_ops_go_one_row_down():
    ops = pl.DataFrame({"name": ["outer", "inner", "next"], "start_ns": [0, 10, 100],
                        "end_ns": [100, 90, 120]})
    assert timeline_module.packed(ops)["row"].to_list() == [0, 1, 0]


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


def chromium(profile: Path, page: Path, *args: str,
             fragment: str = "") -> subprocess.CompletedProcess:
    """Run Debian's chromium headless on ``page`` (its URL ending in ``fragment``), with no
    way to reach a network."""
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--no-proxy-server", *args,
           page.as_uri() + fragment]
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines()
               if ":CONSOLE" in line or "Uncaught" in line]
    assert console == [], console  # the page logs nothing: no error, no failed resource
    return done


def needs_chromium():
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is absent: apt-get install chromium (.ci/run does, as "
                    "root) to run the browser test of the report")


def html_attrs(dom: str) -> dict[str, str]:
    root = re.search(r"<html[^>]*>", dom)[0]
    return {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', root)}


def test_in_a_browser_the_page_loads_and_shows_its_plots(pages, tmp_path):
    needs_chromium()
    page = pages["base"]
    dom = chromium(tmp_path / "profile", page, "--dump-dom").stdout
    attrs = html_attrs(dom)
    assert attrs.get("data-ready") == "yes"  # the inline script ran to its end
    # every plot laid out: 5 with the roofline (NAIVE has a device-profile export)
    assert attrs["data-images"] == attrs["data-images-loaded"] == "5"
    # every JSON block parsed (critical, ranks, kernels, launches, and engines: NAIVE's
    # device profile)
    assert attrs["data-json-blocks"] == "11"
    assert attrs["data-timelines"] == "2" and "data-errors" not in attrs
    assert len(re.findall(r'<a [^>]*download="', dom)) == 11
    srcs = re.findall(r'<img [^>]*src="([^"]*)"', dom)
    assert len(srcs) == 5
    for src in srcs:
        png_size(base64.b64decode(src.split(",", 1)[1]))
    run = cli_json("gaps", NAIVE)["runs"][0]
    shown = re.search(r'<div class="tl" id="timeline"[^>]*>', dom)[0]
    start = int(re.search(r'data-visible-start-ns="(-?\d+)"', shown)[1])
    end = int(re.search(r'data-visible-end-ns="(-?\d+)"', shown)[1])
    assert start < 0 and end - start >= run["window"]["duration_ns"]  # the whole run

    shot = tmp_path / "shot.png"
    chromium(tmp_path / "profile2", page, f"--screenshot={shot}", "--window-size=1400,2000")
    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, 2000)
    colours = dict((c, n) for n, c in image.getcolors(1 << 24))
    assert len(colours) > 200  # text, tables and plots, not a blank page
    # the timeline is on screen, drawn on its canvas: busy time and the transfer gap
    rgb = lambda h: tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))  # noqa: E731
    timeline_only = dict((c, n) for n, c in image.crop((0, 700, 1400, 1200)).getcolors(1 << 24))
    assert timeline_only.get(rgb(plots.BUSY_COLOUR), 0) > 8_000
    assert timeline_only.get(rgb(plots.CAUSE_COLOURS["transfer"]), 0) > 500
    top = image.crop((0, 0, 1400, 300)).getcolors(1 << 24)
    assert len(top) > 20  # the header's text is drawn


@pytest.mark.parametrize("which", ["fixture", "long"])
def test_in_a_browser_the_timeline_zooms_pans_and_names_a_gap_s_cause(which, pages, long_page,
                                                                       long_gaps, tmp_path):
    """The page's test hook (#test-zoom) hovers the longest gap it lists, then zooms with the
    wheel and the + button, drags, and resets; it writes what it saw on <html>."""
    needs_chromium()
    page = pages["base"] if which == "fixture" else long_page
    dom = chromium(tmp_path / "profile", page, "--dump-dom", fragment="#test-zoom").stdout
    attrs = html_attrs(dom)
    assert attrs.get("data-ready") == "yes" and "data-errors" not in attrs
    ranges = json.loads(attrs["data-test-ranges"])
    spans = [hi - lo for lo, hi in ranges]
    assert spans[1] < spans[0] and spans[2] < spans[1]  # the wheel zoomed in, then +
    assert spans[3] == spans[2] and ranges[3][0] < ranges[2][0]  # dragged right: earlier
    assert ranges[4] == ranges[0]  # reset: the whole run
    # the hovered gap: the longest the gaps JSON lists, its cause, duration and evidence
    gaps = cli_json("gaps", NAIVE)["runs"][0] if which == "fixture" else long_gaps.to_json()
    origin = gaps["window"]["start_ns"]
    at, length, cause = json.loads(attrs["data-test-gap"])
    assert length == max(g["duration_ns"] for g in gaps["gaps"])
    (g,) = [g for g in gaps["gaps"] if g["start_ns"] - origin == at and g["duration_ns"] == length]
    assert cause == g["cause"]
    tip = attrs["data-test-tooltip"]
    assert tip.startswith(f"gap: {g['cause']} | duration {duration(g['duration_ns'])} | "
                          f"at {instant(g['start_ns'], origin)} after the window start | ")
    assert g["evidence"] in tip and g["lane"] in tip
    # the page writes durations as trace_analyzer/numbers.py does
    cases = [0, 38, 999, 1000, 1125, 100250, 172125, 999960, 999999, 1809250, 5630000,
             5630000000, 12345678901, -23000, -0.4]
    assert json.loads(attrs["data-test-format"]) == {
        "duration": [duration(n) for n in cases], "instant": [instant(n, 0) for n in cases]}
