"""Markdown for pull requests: never over 60,000 characters, every table a table, numbers
right-aligned (docs/output.md).

Each real trace of ../shared/corpus (real/ and hta/) goes through `traceana gaps|ops|chain
--format markdown`; a synthetic profile of 50,000 gaps and 2,000 ops, many runs in one
result, and prose alone over the budget check that the budget holds whatever the input.
Documents are parsed with markdown-it-py (CommonMark with GFM tables), as GitHub would.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import X, kineto, run_cli, write_trace
from markdown_it import MarkdownIt

import trace_analyzer as ta
from trace_analyzer.questions.gaps.analysis import gaps_runs
from trace_analyzer.render import View
from trace_analyzer.render.blocks import Column, Items, Table
from trace_analyzer.render.budget import BUDGET, fit
from trace_analyzer.render.text import render_markdown

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
TRACES = sorted(str(p.relative_to(CORPUS)) for top in ("real", "hta") if (CORPUS / top).is_dir()
                for p in (CORPUS / top).rglob("*.json*"))
ABSENT = (f"../shared/corpus is absent: no {CORPUS / 'real'} or {CORPUS / 'hta'}; the Markdown "
          "budget is checked on every real trace of the shared corpus")
# A cell that is a number as the text reports write it: 1,234; 1.5; 172.1 µs; 11.92 %; a dash.
NUMBER = re.compile(r"^(–|[+-]?[\d,]+(\.\d+)?( ?(ns|µs|ms|s|%))?)$")
DELIMITER = re.compile(r"^\|( ?:?-+:? ?\|)+$")
PARSER = MarkdownIt("commonmark").enable("table")


def tables_of(text: str) -> list[dict]:
    """Parse ``text`` as GitHub would and return its tables: each one's header cells, body
    rows (cells as text) and the alignment of each cell (``right`` or None), header and body;
    fail when a table lacks its head or body or a row has the wrong number of cells."""
    tokens = PARSER.parse(text)
    tables, current, row, seen = [], None, None, set()
    for tok in tokens:
        seen.add(tok.type)
        if tok.type == "table_open":
            current = {"head": [], "rows": [], "align": [], "parts": set()}
        elif tok.type in ("thead_open", "tbody_open"):
            current["parts"].add(tok.tag)
        elif tok.type == "tr_open":
            row = ([], [])
        elif tok.type in ("th_open", "td_open"):
            style = (tok.attrs or {}).get("style")
            row[1].append("right" if style == "text-align:right" else None)
        elif tok.type == "inline" and row is not None:
            row[0].append(tok.content)
        elif tok.type == "tr_close":
            if not current["head"]:
                current["head"] = row[0]
            else:
                current["rows"].append(row[0])
            current["align"].append(row[1])
            row = None
        elif tok.type == "table_close":
            assert current["parts"] == {"thead", "tbody"}, current
            width = len(current["head"])
            assert width and all(len(r) == width for r in current["rows"]), current
            assert all(len(a) == width for a in current["align"]), current
            tables.append(current)
            current = None
    return tables


def check_markdown(text: str) -> list[dict]:
    """Assert what every Markdown document of traceana holds: at most BUDGET characters,
    every pipe table parsed as a table (one per delimiter row), numeric columns
    right-aligned and text columns not; return the tables."""
    assert len(text) <= BUDGET, len(text)
    tables = tables_of(text)
    lines = text.splitlines()
    delimiters = [i for i, ln in enumerate(lines) if DELIMITER.match(ln)]
    assert len(tables) == len(delimiters), (len(tables), delimiters)
    for t, at in zip(tables, delimiters, strict=True):
        piped = next((k for k, ln in enumerate(lines[at + 1:]) if not ln.startswith("|")),
                     len(lines) - at - 1)
        assert len(t["rows"]) == piped, t["rows"][-1]  # no line of prose taken for a row
        for j, name in enumerate(t["head"]):
            cells = [r[j] for r in t["rows"]]
            numeric = all(NUMBER.match(c) for c in cells) and any(c != "–" for c in cells)
            want = "right" if numeric else None
            if numeric or not any(NUMBER.match(c) for c in cells):  # mixed: either way
                assert {a[j] for a in t["align"]} == {want}, (name, cells[:5])
    return tables


# ---- every real trace of the corpus


@pytest.mark.parametrize("command", ["gaps", "ops", "chain"])
@pytest.mark.parametrize("rel", TRACES)
def test_every_corpus_trace_gives_a_pull_request_sized_markdown(rel, command):
    if not TRACES:
        pytest.skip(ABSENT)
    # through the session's cache (conftest, outside the corpus): each trace read once
    code, out, err = run_cli(command, CORPUS / rel, "--format", "markdown")
    if code == 2:  # traceana refuses it on purpose (an execution trace, rocprofiler JSON)
        assert out == "" and len(err.splitlines()) == 1, err
        return
    assert code == 0, err
    assert out.startswith(f"## {command}: ")
    check_markdown(out)
    assert not re.search(r"\b(null|None|NaN)\b", out)


def test_the_corpus_has_traces():
    if not CORPUS.is_dir():
        pytest.skip(ABSENT)
    assert len(TRACES) >= 30


def test_several_runs_share_the_budget():
    """The HTA sample folder: 17 runs in one result, each with its own report."""
    if not (CORPUS / "hta").is_dir():
        pytest.skip(ABSENT)
    code, out, err = run_cli("gaps", CORPUS / "hta/tests/data", "--format", "markdown",
                             "--top", "1000")
    assert code == 0, err
    check_markdown(out)
    runs = out.count("\n## gaps: ") + out.startswith("## gaps: ")
    assert runs >= 10 or "more runs, left out" in out
    assert "cut to" in out  # --top 1000 of every run does not fit: the cut is said


# ---- synthetic profiles: whatever the trace


BASE = 1_793_620_800_000_000_000
N_KERNELS, N_OPS = 50_001, 2_000
LONG = "_with_a_very_long_templated_name<float, 128, 4, true>" * 4  # names can be long


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A GPU trace of 50,001 kernels, 1 µs gaps between them (50,000 gaps), each launched by
    one of 2,000 ops (op names hundreds of characters long, with Markdown markup in them)."""
    events = []
    for i in range(N_KERNELS):
        t = 10 * i
        name = f"aten::op_{i % N_OPS}|*{LONG}"
        events += [X("cpu_op", name, t, 2, pid=1, tid=1, **{"External id": i}),
                   X("cuda_runtime", "cudaLaunchKernel", t + 1, 1, pid=1, tid=1, correlation=i,
                     **{"External id": i}),
                   X("kernel", f"k{i}", 5 + t, 9, pid=0, tid=7, device=0, stream=7,
                     correlation=i)]
    path = write_trace(tmp_path_factory.mktemp("big") / "trace.json",
                       kineto(events, baseTimeNanoseconds=BASE))
    return ta.load(path)


