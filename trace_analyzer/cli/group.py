"""The ``traceana`` group, which imports a command's module only when that command runs.

``traceana --help`` and ``traceana --version`` import no polars and none of the analyses:
the group lists its commands from ``COMMANDS`` (module and summary line, held equal to each
command's own help by tests/cli/test_startup.py) and imports a command's module the first
time the command is looked up. The modules register their commands on this group as before
(``@cli.command()``), and import the analyses and renderers only inside each command, when
it runs: so a command's own ``--help`` and its usage errors (an unknown option, a bad choice
or number, a missing argument), which click says before the command runs, import no polars
either (tests/cli/test_startup.py).
"""

from __future__ import annotations

import importlib

import click

from trace_analyzer._version import __version__

# command -> (its module under trace_analyzer.cli, the first paragraph of its help)
COMMANDS = {
    "baseline": ("baseline", "Save a profile's summary (the numbers diff compares), to compare "
                 "against later."),
    "batch": ("runs", "Analyse every run under ROOTS into one Parquet table, one row per run × "
              "device."),
    "chain": ("analyse", "The dependency chain of every hardware execution: op, dispatch, "
              "schedule, hardware."),
    "diff": ("compare", "Compare two sides (BASE, then HEAD): window, device time, idle, gaps, "
             "ops, causes."),
    "engines": ("engines", "Per NEFF and physical core: each engine's busy time, DMA, "
                "MFU/HFU/MBU and roofline."),
    "export": ("outputs", "Export one run as a trace for the Perfetto UI, with links and gaps "
               "drawn in."),
    "gaps": ("analyse", "Every idle gap on the hardware lanes, attributed to the op that ended "
             "it and a cause."),
    "graph": ("outputs", "Export the dependency graph of one run: framework op → runtime → "
              "hardware."),
    "info": ("analyse", "Show what PATH holds: sources and formats, processes, lanes by kind, "
             "NEFF/NTFF files."),
    "kernels": ("kernels", "Per rank, the kernels (Neuron: NEFFs) by total device time, with "
                "their kind and spread."),
    "launches": ("launches", "Per lane: launch latency and delay, queue length over time, time "
                 "blocked on a full queue."),
    "ops": ("analyse", "The offline key_averages(): per op, calls, self CPU, device time and "
            "device %."),
    "ranks": ("distributed", "Per rank and step: compute against communication, clock offsets, "
              "each step's straggler."),
    "report": ("outputs", "One page for one run: timeline, gap histogram, summary, ops and "
               "gaps; with --base, the diff."),
    "tables": ("tables", "Write one run's tables as Parquet: events, edges, chains, gaps and "
               "ops."),
    "trend": ("runs", "Idle % and device time over capture time, per group, from a `traceana "
              "batch` table."),
}  # fmt: skip


class LazyGroup(click.Group):
    """A group whose commands are imported when used, and listed without importing them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"trace_analyzer.cli.{COMMANDS[cmd_name][0]}")
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
