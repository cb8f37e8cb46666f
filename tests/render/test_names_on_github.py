"""Names make no link on GitHub: every Markdown output, rendered by cmark-gfm (GitHub's own
Markdown, through the ``cmarkgfm`` bindings) with its autolink extension, holds no ``<a``
for names that are bare URLs (``https://``, ``http://``, ``ftp://``), ``www.`` hosts, email
addresses and ``mailto:``/``xmpp:`` addresses (GitHub Flavored Markdown's "extended
autolinks"; docs/output.md, "Names are data, not markup"). The names still read as written.

A backslash escape does not stop an address: cmark-gfm looks for it in the text once the
escapes are read, so ``a\\@b.cd`` is a link (the first case below shows it, so that the
test would notice a renderer that changed). cmarkgfm is a test dependency (the ``test``
extra); without it these tests are skipped.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import X, kineto, write_trace

from trace_analyzer.cli import cli
from trace_analyzer.render.safe import markdown

cmarkgfm = pytest.importorskip(
    "cmarkgfm", reason="cmark-gfm's bindings (pip install cmarkgfm, in the test extra)"
)

LINKS = [
    "https://x.example/a?b=1",
    "http://x.example",
    "ftp://x.example/f",
    "HTTPS://X.EXAMPLE",
    "www.x.example/p",
    "a.b+c@x.example",
    "mailto:d@x.example",
    "xmpp:e@x.example/r",
    "aten::f@x.example",
    "x(https://x.example)",
]
NAMES = [f"aten::{n}" if i % 2 else n for i, n in enumerate(LINKS)]
FOLDER = "runs www.x.example a@x.example"


def github(text: str) -> str:
    """``text`` as GitHub renders Markdown (cmark-gfm, its extensions; raw HTML kept, as
    GitHub keeps it before its sanitizer, which adds no link)."""
    from cmarkgfm.cmark import Options

    return cmarkgfm.markdown_to_html_with_extensions(
        text,
        options=Options.CMARK_OPT_UNSAFE,
        extensions=["autolink", "table", "strikethrough", "tagfilter", "tasklist"],
    )


def shown_text(page: str) -> str:
    """The text a reader sees of rendered HTML: tags and comments dropped, references read."""
    return html.unescape(re.sub(r"<!--.*?-->|<[^>]*>", "", page, flags=re.S))


def test_cmark_gfm_links_what_these_names_are():
    """The renderer links every form bare, and an escaped address too: the test's own
    premise, checked, so that a pass below means something."""
    for name in LINKS:
        assert "<a " in github(name), name
    assert "<a " in github("a\\@b.example")


@pytest.mark.parametrize("where", ["{}", "x {}", "- {}", "| h |\n|---|\n| {} |", "## {}"])
def test_an_escaped_name_makes_no_link(where):
    for name in LINKS:
        page = github(where.format(markdown(name)))
        assert "<a " not in page, (name, page)
        assert name in shown_text(page), (name, page)  # it reads as written


def run(*args: object) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": ""})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    """A run whose ops are named ``NAMES`` and whose kernels are ``k `` and the op's name,
    with 60 µs gaps, in a folder whose name holds a host and an address."""
    top = tmp_path_factory.mktemp("links") / FOLDER
    events = []
    for i, op in enumerate(NAMES):
        t = 1000 + 100 * i
        events.append(X("cpu_op", op, t, 20, **{"External id": i + 1}))
        events.append(X("cuda_runtime", "cudaLaunchKernel", t + 5, 5, correlation=i + 1))
        events.append(X("kernel", "k " + op, t + 30, 40, pid=0, tid=7, device=0, stream=7,
                        correlation=i + 1))
    write_trace(top / "trace.json", kineto(events))
    return top


@pytest.mark.parametrize("command", ["gaps", "ops", "chain", "info", "diff", "report", "trend"])
def test_no_markdown_output_makes_a_link_on_github(profile, tmp_path, command):
    if command == "diff":
        text = run("diff", profile, profile, "--no-cache", "--format", "markdown")
    elif command == "report":
        run("report", profile, "-o", tmp_path / "r.md", "--no-cache", "--no-images")
        text = (tmp_path / "r.md").read_text()
    elif command == "trend":
        run("batch", profile.parent, "-o", tmp_path / "runs.parquet", "--jobs", "1")
        text = run("trend", tmp_path / "runs.parquet", "--format", "markdown")
    else:
        top = () if command == "info" else ("--top", "100")
        text = run(command, profile, "--no-cache", "--format", "markdown", *top)
    page = github(text)
    assert "<a " not in page, re.findall(r"<a [^>]*>[^<]*", page)
    seen = shown_text(page)
    assert FOLDER in seen  # the run's folder, in the heading
    if command in ("ops", "chain", "report"):
        for name in NAMES:
            assert name in seen, name


EMPHASIS = ["_x_", "x _y_ z", "aten::_to_copy and _b_", "__bold__", "a _b c_ d"]


@pytest.mark.parametrize("where", ["{}", "- {}", "| h |\n|---|\n| {} |"])
def test_underscores_in_a_name_make_no_emphasis(where):
    """An underscore outside a word opens or closes emphasis (``_x_`` rendered as *x*); the
    names read as written, and an underscore within a word (``neuron_hw``) stays unescaped
    in the source."""
    for name in EMPHASIS:
        assert "<em>" in github(name) or "<strong>" in github(name), name  # the premise
        page = github(where.format(markdown(name)))
        assert "<em>" not in page and "<strong>" not in page, (name, page)
        assert name in shown_text(page), (name, page)
    assert markdown("neuron_hw/NC0:1/stream_7") == "neuron_hw/NC0:1/stream_7"
