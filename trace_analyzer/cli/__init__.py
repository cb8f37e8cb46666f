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

import os
import sys

from trace_analyzer.cli.fault import MEMORY_ADVICE, guard, out_of_memory
from trace_analyzer.cli.group import cli  # imports each command's module when it is used

__all__ = ["cli", "main"]


def main() -> None:
    """Console-script entry point (exit code 2 for usage errors, as click does); a native
    abort or fault is one line and exit 2 too (``fault.guard``), except under ``--debug``."""
    debug = "--debug" in sys.argv[1:]
    if not debug:
        # Rust's panic backtrace allocates: where memory ran out, printing it can hang the
        # process (docs/reliability.md, "Batch under faults"); --debug keeps it.
        os.environ["RUST_BACKTRACE"] = "0"
        guard()
    try:
        cli(prog_name="traceana")
    except BaseException as e:  # out of memory before a command runs (importing it)
        if debug or not out_of_memory(e):
            raise
    else:
        return
    sys.stderr.write(f"traceana: error: out of memory starting traceana ({MEMORY_ADVICE})\n")
    sys.exit(2)
