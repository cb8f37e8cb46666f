"""What a long piece of work is doing now, for whoever listens (docs/output.md, "Progress").

The library says each step of a long job (``step``: reading a trace of so many MB, linking,
finding the gaps, writing the export) and never prints: with no listener a step costs a
function call. The console script listens on a terminal (cli/progress.py: one line on
standard error, redrawn with the time the step has taken, gone when the command ends).
"""

from __future__ import annotations

import os
from collections.abc import Callable

Listener = Callable[[str], object]
_listener: Listener | None = None


def listen(listener: Listener | None) -> Listener | None:
    """Make ``listener`` hear every step from now on (None: nobody); return the one before."""
    global _listener
    before, _listener = _listener, listener
    return before


def sized(path: object) -> str:
    """`` (457 MB)``: the size of the file ``path`` as a step says it; empty for none."""
    try:
        size = os.stat(str(path)).st_size
    except (OSError, ValueError):
        return ""
    return f" ({size / 1e6:,.0f} MB)" if size >= 1e6 else ""


def step(what: str) -> None:
    """Say that the work now does ``what`` (``reading trace.json (457 MB)``)."""
    if _listener is not None:
        _listener(what)
