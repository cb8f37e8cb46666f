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
        assert sys.modules[module], (name, module)
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


# Every command's own --help, and a usage error of each kind (an unknown option, a bad
# choice, a missing argument, a bad number), said by click before the command runs: none
# needs polars, orjson or networkx, so none may import them (issue 19). Exit codes as click's.
HEAVY = ("polars", "orjson", "networkx", "pyarrow")
HEAVY_PROBE = (
    "import sys; from trace_analyzer.cli import main; sys.argv = ['traceana', *sys.argv[1:]]\n"
    "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules], code, file=sys.stderr)"
)
HELPS = [
    ["info"], ["gaps"], ["ops"], ["chain"], ["diff"], ["baseline"], ["baseline", "save"],
    ["baseline", "compare"], ["batch"], ["trend"], ["export"], ["graph"], ["report"], ["tables"],
    ["engines"],
]  # fmt: skip
USAGE_ERRORS = [
    (["gaps", "--format", "nope", "x"], "Invalid value for '--format'"),
    (["gaps"], "Missing argument 'PATH'"),
    (["gaps", "x", "--bogus"], "No such option '--bogus'"),
    (["gaps", "x", "--top", "zero"], "Invalid value for '--top'"),
    (["gaps", "x", "--by", "nope"], "Invalid value for '--by'"),
    (["ops", "--top", "0", "x"], "Invalid value for '--top'"),
    (["chain", "x", "--by", "nope"], "Invalid value for '--by'"),
    (["info"], "Missing argument 'PATH'"),
    (["diff", "a"], "Missing argument 'HEAD'"),
    (["diff", "a", "b", "--min-runs", "zero"], "Invalid value for '--min-runs'"),
    (["baseline", "save", "x"], "Missing option '-o'"),
    (["baseline", "nope"], "No such command 'nope'"),
    (["batch"], "Missing argument 'ROOTS...'"),
    (["trend", "t", "--by", "nope"], "Invalid value for '--by'"),
    (["export", "x"], "Missing option '-o'"),
    (["graph", "x", "--bogus"], "No such option '--bogus'"),
    (["report"], "Missing argument 'PATH'"),
    (["tables", "x"], "Missing option '-o'"),
    (["engines"], "Missing argument 'PATH'"),
    (["engines", "x", "--top", "zero"], "Invalid value for '--top'"),
]


def heavy_probe(*args: str) -> tuple[str, str, str]:
    out = subprocess.run([sys.executable, "-c", HEAVY_PROBE, *args], capture_output=True,
                         text=True, cwd=ROOT, timeout=60)
    *said, last = out.stderr.strip().splitlines()
    return out.stdout, "\n".join(said), last


@pytest.mark.parametrize("command", HELPS, ids=" ".join)
def test_every_command_s_help_imports_no_polars(command):
    stdout, _, last = heavy_probe(*command, "--help")
    assert last == "HEAVY [] 0", last
    assert stdout.startswith(f"Usage: traceana {' '.join(command)} "), stdout[:80]


@pytest.mark.parametrize(("argv", "says"), USAGE_ERRORS, ids=lambda a: " ".join(a) if
                         isinstance(a, list) else "")
def test_usage_errors_are_said_without_polars(argv, says):
    stdout, said, last = heavy_probe(*argv)
    assert last == "HEAVY [] 2", (last, said)
    assert stdout == "" and f"Error: {says}" in said, said


def test_the_declared_choices_are_the_library_s():
    # the --format and trend --by choices are written beside the options (declaring them
    # imports nothing heavy): each must be what the library offers
    from trace_analyzer.cli import common
    from trace_analyzer.questions.trend import command as trend_command
    from trace_analyzer.questions.trend.analysis import GROUPINGS, OLD_GROUPINGS
    from trace_analyzer.render import RENDERERS

    assert common.FORMATS == tuple(RENDERERS)
    assert trend_command.GROUPINGS == GROUPINGS
    assert trend_command.OLD_GROUPINGS == OLD_GROUPINGS
