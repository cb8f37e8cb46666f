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

import atexit
import os
import shutil
import sys
import tempfile

from trace_analyzer.cli import answers
from trace_analyzer.cli.fault import (
    MEMORY_ADVICE,
    guard,
    out_of_memory,
    threads_that_cannot_start_say_so,
)
from trace_analyzer.cli.group import cli  # imports each command's module when it is used
from trace_analyzer.cli.progress import shown as progress_line

__all__ = ["cli", "main"]


def main() -> None:
    """Console-script entry point (exit code 2 for usage errors, as click does); a native
    abort or fault is one line and exit 2 too (``fault.guard``), except under ``--debug``.
    A command asked again of unchanged runs is answered from the cache (``answers``)."""
    debug = "--debug" in sys.argv[1:]
    if not debug:
        # Rust's panic backtrace allocates: where memory ran out, printing it can hang the
        # process (docs/reliability.md, "Batch under faults"); --debug keeps it.
        os.environ["RUST_BACKTRACE"] = "0"
        guard()
        threads_that_cannot_start_say_so()
    keep_out_of_home()
    asked = answers.question(sys.argv[1:])  # asked before: the answer, with no polars
    replayed = answers.replay(asked) if asked is not None else None
    if replayed is not None:
        sys.exit(replayed)
    heard = answers.listen() if asked is not None else None
    code: object = 2  # what an exception that is not an exit leaves: nothing to keep
    said: str | None = None  # what failed before a command ran, when not memory
    try:
        with progress_line():  # on a terminal: what a long command is doing (cli/progress.py)
            cli(prog_name="traceana")
    except SystemExit as e:
        code = e.code
        raise
    except BaseException as e:  # before a command's own handler runs (importing it)
        if debug or not isinstance(e, Exception) and not out_of_memory(e):
            raise
        # CPython's "error return without exception set" (a SystemError) is how an import's
        # C code can fail when memory runs out: still one line, never a traceback
        said = None if out_of_memory(e) else f"{type(e).__name__}: {e}"
        said = said and "".join(c if c.isprintable() else "?" for c in said)  # no polars here
    finally:
        if asked is not None and heard is not None:
            answers.keep(asked, heard, code)  # the streams put back; kept if it answered
    if said is None:
        sys.stderr.write(f"traceana: error: out of memory starting traceana ({MEMORY_ADVICE})\n")
    else:
        sys.stderr.write(
            f"traceana: internal error: {said} starting traceana (if memory is short: "
            f"{MEMORY_ADVICE}; else rerun with --debug for the traceback)\n"
        )
    sys.exit(2)


def keep_out_of_home() -> None:
    """Give matplotlib a folder of this process's own for its configuration and font cache
    (``MPLCONFIGDIR``), removed as it exits, unless the user named one: a command writes
    nothing in the user's home (matplotlib would create ``~/.config/matplotlib`` and
    ``~/.cache/matplotlib``, and a missing home itself, and warn twice where it is read-only).
    Batch workers inherit it."""
    if os.environ.get("MPLCONFIGDIR"):
        return
    folder = tempfile.mkdtemp(prefix="traceana-matplotlib-")
    atexit.register(shutil.rmtree, folder, True)
    os.environ["MPLCONFIGDIR"] = folder
