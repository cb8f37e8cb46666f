"""Names are data, not markup (issue 18): one profile whose op, kernel, host (process) and
file and folder names hold terminal escapes, controls, bidirectional overrides, Markdown,
HTML, XML, DOT and spreadsheet syntax goes through every output of every analysing command,
and each output keeps what its reader relies on:

- terminal text (``table``): no control character reaches it; one a name holds is shown as
  the text of its escape (``\\x1b``), so the reader sees it is there;
- Markdown: no HTML element and no link comes from a name, not even the links GitHub makes
  of a bare ``https://x``, ``www.x`` or ``a@b.cd`` (tests/render/test_names_on_github.py
  renders with GitHub's own cmark-gfm), and a ``|`` in a name adds no column;
- HTML (the report page): no element or event handler comes from a name, and its text
  shows a name's control characters as escapes, as terminal text does;
- JSON (every command's, the Perfetto export, node-link graph JSON): the names exactly as the
  trace wrote them, in a text that holds no raw C1 or bidirectional control either;
- CSV: no cell a spreadsheet would run as a formula, no control character (each shown as
  its escape, as terminal text shows it: the file is safe to ``cat``), the names otherwise
  kept;
- GraphML: parses as XML and gives every name back (the characters XML 1.0 cannot hold shown
  as escapes); DOT: parses, every name is one quoted value, no name adds an attribute.

The expected values come from the names this file writes; the escapes from the rule the
docs state (docs/output.md, docs/graph.md), written out here again.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import X, kineto, write_trace

from trace_analyzer.cli import cli

LONG = "aten::" + "very_long_name_" * 400  # 6 kB: kernel names can be kilobytes
NAMES = [
    "\x1b[2J clear",
    "\x1b]0;pwned\x07 title",
    "c0 \x01\x02\x08\x0b\x0c\x0e\x1f del \x7f",
    "c1 \x85 \x9b31m",
    "bidi \u202eevil\u202c \u2066iso\u2069",
    "nul \x00 nul",
    "pipe | cell",
    "</details>",
    "<img src=x onerror=alert(1)>",
    "[link](http://x)",
    "=cmd|' /C calc'!A0",
    "+1",
    "-1",
    "@x",
    "$x_1$",
    "quotes \" and '",
    '"a" URL="javascript:alert(1)" b="c"',
    "back\\slash \\N \\",
    "&amp;",
    "new\nline\r\nend",
    "tab\there",
    "]]>",
    "-->",
    # what GitHub links without <>: URLs, www., addresses (mailto:, xmpp: too)
    "url https://x.example/a?b=1 ftp://x.example",
    "www.x.example WWW.y.example",
    "mail a.b+c@x.example mailto:d@x.example xmpp:e@x.example/r",
    LONG,
]
KERNELS = ["k " + n for n in NAMES]
# A folder holding the run, and a host (a Neuron capture folder `<host>_pid_<pid>`), and a
# file: anything a file name can hold (no "/", no NUL; no line break, which the capture
# folder pattern does not take).
FOLDER = "runs \x1b]0;pwned\x07 <b>|&amp; \u202e www.x.example a@x.example"
HOST = "h\x1b[31m<img src=x onerror=alert(1)>|[l](x)&amp;\"'\u202e"
FILE = "tr\x1b[2J <i>|`x`.json"

# Characters no terminal text may hold: C0 but line feed, DEL, C1, bidirectional controls.
TERMINAL_UNSAFE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
# The escape a name's control character is shown as (docs/output.md): \x1b, \u202e.
SHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
# The one piece of HTML Markdown output holds: the empty comment after an "@" that keeps
# GitHub from making an address a link (docs/output.md); it makes no element.
EMPTY_COMMENT = "<!-- -->"


def escape(c: str) -> str:
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def in_terminal(name: str) -> str:
    """A name as terminal text shows it: line breaks and tabs as spaces, controls escaped."""
    return SHOWN.sub(lambda m: escape(m[0]), re.sub("[\t\n\r]", " ", name))


def in_csv(name: str) -> str:
    """A name as a CSV cell holds it: its control characters (a carriage return too) shown
    as escapes, tabs and line feeds kept; a formula's first character after a quote."""
    shown = SHOWN.sub(lambda m: escape(m[0]), name)
    return "'" + shown if shown[0] in "=+-@\t" else shown


def csv_text(text: str) -> None:
    """CSV text holds no control character but the tabs and line feeds of its cells."""
    bad = sorted({hex(ord(c)) for c in SHOWN.findall(text)})
    assert not bad, bad


def in_xml(name: str) -> str:
    return NOT_XML.sub(lambda m: escape(m[0]), name)


