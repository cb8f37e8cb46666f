"""Adding a question is one folder and one registry line (issue 33).

A toy question is written here as a package of its own, outside trace_analyzer/ (``toyq``,
in a temporary folder put on ``sys.path``): its analysis (a function and a frozen result with
``to_json``), its text layout, its command (a click command on traceana's group, with the
usual options) and its section of the report page (a template of its own). ONE
``Question(...)`` appended to ``QUESTIONS`` then reaches it from the CLI (``traceana --help``
lists it; it runs, and prints its text layout, or its JSON), from the face (``ta.toy_count``)
and from the report (its section and its embedded JSON), with no other change anywhere.

The one list is appended to in place (the group, the face and the report read that list,
each having imported it) and put back after each test, with the group's commands, the face's
names and the modules the toy left behind.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import trace_analyzer as ta
from trace_analyzer.cli import cli
from trace_analyzer.questions import QUESTIONS, Part, Question

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "fixtures" / "rmsnorm_naive"
SUMMARY = "Count a run's events and their distinct names (a toy question)."

TOY = {
    "__init__.py": '"""A toy question: how many events a run holds, and how many names."""\n',
    "analysis.py": '''
        """The toy question's analysis: a function of a loaded run, returning a typed result."""

        from __future__ import annotations

        from dataclasses import dataclass
        from typing import Any

        from trace_analyzer.analyses.results import RunResult
        from trace_analyzer.loading.profile import Profile


        @dataclass(frozen=True)
        class ToyResult(RunResult):
            root: str
            events: int
            names: int

            def to_json(self) -> dict[str, Any]:
                return {"root": self.root, "events": self.events, "names": self.names}


        def toy_count(profile: Profile) -> ToyResult:
            """Return how many events ``profile`` holds, and how many distinct names."""
            events = profile.events
            return ToyResult(str(profile.root), events.height, events["name"].n_unique())
    ''',
    "text.py": '''
        """The toy question's text layout (of its typed result)."""

        from trace_analyzer.render.blocks import heading
        from trace_analyzer.render.safe import shown


        def toy_layout(result, style, view):
            return [
                heading(f"toyq: {shown(result.root, style)}", style),
                f"{result.events} events, {result.names} distinct names",
            ]
    ''',
    "command.py": f'''
        """`traceana toyq`: the toy question's command."""

        from __future__ import annotations

        from pathlib import Path

        import click

        from trace_analyzer.cli.common import (
            Loading,
            check_output,
            cli,
            emit,
            handle_errors,
            load_options,
            output_options,
        )


        @cli.command()
        @click.argument("path", type=click.Path(path_type=Path))
        @output_options
        @load_options
        @handle_errors
        def toyq(path: Path, fmt: str | None, output: Path | None, loading: Loading) -> None:
            """{SUMMARY}

            The toy of tests/test_question_registry.py.
            """
            from toyq.analysis import toy_count
            from trace_analyzer.analyses.results import RunResults

            check_output(fmt, output)
            profiles = loading.runs(path)
            results = tuple(toy_count(p) for p in profiles)
            emit(RunResults(str(path), results), fmt, output)
    ''',
    "html.py": '''
        """The toy question's section of the report page."""

        from trace_analyzer.render.html import fill


        def toy_section(run, png):
            return fill(f"{__package__}:section.html", run=run)
    ''',
    "templates/section.html": (
        '<section id="toyq"><h2>Toy</h2><p class="note" id="toy-count">{{ run["events"]|num }}'
        ' events, {{ run["names"]|num }} distinct names in <code>{{ run["root"] }}</code>'
        "</p></section>\n"
    ),
}
# The one line: what the registry holds of the toy question.
TOY_QUESTION = Question(
    "toyq", SUMMARY, "toyq.command", "toyq.analysis", ("toy_count", "ToyResult"),
    {"toyq.analysis:ToyResult": "toyq.text:toy_layout"},
    report=Part("toyq.analysis:toy_count", "toyq.html:toy_section",
                "traceana toyq {path} --format json"),
)  # fmt: skip


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy package written under ``tmp_path``, on ``sys.path``, and registered."""
    for name, text in TOY.items():
        path = tmp_path / "toyq" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    QUESTIONS.append(TOY_QUESTION)  # the one registry line
    try:
        yield
    finally:
        QUESTIONS.remove(TOY_QUESTION)
        cli.commands.pop("toyq", None)  # registered on the group when its module was imported
        for name in ("toy_count", "ToyResult"):  # kept by the face once looked up
            vars(ta).pop(name, None)
        for module in [m for m in sys.modules if m == "toyq" or m.startswith("toyq.")]:
            del sys.modules[module]


def invoke(*args: object) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def toy_json() -> dict:
    """The toy's result of the fixture run, from the library (not the command)."""
    return ta.toy_count(ta.load(RUN)).to_json()


def test_the_cli_lists_and_runs_the_toy_question(toy):
    listed = invoke("--help")
    assert re.search(r"\n  toyq +Count a run's events and their distinct names", listed)
    text = invoke("toyq", RUN, "--no-cache")
    want = toy_json()
    assert f"toyq: {RUN}" in text  # its text layout
    assert f"{want['events']} events, {want['names']} distinct names" in text
    doc = json.loads(invoke("toyq", RUN, "--format", "json", "--no-cache"))
    assert doc["runs"] == [want]  # its to_json, as every command's JSON holds it


def test_the_face_offers_the_toy_question_s_names(toy):
    assert "toy_count" in dir(ta) and "ToyResult" in dir(ta)
    result = ta.toy_count(ta.load(RUN))
    assert isinstance(result, ta.ToyResult) and result.events > 0


def test_the_report_holds_the_toy_question_s_section_and_json(toy, tmp_path):
    page = tmp_path / "x.html"
    invoke("report", RUN, "-o", page, "--no-images", "--no-cache")
    text = page.read_text(encoding="utf-8")
    want = toy_json()
    section = re.search(r'<section id="toyq">.*?</section>', text)
    assert section, "no toy section"
    assert f'{want["events"]:,} events, {want["names"]:,} distinct names' in section[0]
    block = re.search(
        r'<script type="application/json" id="traceana-toyq" data-file="toyq.json">\n(.*?)\n'
        r"</script>", text, re.S)  # fmt: skip
    assert block, "no embedded toy JSON"
    doc = json.loads(block[1])
    assert doc["runs"] == [want]  # the JSON the section was drawn from
    assert doc == json.loads(invoke("toyq", RUN, "--format", "json", "--no-cache")) | {
        "path": str(RUN)
    }
    # after the other parts (the registry's order), before the Data list, which names it
    assert text.index('<section id="engines">') < section.start() < text.index('id="data"')
    assert f"traceana toyq {RUN} --format json" in text


def test_without_the_registry_line_the_toy_is_nowhere(tmp_path):
    # the same run, no toy registered: no command, no name, no section
    assert "toyq" not in invoke("--help")
    assert "toy_count" not in dir(ta)
    page = tmp_path / "x.html"
    invoke("report", RUN, "-o", page, "--no-images", "--no-cache")
    assert "toyq" not in page.read_text(encoding="utf-8")
