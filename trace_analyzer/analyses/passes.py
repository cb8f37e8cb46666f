"""A question of a multi-rank run measured a file at a time, in passes (docs/distributed.md,
"report a rank at a time").

A question's ``Passes`` is a generator. Each ``yield`` gives one pass: a picklable function of
one file's ``Profile`` (a ``functools.partial`` of a module-level function with small
arguments), and receives what that function gave for every file of the run, in the files'
order. Its ``return`` is the question's result for the run. The reducer holds only what the
passes give, never a file's events.

``in_process`` runs one on profiles held here (tests, one job); ``together`` runs several in
step, one read of each file per round, however many questions ask something of it
(batch/report.py).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from trace_analyzer.loading.profile import Profile

R = TypeVar("R")
Pass = Callable[[Profile], Any]
Passes = Generator[Pass, list[Any], R]


def in_process(passes: Passes[R], profiles: Sequence[Profile]) -> R:
    """The result of ``passes`` over the files ``profiles`` (in the run's order), held here."""
    return together({"one": passes}, lambda f: [f(p) for p in profiles])["one"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Round:
    """The passes of one round as one function of a file: what each gives, in order."""

    passes: tuple[Pass, ...]

    def __call__(self, profile: Profile) -> list[Any]:
        return [f(profile) for f in self.passes]


def together(
    passes: Mapping[str, Passes[Any]], each: Callable[[Round], list[list[Any]]]
) -> dict[str, Any]:
    """The results of ``passes`` by name, run in step: each round is the next pass of every
    generator still going, given to ``each`` as one ``Round`` (which returns its list for
    every file, in the files' order); a generator that has returned asks nothing more."""
    going: dict[str, Pass] = {}
    done: dict[str, Any] = {}

    def advance(name: str, sent: list[Any] | None) -> None:
        try:
            going[name] = next(passes[name]) if sent is None else passes[name].send(sent)
        except StopIteration as finished:
            going.pop(name, None)
            done[name] = finished.value

    for name in passes:
        advance(name, None)
    while going:
        names = list(going)
        rows = each(Round(tuple(going[n] for n in names)))
        for k, name in enumerate(names):
            advance(name, [row[k] for row in rows])
    return {name: done[name] for name in passes}
