"""Every command is documented, and its help ends in an example."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from trace_analyzer.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
# every command the group lists, imported or not yet (cli/group.py imports them when used)
CTX = click.Context(cli)
COMMANDS = cli.list_commands(CTX)


def test_the_group_lists_every_command():
    # an empty list would skip the two tests below without a word (it did once: the
    # commands are imported when used, so `cli.commands` is empty at collection)
    assert len(COMMANDS) >= 11, COMMANDS


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_is_in_the_docs(name):
    assert f"traceana {name}" in DOCS


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_help_has_an_example(name):
    command = cli.get_command(CTX, name)
    assert command is not None, name
    help_text = command.help or ""
    assert "Example:" in help_text and f"traceana {name}" in help_text
