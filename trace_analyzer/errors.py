"""The library's exceptions. Only the CLI turns them into exit codes and messages."""

from __future__ import annotations

from pathlib import Path


class TraceanaError(Exception):
    """Base class of every error traceana raises on purpose."""


class InputError(TraceanaError):
    """An input that cannot be used: missing, unreadable, malformed, or of the wrong shape.

    The message is one line: the file, then what is wrong with it.
    """

    def __init__(self, path: str | Path, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class UsageError(TraceanaError):
    """A request that makes no sense for the input (e.g. several runs where one is needed)."""
