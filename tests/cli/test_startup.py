"""Start-up (issue 19): ``traceana --help`` and ``--version`` import no polars and none of the
analyses, yet list every command with its own summary, as click writes it."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from trace_analyzer.cli import cli
from trace_analyzer.cli.group import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import sys; from trace_analyzer.cli import main; sys.argv = ['traceana', *sys.argv[1:]]\n"
    "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    "print('POLARS' if 'polars' in sys.modules else 'NO POLARS', code, file=sys.stderr)"
)


def probe(*args: str) -> tuple[str, str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    return out.stdout, out.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("flag", ["--help", "-h", "--version"])
def test_help_and_version_import_no_polars(flag):
    stdout, last = probe(flag)
    assert last == "NO POLARS 0", last
    if flag != "--version":
        for name in COMMANDS:
            assert f"\n  {name} " in stdout, name


def test_the_listing_is_what_the_commands_themselves_say():
    # the summaries are kept beside the group, so that listing them imports nothing: each
    # must be the first paragraph of its command's own help (the command imported here)
    from click.testing import CliRunner

    for name, (module, summary) in COMMANDS.items():
        command = cli.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None, name
        assert sys.modules[f"trace_analyzer.cli.{module}"], (name, module)
        assert inspect.cleandoc(command.help or "").split("\n\n")[0] == summary, name
    listed = CliRunner().invoke(cli, ["--help"], terminal_width=100).output
    for name in COMMANDS:
        assert f"  {name} " in listed, name
    assert set(cli.list_commands(None)) == set(COMMANDS)  # type: ignore[arg-type]


def test_a_command_s_own_help_and_an_unknown_command_still_work():
    stdout, last = probe("gaps", "--help")
    assert last.endswith(" 0") and "--min-gap" in stdout
    _, last = probe("nonsense")
    assert last.endswith(" 2"), last
