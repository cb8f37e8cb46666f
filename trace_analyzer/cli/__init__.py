"""The ``traceana`` command: wires loading, analyses and renderers, and owns exit codes.

``group.py`` holds the group, ``common.py`` the shared options and error handling; each
command lives in ``analyse.py`` (info, gaps, ops, chain), ``compare.py`` (diff),
``baseline.py`` (baseline save/compare), ``outputs.py`` (graph, export, report) or
``runs.py`` (batch, trend).
Nothing in the package imports the CLI. The group imports a command's module only when
that command is used (``traceana --help`` imports no polars).

Exit codes: 0 success, 1 a requested threshold failed, 2 bad usage or unusable input.
"""

from __future__ import annotations

from trace_analyzer.cli.group import cli  # imports each command's module when it is used

__all__ = ["cli", "main"]


def main() -> None:
    """Console-script entry point (exit code 2 for usage errors, as click does)."""
    cli(prog_name="traceana")
