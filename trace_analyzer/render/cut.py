"""How text is shortened to a width: names cut in the middle, keeping what tells them apart.

Names from traces share long starts and often long ends (``void at::native::elementwise_kernel<
128, 4, …>(int, …)``): a name cut at its end leaves several rows reading the same. So a name
is cut in its middle (``MIDDLE``), keeping its start and its end; and where the names of one
column would still read the same (``cut_apart``), each keeps more of the part where it differs
from the name nearest to it: more of its start or of its end when the difference lies near
one, else a window around the difference between two ellipses (``void …add<floa…, 3>)``).
Paths (lanes, devices, files) are cut at their start (``START``: ``…/neuron_hw/NC0``), prose
at its end (``END``).

The text cut is the text as shown, already inert (``safe.plain``, or raw text that
``safe.markdown`` escapes after): a cut only leaves characters out and adds ``…``, so it makes
no control character, escape or markup of its own (docs/output.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Literal, TypeAlias

ELLIPSIS = "…"
Where: TypeAlias = Literal["middle", "start", "end"]
MIDDLE: Where = "middle"
START: Where = "start"
END: Where = "end"
CONTEXT = 4  # the characters kept from where a name differs on (the differing one included)


def cut(text: str, most: int, at: Where = MIDDLE) -> str:
    """Return ``text`` in at most ``most`` characters, ``…`` where it was cut: in its middle
    (the start one character longer than the end), at its start or at its end (``at``)."""
    if len(text) <= most:
        return text
    if most <= 1:
        return ELLIPSIS[:most]
    keep = most - 1
    if at == START:
        return ELLIPSIS + text[len(text) - keep :]
    if at == END:
        return text[:keep] + ELLIPSIS
    head = (keep + 1) // 2
    return _joined(text, head, keep - head)


def cut_apart(texts: Iterable[str], most: int, at: Where = MIDDLE) -> dict[str, str]:
    """Return each of ``texts`` (a column's cells) as shown in at most ``most`` characters:
    ``cut`` at ``at``, then, where distinct texts would read the same, each cut again to keep
    the part where it differs from the others (not prose, cut at its ``END``)."""
    shown = {t: cut(t, most, at) for t in set(texts)}
    if at == END:
        return shown
    for group in _alike(shown):
        for text, recut in zip(group, _apart(group, most), strict=True):
            shown[text] = recut
    return shown


def _alike(shown: dict[str, str]) -> list[list[str]]:
    """Return the groups of distinct texts that ``shown`` writes the same (sorted)."""
    by: defaultdict[str, list[str]] = defaultdict(list)
    for text, s in shown.items():
        by[s].append(text)
    return [sorted(group) for group in by.values() if len(group) > 1]


def _apart(group: list[str], most: int) -> list[str]:
    """Return each text of ``group`` (sorted; texts ``cut`` writes alike) in ``most``
    characters, keeping where it differs from its nearest: ``_spans`` of its start and end."""
    starts = _nearest(group)  # where each differs from the text with the longest common start
    backwards = sorted(group, key=lambda t: t[::-1])
    ends = dict(zip(backwards, _nearest([t[::-1] for t in backwards]), strict=True))
    return [_recut(t, p, ends[t], most) for t, p in zip(group, starts, strict=True)]


def _nearest(texts: Sequence[str]) -> list[int]:
    """Return, for each of the sorted ``texts``, the length of its longest common start with
    any other (in sorted order, a neighbour has it)."""
    common = [_common(a, b) for a, b in pairwise(texts)]
    return [max(common[i - 1] if i else 0, common[i] if i < len(common) else 0)
            for i in range(len(texts))]  # fmt: skip


def _common(a: str, b: str) -> int:
    """Return the length of the common start of ``a`` and ``b``."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _recut(text: str, p: int, s: int, most: int) -> str:
    """Return ``text`` in ``most`` characters showing where it differs: its character ``p``
    (the first not in its nearest's start) or the last not in its nearest's end (``s``
    characters from its end): more of the start, else more of the end, else a window of the
    middle from just before ``p`` between two ellipses; ``cut`` when even that does not fit."""
    keep, least = most - 1, max(1, (most - 2) // 4)  # least: the start and end a cut keeps
    head, tail = p + CONTEXT, s + CONTEXT
    if len(text) <= most or keep < 2 * least + 1:
        return cut(text, most)
    if head <= keep - least:
        return _joined(text, head, keep - head)
    if tail <= keep - least:
        return _joined(text, keep - tail, tail)
    window = most - 2 - 2 * least
    if window < CONTEXT:
        return cut(text, most)
    at = max(least, min(p - (window - CONTEXT) // 2, len(text) - least - window))
    return text[:least] + ELLIPSIS + text[at : at + window] + ELLIPSIS + text[len(text) - least :]


def _joined(text: str, head: int, tail: int) -> str:
    """Return the first ``head`` and last ``tail`` characters of ``text`` joined by ``…``."""
    return text[:head] + ELLIPSIS + text[len(text) - tail :]