def in_dot(name: str) -> str:
    """A name as a DOT label says it once DOT's own escapes are read: line breaks kept,
    other control characters shown as escapes."""
    return SHOWN.sub(lambda m: escape(m[0]) if m[0] not in "\r" else m[0], name)


def run(*args: object) -> tuple[int, str, str]:
    """``traceana ARGS`` in-process, with click's colour stripping off (so that nothing but
    traceana's own output decides what escapes are left) and no terminal width."""
    result = CliRunner().invoke(cli, [str(a) for a in args], color=True, env={"COLUMNS": ""})
    # the bytes, as written (click's Result.stdout turns \r\n into \n)
    return result.exit_code, result.stdout_bytes.decode(), result.stderr_bytes.decode()


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    """The run folder: one op per name launching one kernel ("k " + the name) on stream 7,
    100 µs apart, each kernel 40 µs (60 µs gaps); the streams and the process named too."""
    top = tmp_path_factory.mktemp("hostile") / FOLDER
    events = [
        {"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": NAMES[1]}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": NAMES[0]}},
    ]
    for i, (op, kernel) in enumerate(zip(NAMES, KERNELS, strict=True)):
        t = 1000 + 100 * i
        events.append(X("cpu_op", op, t, 20, **{"External id": i + 1}))
        events.append(X("cuda_runtime", "cudaLaunchKernel", t + 5, 5, correlation=i + 1))
        events.append(X("kernel", kernel, t + 30, 40, pid=0, tid=7, device=0, stream=7,
                        correlation=i + 1))
    write_trace(top / f"{HOST}_pid_100" / FILE, kineto(events))
    return top


def terminal_text(text: str) -> None:
    """Terminal text holds no control character (the pty test, tests/cli/
    test_terminal_escapes.py, checks the bytes a real terminal gets)."""
    bad = sorted({hex(ord(c)) for c in TERMINAL_UNSAFE.findall(text)})
    assert not bad, bad


TOP = ("--top", "100")  # every row shown
TEXT_CASES = [("gaps", TOP), ("ops", TOP), ("chain", TOP), ("info", ()), ("critical", TOP)]


@pytest.mark.parametrize(("command", "extra"), TEXT_CASES)
def test_terminal_text_shows_escapes_and_holds_none(profile, command, extra):
    code, out, err = run(command, profile, "--no-cache", *extra)
    assert code == 0, err
    terminal_text(out)
    terminal_text(err)
    assert in_terminal(FOLDER) in out  # the run's root, escapes shown
    if command in ("ops", "chain"):
        names = NAMES if command == "ops" else KERNELS
        for name in names:
            assert in_terminal(name) in out, name
    if command == "info":
        assert in_terminal(HOST) in out and in_terminal(FILE) in out


def markdown_tokens(text: str):
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(text)
    for t in tokens:
        yield t
        yield from t.children or ()


@pytest.mark.parametrize(("command", "extra"), TEXT_CASES)
def test_markdown_renders_no_tag_link_or_column_from_a_name(profile, command, extra):
    pytest.importorskip("markdown_it")
    code, out, err = run(command, profile, "--no-cache", "--format", "markdown", *extra)
    assert code == 0, err
    terminal_text(out)
    tokens = list(markdown_tokens(out))
    kinds = {t.type for t in tokens if not (t.type == "html_inline" and t.content == EMPTY_COMMENT)}
    assert not kinds & {"html_inline", "html_block", "link_open", "image"}, kinds
    cells = 0
    for t in tokens:  # every row of a table has its header's number of cells
        if t.type == "thead_open":
            heads = 0
        elif t.type == "th_open":
            heads += 1
        elif t.type == "tr_open":
            cells = 0
        elif t.type == "td_open":
            cells += 1
        elif t.type == "tr_close" and cells:
            assert cells == heads
    text = "".join(t.content for t in tokens if t.type == "text" or t.type == "html_inline")
    text = text.replace(EMPTY_COMMENT, "")
    for name in NAMES if command == "ops" else ():  # each op name reads as written: its start
        # and its end (a name over a cell's 160 characters is cut in its middle)
        assert in_terminal(name)[:75] in text and in_terminal(name)[-75:] in text, name


def json_strings(doc: object):
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield k
            yield from json_strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from json_strings(v)


def raw_json(text: str) -> object:
    """JSON text is safe on a terminal too (every control escaped), and parses."""
    terminal_text(text.replace("\n", ""))
    return json.loads(text)


