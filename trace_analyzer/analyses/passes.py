"""A question of a multi-rank run measured a file at a time, in passes (docs/distributed.md,
"report a rank at a time").

A question's ``Passes`` is a generator. Each ``yield`` gives one pass: a picklable function of
one file's ``Profile`` (a ``functools.partial`` of a module-level function with small
arguments), and receives what that function gave for every file of the run, in the files'
order. Its ``return`` is the question's result for the run. The reducer holds only what the
passes give, never a file's events.

A pass may be ``Streamed``: its values are taken one file at a time as they come (in any
order) and not held together, for what is large in every file but small once added up (the
event ids' counts, ``gaps.per_rank.Renumber``).

``in_process`` runs one on profiles held here (tests, one job); ``together`` runs several in
step, one read of each file per round, however many questions ask something of it
(batch/passes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from trace_analyzer.loading.profile import Profile

R = TypeVar("R")
Pass = Callable[[Profile], Any]


@dataclass(frozen=True)
class Streamed:
    """A pass (``run``) whose value for each file is given to ``take(place, value)`` as it
    comes, in any order; the generator is then sent an empty list. Only ``run`` travels."""

    run: Pass
    take: Callable[[int, Any], None]


Passes = Generator[Pass | Streamed, list[Any], R]


def in_process(passes: Passes[R], profiles: Sequence[Profile]) -> R:
    """The result of ``passes`` over the files ``profiles`` (in the run's order), held here."""
    return together({"one": passes}, lambda f: enumerate(f(p) for p in profiles))["one"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Round:
    """The passes of one round as one function of a file: what each gives, in order."""

    passes: tuple[Pass, ...]

    def __call__(self, profile: Profile) -> list[Any]:
        return [f(profile) for f in self.passes]


def together(
    passes: Mapping[str, Passes[Any]],
    each: Callable[[Round], Iterable[tuple[int, list[Any]]]],
) -> dict[str, Any]:
    """The results of ``passes`` by name, run in step: each round is the next pass of every
    generator still going, given to ``each`` as one ``Round``, which yields each file's place
    in the run and its values as they come; a generator that has returned asks nothing more.
    """
    going: dict[str, Pass | Streamed] = {}
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
        asked = [(n, going[n]) for n in going]
        held: list[dict[int, Any]] = [{} for _ in asked]
        runs = tuple(f.run if isinstance(f, Streamed) else f for _, f in asked)
        for place, values in each(Round(runs)):
            for k, (_, f) in enumerate(asked):
                if isinstance(f, Streamed):
                    f.take(place, values[k])
                else:
                    held[k][place] = values[k]
        for k, (name, _) in enumerate(asked):
            advance(name, [held[k][i] for i in sorted(held[k])])
    return {name: done[name] for name in passes}
