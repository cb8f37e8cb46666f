"""The ``traceana`` command: wires loading, analyses and renderers, and owns exit codes.

``common.py`` holds the group, the shared options and error handling; each command lives in
``analyse.py`` (info, gaps, ops, chain), ``compare.py`` (diff), ``baseline.py`` (baseline
save/compare), ``outputs.py`` (graph, export, report) or ``runs.py`` (batch, trend).
Nothing in the package imports the CLI.

Exit codes: 0 success, 1 a requested threshold failed, 2 bad usage or unusable input.
"""

from __future__ import annotations

from trace_analyzer.cli import analyse, baseline, compare, outputs, runs  # noqa: F401  (they register the commands)
from trace_analyzer.cli.common import cli

__all__ = ["cli", "main"]


def main() -> None:
    """Console-script entry point (exit code 2 for usage errors, as click does)."""
    cli(prog_name="traceana")