@pytest.mark.parametrize("command", ["gaps", "ops", "chain", "info", "critical"])
def test_json_keeps_every_name_exactly(profile, command):
    code, out, err = run(command, profile, "--no-cache", "--format", "json")
    assert code == 0, err
    doc = raw_json(out)
    run_doc = doc["runs"][0]
    strings = set(json_strings(run_doc))
    assert any(FOLDER in s for s in strings)  # the root
    if command == "ops":
        assert {r["name"] for r in run_doc["rows"]} == set(NAMES)
    if command == "chain":
        assert {r["hw_name"] for r in run_doc["rows"]} == set(KERNELS)
        assert {r["op"] for r in run_doc["rows"]} == set(NAMES)
    if command == "gaps":
        assert set(NAMES[1:]) <= strings  # the op after each gap, by name
    if command == "info":
        assert {p["host"] for p in run_doc["processes"]} == {HOST}
        assert any(s.endswith("/" + FILE) for s in strings)
    if command == "critical":  # the kernels on the path, by name
        work = {r["name"] for r in run_doc["path"] if r["kind"] == "compute"}
        assert work and work <= set(KERNELS), work


@pytest.mark.parametrize("command", ["gaps", "ops", "chain", "info", "critical"])
def test_csv_has_no_formula_or_control_and_keeps_the_names(profile, command):
    code, out, err = run(command, profile, "--no-cache", "--format", "csv")
    assert code == 0, err
    csv_text(out)
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    cells = [v for r in rows for v in r.values() if v]
    assert not [v for v in cells if v[0] in "=+@\t\r"]
    assert all(float(v) is not None for v in cells if v[0] == "-")  # only numbers
    if command == "ops":
        assert {r["name"] for r in rows} == {in_csv(n) for n in NAMES}
    if command == "chain":
        assert {r["hw_name"] for r in rows} == {in_csv(n) for n in KERNELS}


def test_diff_every_format(profile):
    for fmt in ("table", "markdown", "json", "csv"):
        code, out, err = run("diff", profile, profile, "--no-cache", "--format", fmt)
        assert code == 0, (fmt, err)
        if fmt == "json":
            strings = set(json_strings(raw_json(out)))
            assert str(profile) in strings and set(NAMES) <= strings  # the root, the ops
        elif fmt == "csv":
            csv_text(out)
        else:
            terminal_text(out)
        if fmt == "table":
            assert in_terminal(FOLDER) in out


class Tags(HTMLParser):
    """The start tags of a page, and the text it shows (its character references read; not
    the text of its script and style elements, which the browser does not show)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.hidden = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        self.hidden = tag in ("script", "style")

    def handle_endtag(self, tag):
        self.hidden = False

    def handle_data(self, data):
        if not self.hidden:
            self.text.append(data)


@pytest.mark.parametrize("images", ["--images", "--no-images"])
def test_report_page_takes_no_tag_from_a_name(profile, tmp_path, images):
    if images == "--images":
        pytest.importorskip("matplotlib")
    page_path = tmp_path / "r.html"
    code, out, err = run("report", profile, "-o", page_path, "--no-cache", images)
    assert code == 0, err
    terminal_text(err)  # no matplotlib warning carries a name's control characters
    page = page_path.read_text()
    parser = Tags()
    parser.feed(page)
    for tag, attrs in parser.tags:
        assert not [a for a, _ in attrs if a.lower().startswith("on")], (tag, attrs)
        if tag == "img":
            assert dict(attrs)["src"].startswith("data:image/"), attrs
    assert not [t for t, _ in parser.tags if t in ("i", "details")]  # from FOLDER, FILE
    # what the page shows holds no control character: each shown as its escape, as in a
    # terminal (a browser would act on a bidirectional override, and draw ESC as nothing)
    shown = "".join(parser.text)
    csv_text(shown)
    csv_text("".join(v or "" for _, attrs in parser.tags for _, v in attrs))
    assert in_terminal(FOLDER) in shown  # the run's root, in the header and the title
    for name in NAMES[:-1]:  # the ops table, every op by name
        assert in_terminal(name) in shown, name
    blocks = re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S)
    assert blocks
    strings = set().union(*(json_strings(json.loads(b)) for b in blocks))
    assert set(NAMES[1:]) & strings  # the page's data keeps names exactly


def test_report_markdown(profile, tmp_path):
    pytest.importorskip("markdown_it")
    code, out, err = run("report", profile, "-o", tmp_path / "r.md", "--no-cache", "--no-images")
    assert code == 0, err
    text = (tmp_path / "r.md").read_text()
    terminal_text(text)
    tokens = markdown_tokens(text)
    kinds = {t.type for t in tokens if not (t.type == "html_inline" and t.content == EMPTY_COMMENT)}
    assert not kinds & {"html_inline", "html_block", "link_open"}, kinds


def test_perfetto_export_keeps_every_name(profile, tmp_path):
    code, out, err = run("export", profile, "-o", tmp_path / "e.json", "--no-cache")
    assert code == 0, err
    doc = json.loads((tmp_path / "e.json").read_text())
    names = {e.get("name") for e in doc["traceEvents"]}
    assert set(NAMES) | set(KERNELS) <= names
    meta = {e["args"]["name"] for e in doc["traceEvents"] if e.get("ph") == "M"
            and e["name"] in ("process_name", "thread_name")}
    assert any(HOST in m for m in meta), meta


def graph_labels(tmp_path, profile, ext: str) -> Path:
    path = tmp_path / f"g.{ext}"
    code, out, err = run("graph", profile, "-o", path, "--no-cache")
    assert code == 0, err
    return path


def test_graph_json_keeps_every_name(profile, tmp_path):
    doc = json.loads(graph_labels(tmp_path, profile, "json").read_text())
    labels = {n["label"] for n in doc["nodes"]}
    assert set(NAMES) | set(KERNELS) <= labels
    assert {n["lane"].split("/")[0] for n in doc["nodes"]} == {HOST}


def test_graphml_parses_as_xml_and_gives_the_names_back(profile, tmp_path):
    root = ET.parse(graph_labels(tmp_path, profile, "graphml")).getroot()
    ns = "{http://graphml.graphdrawing.org/xmlns}"
    keys = {k.get("id"): k.get("attr.name") for k in root.iter(ns + "key")}
    values: dict[str, set[str]] = {}
    for d in root.iter(ns + "data"):
        values.setdefault(keys[d.get("key")], set()).add(d.text or "")
    assert {in_xml(n) for n in NAMES + KERNELS} <= values["label"]
    assert {v.split("/")[0] for v in values["lane"]} == {in_xml(HOST)}


def dot_unquoted(value: str) -> str:
    """The text of one quoted DOT value, DOT's escapes read (\\\\, \\", \\n, \\r)."""
    assert value.startswith('"') and value.endswith('"'), value
    reads = {"\\": "\\", '"': '"', "n": "\n", "r": "\r"}
    return re.sub(r'\\(.)', lambda m: reads.get(m[1], "\\" + m[1]), value[1:-1], flags=re.S)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pyparsing, inside pydot