def test_fifty_thousand_gaps_fit_the_budget(big):
    result = gaps_runs([ta.gaps(big)], "big")
    assert len(result.runs[0].device_gaps) == N_KERNELS - 1
    for view in (View(), View(top=100_000), View(by="op", top=100_000), View(by="lane")):
        text = render_markdown(result, options=view)
        tables = check_markdown(text)
        assert text.startswith("## gaps: ") and "\n\n**1 device idle 10 % of the" in text
        assert "… and " in text and "more gaps" in text and "`--format json`" in text
        assert "<details>" not in text
        assert tables and all(t["rows"] for t in tables)
    top = render_markdown(result, options=View(top=100_000))
    assert "to keep this document under 60,000 characters" in top  # the cut is said


def test_two_thousand_ops_fit_the_budget(big):
    ops = ta.ops(big)
    assert ops.table.height == N_OPS
    for top in (10, N_OPS):
        text = render_markdown(ta.RunResults("big", (ops,)), options=View(top=top))
        (table,) = check_markdown(text)
        assert table["head"][:2] == ["op", "calls"]
        page = PARSER.render(text)  # names are data: no emphasis, no cell split by a |
        assert "<td>aten::op_" in page and "|*_with" in page
        assert not re.search(r"<td>[^<]*<(em|strong)>", page)
        assert "more ops" in text
    chain = render_markdown(ta.RunResults("big", (ta.chains(big),)), options=View(top=N_KERNELS))
    check_markdown(chain)
    assert "more executions" in chain


def test_many_runs_of_a_big_profile_share_the_budget(big):
    one = ta.gaps(big)
    result = gaps_runs([one] * 40, "many")
    text = render_markdown(result, options=View(top=1000))
    check_markdown(text)
    assert "more runs, left out to keep this document under 60,000 characters" in text


def test_prose_alone_over_the_budget_is_cut_at_a_line():
    columns = (Column("name"), Column("n", right=True))
    blocks = ["## over", "", "```sh", *(["echo " * 100] * 500), "```", "word " * 30_000,
              Table("t", columns, [["a", "1"]] * 50_000),
              Items("notes", ["a note " * 50] * 10_000)]
    text = fit([blocks], 10_000)
    assert len(text) <= 10_000
    assert text.rstrip().endswith("`--format json` has it all")
    assert text.count("```") == 2  # the code block cut is closed
    prose = fit([["## p", "word " * 30_000]], 10_000)
    assert len(prose) <= 10_000 and prose.startswith("## p\n")
    long = fit([["## t", Table("t", columns, [["a" * 500, "1"]] * 5_000)]], 5_000)
    assert len(long) <= 5_000
    check_markdown(long)
