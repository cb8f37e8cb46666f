"""The ``traceana`` group, which imports a command's module only when that command runs.

``traceana --help`` and ``traceana --version`` import no polars and none of the analyses: the
group lists its commands from the questions' registry (``questions.QUESTIONS``: module and
summary line, held equal to each command's own help by tests/cli/test_startup.py) and imports a
command's module the first time the command is looked up. The modules register their commands
on this group as before (``@cli.command()``), and import the analyses and renderers only inside
each command, when it runs: so a command's own ``--help`` and its usage errors (an unknown
option, a bad choice or number, a missing argument), which click says before the command runs,
import no polars either (tests/cli/test_startup.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

import click

from trace_analyzer._version import __version__
from trace_analyzer.questions import QUESTIONS


class Registered(Mapping[str, tuple[str, str]]):
    """command -> (its module, the first paragraph of its help), read from the questions'
    registry each time it is asked, so that a question registered after this module was
    imported (tests/test_question_registry.py adds a toy one) is listed and found too."""

    def _now(self) -> dict[str, tuple[str, str]]:
        return {q.name: (q.command, q.summary) for q in QUESTIONS}

    def __getitem__(self, name: str) -> tuple[str, str]:
        return self._now()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._now())

    def __len__(self) -> int:
        return len(self._now())


COMMANDS = Registered()


class LazyGroup(click.Group):
    """A group whose commands are imported when used, and listed without importing them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(COMMANDS[cmd_name][0])
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their summary lines, as click writes them, none imported."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max((len(n) for n in names), default=0)
        rows = []
        for name in names:
            # a stand-in with the command's summary, unless it is imported already
            known = self.commands.get(name) or click.Command(name, help=COMMANDS[name][1])
            rows.append((name, known.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="traceana")
@click.option("--debug", is_flag=True, help="Show Python tracebacks on errors.")
def cli(debug: bool) -> None:
    """Where is the accelerator idle, and why? Offline analysis of exported profiles."""
