"""The library's exceptions. Only the CLI turns them into exit codes and messages.

A message that is about one parameter names it as ``{param}``: the library's own words say
``min_gap_ns must not be negative``; the CLI words the same error as its flag
(``--min-gap must not be negative``) through ``worded``.
"""

from __future__ import annotations

from pathlib import Path


class TraceanaError(Exception):
    """Base class of every error traceana raises on purpose."""

    param: str | None = None
    template: str = ""

    def worded(self, names: dict[str, str]) -> str:
        """Return the message with the parameter named as ``names`` calls it (a CLI flag)."""
        if self.param is None:
            return str(self)
        return self.template.replace("{param}", names.get(self.param, self.param))


class InputError(TraceanaError):
    """An input that cannot be used: missing, unreadable, malformed, or of the wrong shape.

    The message is one line: the file, then what is wrong with it.
    """

    def __init__(self, path: str | Path, problem: str, *, param: str | None = None):
        self.path = str(path)
        self.param = param
        self.template = f"{self.path}: {problem}"
        self.problem = problem.replace("{param}", param) if param else problem
        super().__init__(f"{self.path}: {self.problem}")


class UsageError(TraceanaError):
    """A request that makes no sense for the input (e.g. several runs where one is needed)."""

    def __init__(self, message: str, *, param: str | None = None):
        self.param = param
        self.template = message
        super().__init__(message.replace("{param}", param) if param else message)


class EmptyGate(UsageError):
    """A ``--fail-on`` gate none of whose conditions compared anything (``units.judge``): a
    gate that compared nothing never passes."""
