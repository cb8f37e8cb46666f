"""Every command is documented, and its help ends in an example."""

from __future__ import annotations

from pathlib import Path

import pytest

from trace_analyzer.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_is_in_the_docs(name):
    assert f"traceana {name}" in DOCS


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_help_has_an_example(name):
    help_text = cli.commands[name].help or ""
    assert "Example:" in help_text and f"traceana {name}" in help_text
