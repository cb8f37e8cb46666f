"""The progress line of a long command on a terminal (docs/output.md, "Progress").

Only when standard error is a terminal, and only for work that lasts: the line appears once a
step has run ``DELAY`` seconds, says the step and its time, and is redrawn every ``TICK``
seconds by a daemon thread: a carriage return, the text, spaces over a longer line before (no
escape sequence: traceana sends none to a terminal). It is erased (spaces over it) before
anything else is written and when the command ends, so that nothing of it stays in the
scrollback, a pipe or a file (an answer the cache keeps never holds it: it is written to the
terminal itself, past any capture of ``sys.stderr``). The steps are the library's
(``trace_analyzer.progress.step``).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from trace_analyzer import progress
from trace_analyzer.cli.messages import plain

DELAY, TICK = 1.0, 0.5  # seconds: a step shown once it lasts this long, redrawn this often


class Line:
    """The one line on ``stream`` (a terminal) that says the current step and its time."""

    def __init__(self, stream: TextIO):
        self.stream, self.what, self.since = stream, "", time.monotonic()
        self.begun = time.monotonic()
        self.shown = 0  # the length of the line on the terminal (0: none)
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._tick, daemon=True, name="traceana-progress")

    def step(self, what: str) -> None:
        with self.lock:
            self.what, self.since = what, time.monotonic()

    def _tick(self) -> None:
        while not self.done.wait(TICK):
            with self.lock:
                if time.monotonic() - self.begun >= DELAY and self.what:
                    self._draw(f"traceana: {self.what} … {time.monotonic() - self.since:.0f} s")

    def _draw(self, text: str) -> None:
        width = max(20, shutil.get_terminal_size().columns - 1)
        text = plain(text)  # a file's name is data: its escapes shown, never sent
        text = text if len(text) <= width else text[: width - 1] + "…"
        try:  # over the line before, padded to cover it: no escape sequence at all
            self.stream.write("\r" + text.ljust(self.shown) + "\r")
            self.stream.flush()
            self.shown = len(text)
        except (OSError, ValueError):  # the terminal went away: nothing more to say
            self.done.set()

    def erase(self) -> None:
        """Take the line off the terminal (before other text is written, and at the end); it
        is drawn again only for the next step (what follows a command's output is no step)."""
        with self.lock:
            self.what = ""
            if self.shown:
                blank, self.shown = " " * self.shown, 0
                try:
                    self.stream.write("\r" + blank + "\r")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass

    def close(self) -> None:
        self.done.set()
        self.erase()


class Clearing:
    """A text stream that takes the progress line off the terminal before each write, so
    that what a command prints (a warning, its table, an error) never lands on it."""

    def __init__(self, inner: TextIO, line: Line):
        self._inner, self._line = inner, line

    def write(self, text: str) -> int:
        self._line.erase()
        return self._inner.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


@contextmanager
def shown() -> Iterator[None]:
    """Show the library's steps on the terminal while the block runs (nothing when standard
    error is not a terminal, or TRACEANA_NO_PROGRESS is set)."""
    stream = sys.__stderr__
    if stream is None or not stream.isatty() or os.environ.get("TRACEANA_NO_PROGRESS"):
        yield
        return
    line = Line(stream)
    before = progress.listen(line.step)
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (Clearing(s, line) if s is not None else s for s in streams)
    line.thread.start()
    try:
        yield
    finally:
        line.close()
        sys.stdout, sys.stderr = streams
        progress.listen(before)
