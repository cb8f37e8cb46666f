"""The report page writes durations as people read them, and its histogram weighs gaps by the
idle they hold (issue 39, docs/report.md), with traceana run as a real process.

Durations: a real trace's page holds no raw µs (``7,891,466.0 µs``; a header in µs over raw
numbers): each duration is a number and a unit, the number below 1000 and at least 1 of its
unit (but 0 and ns), and it reads within its four significant digits as the JSON's value.
Histogram: its bins (the page's timeline JSON, what the plot draws) add up to the device gaps'
idle that the test sums itself from ``traceana gaps --format json``, and on a small trace whose
gaps are known by construction, the one long gap's bin holds its idle, however many short
gaps there are.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import X, kineto, run_process, write_trace

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
REAL = [CORPUS / "real/kineto/tb_plugin_resnet50", CORPUS / "real/tracelens/h100_bert",
        CORPUS / "hta/tests/data/critical_path/alexnet"]  # fmt: skip
NS = {"ns": 1, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
DURATION = re.compile(r"^([+\-]?\d+(?:\.\d+)?) (ns|µs|ms|s)$")
RAW = re.compile(r"\d{1,3}(?:,\d{3})+\.\d+|\d{5,}\.\d+")  # 7,891,466.0 or 7891466.0


class Visible(HTMLParser):
    """The page's text as a reader sees it (no script, style or data: URI), its table
    headers, and its summary cells (key, text, data-sort)."""

    def __init__(self, text: str):
        super().__init__()
        self.text, self.heads, self.summary = [], [], []
        self._skip, self._th, self._key, self._cell = 0, None, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "th" and a.get("scope") == "col":
            self._th = []
        elif tag == "tr":
            self._key = a.get("data-key")
        elif tag == "td" and self._key and a.get("class") == "num":
            self._cell = [a.get("data-sort")]

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag == "th" and self._th is not None:
            self.heads.append("".join(self._th))
            self._th = None
        elif tag == "td" and self._cell is not None:
            self.summary.append((self._key, "".join(self._cell[1:]), self._cell[0]))
            self._cell = None

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        for part in (self._th, self._cell):
            if part is not None:
                part.append(data)


def report(path: Path, out: Path) -> tuple[str, dict]:
    """Return the page of ``traceana report PATH`` and its timeline JSON."""
    code, _, err, *_ = run_process("report", path, "--no-cache", "-o", out, timeout=300)
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="traceana-timeline"[^>]*>\n(.*?)\n'
                      r"</script>", page, re.S)  # fmt: skip
    assert block, "no timeline JSON in the page"
    return page, json.loads(block[1])


def gaps_json(path: Path) -> dict:
    code, out, err, *_ = run_process("gaps", path, "--no-cache", "--format", "json", timeout=300)
    assert code == 0, err
    return json.loads(out)


def real(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    return path


def reads_as(text: str, ns: float) -> bool:
    """Whether ``text`` is a duration as people read it (a number below 1000 of the largest
    unit that keeps it at least 1) that is ``ns`` within its four significant digits."""
    m = DURATION.match(text)
    if not m:
        return False
    value, per = float(m[1]), NS[m[2]]
    if value and not (1 <= abs(value) < 1000 or per == 1 or (per == NS["s"] and abs(value) >= 1)):
        return False
    return abs(value * per - ns) <= max(0.0005 * abs(ns), 0.005 * per)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_the_page_of_a_real_trace_writes_no_raw_microseconds(path, tmp_path):
    page, _ = report(real(path), tmp_path / "r.html")
    seen = Visible(page)
    text = "\n".join(seen.text)  # each text node apart (cells are not one number)
    assert not RAW.findall(text), RAW.findall(text)[:5]
    over = [t for t in re.findall(r"[\d,]+(?:\.\d+)? µs", text)
            if float(t.split()[0].replace(",", "")) >= 1000]  # fmt: skip
    assert not over, over[:5]  # 1,000 µs and more are written in ms or s
    assert not [h for h in seen.heads if "µs" in h], seen.heads  # units in cells, not headers
    run = gaps_json(path)["runs"][0]
    durations = [(k, t, s) for k, t, s in seen.summary if "_ns" in k and t]
    assert len(durations) >= 10, seen.summary
    for key, shown, sort in durations:
        value = lookup(run, key)
        assert reads_as(shown, value) and float(sort) == value, (key, shown, value)


def lookup(run: dict, key: str):
    for part in key.split("."):
        run = run[part]
    return run


@pytest.mark.parametrize("path", REAL[:1], ids=lambda p: p.name)
def test_the_histogram_of_a_real_trace_adds_up_to_its_idle(path, tmp_path):
    _, timeline = report(real(path), tmp_path / "r.html")
    h = timeline["runs"][0]["histogram"]
    gaps = gaps_json(path)["runs"][0]["device_gaps"]
    assert sum(map(sum, h["idle_ns"].values())) == sum(g["idle_ns"] for g in gaps)
    assert sum(map(sum, h["counts"].values())) == len(gaps)


def test_one_long_gap_holds_its_idle_however_many_short_ones(tmp_path):
    """Thirty-nine 1 µs gaps and one of 2 ms on one stream (41 kernels of 10 µs): the idle is
    2.039 ms, 2 ms of it in the bin of the long gap, which counts one gap where the short
    ones count 39."""
    events, t = [], 100.0
    for i in range(41):
        events.append(X("kernel", f"k{i}", t, 10, pid=0, tid=7, device=0, stream=7))
        t += 10 + (2000 if i == 20 else 1)
    write_trace(tmp_path / "run" / "trace.json", kineto(events))
    _, timeline = report(tmp_path / "run", tmp_path / "r.html")
    h = timeline["runs"][0]["histogram"]
    idle = [sum(b) for b in zip(*h["idle_ns"].values(), strict=True)]
    counts = [sum(b) for b in zip(*h["counts"].values(), strict=True)]
    assert sum(idle) == 39 * 1_000 + 2_000_000
    assert max(idle) == idle[-1] == 2_000_000 and counts[-1] == 1  # the long gap's bin
    assert sum(counts) == 40 and counts[0] == 39  # counted, the short gaps would hide it