def test_dot_parses_and_quotes_every_name(profile, tmp_path):
    pydot = pytest.importorskip("pydot", reason="DOT output needs pydot (traceana[graph])")
    text = graph_labels(tmp_path, profile, "dot").read_text()
    graphs = pydot.graph_from_dot_data(text)
    assert graphs and len(graphs) == 1
    nodes = [n for n in graphs[0].get_nodes() if n.get_name() not in ("node", "edge", "graph")]
    assert nodes
    labels = set()
    for n in nodes:
        attrs = n.get_attributes()
        assert set(attrs) == {"label", "lane", "kind", "start_ns", "end_ns"}, attrs
        label = attrs["label"]
        labels.add(dot_unquoted(label) if label.startswith('"') else label)
        assert dot_unquoted(attrs["lane"]).split("/")[0] == in_dot(HOST)
    assert {in_dot(n) for n in NAMES + KERNELS} <= labels


def test_batch_and_trend_outputs(profile, tmp_path):
    table = tmp_path / "runs.parquet"
    code, out, err = run("batch", profile.parent, "-o", table, "--jobs", "1")
    assert code == 0, err
    terminal_text(err)
    for fmt in ("table", "markdown", "json", "csv"):
        code, out, err = run("trend", table, "--format", fmt)
        assert code == 0, (fmt, err)
        if fmt == "json":
            assert any(FOLDER in s for s in json_strings(raw_json(out)))
        elif fmt == "csv":
            csv_text(out)
            assert in_csv(FOLDER) in out
        else:
            terminal_text(out)
            if fmt == "table":
                assert in_terminal(FOLDER) in out


CHROMIUM = Path("/usr/bin/chromium")


def test_in_a_browser_the_timeline_s_tooltip_shows_escapes(profile, tmp_path):
    """The page's script draws names from its JSON (lanes, ops, a gap's evidence) on the
    canvas and in the tooltip: as the rest of the page, with control characters shown as
    escapes. The page's test hook (#test-zoom, tests/render/test_report.py) hovers a gap and
    writes the tooltip's lines on <html>; the lane it names holds the host's escapes."""
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is absent: apt-get install chromium")
    page = tmp_path / "r.html"
    code, out, err = run("report", profile, "-o", page, "--no-cache", "--no-images")
    assert code == 0, err
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", "--host-resolver-rules=MAP * ~NOTFOUND",
           "--no-proxy-server", "--dump-dom", page.as_uri() + "#test-zoom"]
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env).stdout
    root = re.search(r"<html[^>]*>", dom)[0]
    attrs = {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', root)}
    assert attrs.get("data-ready") == "yes" and "data-errors" not in attrs, attrs
    tip = attrs["data-test-tooltip"]
    csv_text(tip)
    assert f"lane {in_terminal(HOST)}/" in tip, tip
