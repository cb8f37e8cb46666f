"""The terminal the CLI writes to: how wide its tables may be, and standard output gone.

Kept apart from the commands (it imports nothing heavy), so that an answer replayed from the
cache (cli/answers.py) is keyed and written the way a command would have written it.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

EXIT_PIPE = 128 + 13  # SIGPIPE: what a shell reports for `cat big | head -1`
MIN_WIDTH = 40  # the narrowest terminal the table format fits


def terminal_width(output: Path | None) -> int | None:
    """Return the width the table format fits (docs/output.md): ``COLUMNS`` when set (at
    least 40), else the terminal's when printing to one, else None (a pipe or a file: as wide
    as the tables are)."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(MIN_WIDTH, int(columns))
    if output is None and sys.stdout is not None and sys.stdout.isatty():
        return max(MIN_WIDTH, shutil.get_terminal_size().columns)
    return None


def silence_stdout() -> None:
    """Point standard output at /dev/null, so that Python's flush at exit does not fail a
    second time on what is still buffered (and print its own traceback)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass
