"""The budget of a Markdown document: never more than ``BUDGET`` characters, whatever the trace.

GitHub refuses a comment over 65,536 characters; a Markdown report is meant to be pasted into
one. ``fit`` draws the runs' blocks whole when they fit. Otherwise every table and list is
drawn with fewer rows, the same most for every run (found by bisection), so that the runs
share the budget; when even a few rows each do not fit, fewer runs are drawn; each cut is
said in the document, with where the rest is (``--format json``). As a last resort, text
that still does not fit (a run whose prose alone is over the budget) is cut at a line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from trace_analyzer.numbers import count
from trace_analyzer.render.blocks import Block, Items, Table, draw, plural, rows_in
from trace_analyzer.render.safe import MARKDOWN, clip

BUDGET = 60_000
FEWEST = 3  # rows per table and list before runs are left out
ROW_CHARS = 4  # the fewest characters a drawn row takes ("| x |", "- x"), with its line break


def fit(runs: Sequence[Sequence[Block]], budget: int = BUDGET) -> str:
    """Return the Markdown of ``runs`` (each run's blocks) in at most ``budget`` characters."""
    n = len(runs)
    most = max((rows_in(blocks) for blocks in runs), default=0)

    def text(k: int, cap: int | None) -> str:
        parts = ["\n".join(draw(blocks, MARKDOWN, cap=cap)) for blocks in runs[:k]]
        if k < n:
            parts.append(
                f"… and {count(n - k)} more runs, left out to keep this document under "
                f"{count(budget)} characters: `--format json` has them all"
            )
        if cap is not None and cap < most:
            parts.append(
                f"_Tables and lists cut to {plural(cap, 'row')} each to keep this document "
                f"under {count(budget)} characters; `--format json` has every row._"
            )
        return "\n\n".join(parts) + "\n"

    def fits(k: int, cap: int | None) -> bool:
        return len(text(k, cap)) <= budget

    if sum(_rows(blocks) for blocks in runs) * ROW_CHARS <= budget and fits(n, None):
        return text(n, None)
    if most == 0:  # nothing to cut but runs
        k = _largest(lambda k: fits(k, None), 1, n - 1)
        return text(k, None) if k else _cut(text(1, None), budget)
    cap = _largest(lambda c: fits(n, c), 1, most - 1)
    floor = min(FEWEST, most)
    if cap is not None and (cap >= floor or n == 1):
        return text(n, cap)
    k = _largest(lambda k: fits(k, floor), 1, n - 1)
    if k is None:
        return _cut(text(1, 1), budget)
    return text(k, _largest(lambda c: fits(k, c), floor, most) or floor)


def _largest(holds: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """Return the largest ``x`` in ``lo..hi`` for which ``holds(x)``, ``holds`` being true up
    to some value and false after it; None when it holds for none. The steps grow from
    ``lo`` (1, 2, 4, ...) before they halve, so that a small answer costs small tries."""
    if hi < lo or not holds(lo):
        return None
    good, step = lo, 1
    while good + step <= hi and holds(good + step):
        good += step
        step *= 2
    bad = min(hi + 1, good + step)
    while bad - good > 1:
        mid = (good + bad) // 2
        if holds(mid):
            good = mid
        else:
            bad = mid
    return good


def _rows(blocks: Sequence[Block]) -> int:
    """Return how many rows the tables and lists of ``blocks`` hold in all."""
    return sum(
        len(b.rows) if isinstance(b, Table) else len(b.items) if isinstance(b, Items) else 0
        for b in blocks
    )


def _cut(text: str, budget: int) -> str:
    """Return ``text`` cut at a line to stay under ``budget`` characters, saying so: a table
    left with no row is left out, an open code block is closed."""
    note = (
        f"… cut here to keep this document under {count(budget)} characters: "
        "`--format json` has it all"
    )
    room = budget - len(note) - 8  # the note, a closing fence and the line breaks
    kept: list[str] = []
    size, fenced = 0, False
    for line in text.splitlines():
        if size + len(line) + 1 > room:
            if not kept:
                kept.append(clip(line, room))
            break
        kept.append(line)
        size += len(line) + 1
        if line.startswith("```"):
            fenced = not fenced
    table = 0
    while table < len(kept) and kept[-1 - table].startswith("|"):
        table += 1
    if 0 < table < 3:  # a header, maybe its delimiter, and no row: no table
        del kept[-table:]
    if fenced:
        kept.append("```")
    return "\n".join([*kept, "", note]) + "\n"
