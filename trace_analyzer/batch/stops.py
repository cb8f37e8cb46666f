"""Ctrl-C and SIGTERM during a batch: each stop remembered as it arrives, honoured once.

A signal's handler runs in the main thread wherever Python next looks, and in a batch run
in-process that is often a Python callback of polars' native code (converting a data type).
The handler's exception raised there cannot always propagate: native code may report it as
"unraisable" (Python prints "Exception ignored in ..." and a traceback) and go on, or wrap it
in an error of its own, so that the run fails oddly or a table write fails for no reason of
the disk's. So each stop is also written down (``STOPS``) and ``pending`` raises it again at
the next safe point: after each run, after a failed write, and when the batch ends.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

# The stop signals received while ``stoppable`` is active, in order.
STOPS: list[int] = []


class BatchStopped(BaseException):
    """SIGTERM during a batch: unwound like Ctrl-C, so the table is written."""


def pending() -> BaseException | None:
    """Return the stop to raise again for the last signal in ``STOPS``; None: no stop."""
    if not STOPS:
        return None
    return BatchStopped(STOPS[-1]) if STOPS[-1] == signal.SIGTERM else KeyboardInterrupt()


def _terminated(signum: int, frame: FrameType | None) -> None:  # a CI job cancelled: as Ctrl-C
    STOPS.append(signum)
    raise BatchStopped(signum)


def _interrupted(signum: int, frame: FrameType | None) -> None:  # Ctrl-C, remembered
    STOPS.append(signum)
    signal.default_int_handler(signum, frame)


def _quiet(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """Return an unraisable-exception hook that says nothing of a stop already in ``STOPS``
    (it is raised again at the next safe point) and hands anything else to ``hook``."""

    def unraisable(args: Any) -> object:
        if isinstance(args.exc_value, (BatchStopped, KeyboardInterrupt)) and STOPS:
            return None
        return hook(args)

    return unraisable


@contextmanager
def stoppable() -> Iterator[None]:
    """Within: SIGTERM raises ``BatchStopped``, Ctrl-C ``KeyboardInterrupt`` (unless the
    application handles SIGINT itself), each remembered in ``STOPS``, and a stop that native
    code swallowed is not printed. Off the main thread (an embedding application) the
    signals are left as they are."""
    STOPS.clear()
    try:
        previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _terminated)}
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, _interrupted)
    except ValueError:  # not the main thread
        previous = {}
    hook, sys.unraisablehook = sys.unraisablehook, _quiet(sys.unraisablehook)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for signum, handler in previous.items():
            signal.signal(signum, handler)
