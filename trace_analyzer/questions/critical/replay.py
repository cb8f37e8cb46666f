"""The replay of a dependency graph (graph.py) and the critical path through it
(docs/critical-path.md, "The replay", "The critical path").

The replay walks the nodes in their order (every dependency first) and starts each at the
latest of its dependencies plus its delay; a node with none keeps its recorded start. A
``Change`` (a what-if) gives some nodes another duration, gap, lag, delay or dependency;
with none, every node gets its recorded times back.

The critical path of a window is walked back from the node that ends it: through each
node's own time, then the dependency that started it (the latest one; on a tie a wait, then
a stream wait's, then the thread or lane, then the launch), each step back a **segment**,
until the window's start. The segments tile the window: their times add up to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from trace_analyzer.model.arrow import frame
from trace_analyzer.model.pages import zeroed
from trace_analyzer.questions.critical.graph import Graph
from trace_analyzer.questions.critical.link import NONE, OWN_CODES, _replay

# A segment: start, end, kind, the node it belongs to.
Segment = tuple[int, int, str, int]
# The kinds of a path's segments, by code (the compiled walk's, _replay.c).
KIND_CODES = (
    "compute", "communication", "memory", "call", "host", "launch", "sync", "unexplained",
    "before",
)  # fmt: skip


class Sparse(Mapping[int, int]):
    """Per node a value, as a frame (``node``, ``value``: Int64, each node once, in any
    order): a change to many nodes that the compiled replay puts in where it lies, without a
    Python int per node (the compiled host-time what-if's); a mapping like any other where
    Python asks."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame
        self._dict: dict[int, int] | None = None

    def _values(self) -> dict[int, int]:
        if self._dict is None:
            self._dict = dict(zip(self.frame["node"], self.frame["value"], strict=True))
        return self._dict

    def __getitem__(self, node: int) -> int:
        return self._values()[node]

    def __iter__(self) -> Iterator[int]:
        return iter(self._values())

    def __len__(self) -> int:
        return self.frame.height

    def nodes(self) -> pl.Series:
        """The nodes, as a column."""
        return self.frame["node"]


@dataclass
class Change:
    """A what-if: per node, what differs from the recorded graph (graph.Graph's fields)."""

    dur: Mapping[int, int] = field(default_factory=dict)
    gap: Mapping[int, int] = field(default_factory=dict)
    lag: Mapping[int, int] = field(default_factory=dict)
    delay: Mapping[int, int] = field(default_factory=dict)
    launch: Mapping[int, int] = field(default_factory=dict)
    wait: Mapping[int, int] = field(default_factory=dict)
    # The steps left out of the per-step mean (warm-up).
    skip: frozenset[int] = frozenset()

    def __bool__(self) -> bool:
        return any((self.dur, self.gap, self.lag, self.delay, self.launch, self.wait, self.skip))


@dataclass
class Times:
    """A replay's times: per node, ``start`` and ``end`` (``end`` is the start plus the node's
    own time), and the arrays the replay used, which the critical path walks (lists, or
    int64 arrays and memoryviews from the compiled replay)."""

    start: Sequence[int]
    end: Sequence[int]
    dur: Sequence[int]
    gap: Sequence[int]
    lag: Sequence[int]
    delay: Sequence[int]
    launch: Sequence[int]
    wait: Sequence[int]


def _with(values: Sequence[int], changed: Mapping[int, int]) -> Sequence[int]:
    """``values`` with ``changed`` (node to value) put in: a copy of the same kind (an int64
    memoryview's bytes copied at once)."""
    if not changed:
        return values
    if isinstance(values, memoryview) and _replay is not None:
        copied = zeroed(values.nbytes).cast("q")
        copied[:] = values
        if isinstance(changed, Sparse):  # what the loop below does, in C
            _replay.put_frame(copied, changed.frame.__arrow_c_stream__())
        else:
            _replay.put(copied, changed if isinstance(changed, dict) else dict(changed))
        return copied
    out = list(values)
    for i, v in changed.items():
        out[i] = v
    return out


def replay(
    g: Graph,
    change: Change | None = None,
    pin: frozenset[int] = frozenset(),
    *,
    native: bool = True,
) -> Times:
    """Return the times of every node of ``g`` under ``change`` (module doc); the nodes of
    ``pin`` keep their recorded start (the first measured step's marks: what ran before the
    measured steps is not counted). Nodes before the first one a change touches keep their
    recorded times (every dependency comes first, and as recorded the replay gives them
    back): the walk starts there. ``native``: by the compiled loop (_replay.c) where it was
    built, else (or with False) by this module's, which gives the same times."""
    c = change or Change()
    changed = (c.dur, c.gap, c.lag, c.delay, c.launch, c.wait)
    first = min((_least(m) for m in changed if m), default=g.n)
    if native and _replay is not None and isinstance(g.start, memoryview):
        return _compiled(g, c, pin, first)
    return _walked(g, c, pin, first)


def _least(changed: Mapping[int, int]) -> int:
    """The first node ``changed`` changes (not empty)."""
    if isinstance(changed, Sparse):
        least = changed.nodes().min()
        assert isinstance(least, int)
        return least
    return min(changed)


def _compiled(g: Graph, c: Change, pin: frozenset[int], first: int) -> Times:
    """The replay by the compiled loop (_replay.c), over the graph's int64 arrays."""
    dur, gap, lag = _with(g.dur, c.dur), _with(g.gap, c.gap), _with(g.lag, c.lag)
    delay, launch, wait = _with(g.delay, c.delay), _with(g.launch, c.launch), _with(g.wait, c.wait)
    pinned = bytearray(g.n)
    for i in pin:
        pinned[i] = 1
    assert _replay is not None
    size = 8 * g.n
    out = zeroed(2 * size)  # the starts, then the ends
    _replay.replay(
        first, out, g.anchored, pinned, g.start, dur, gap, lag, delay, g.tail, g.chain, launch,
        wait, g.cross,
    )  # fmt: skip
    start, end = out[:size].cast("q"), out[size:].cast("q")
    return Times(start, end, dur, gap, lag, delay, launch, wait)


def _walked(g: Graph, c: Change, pin: frozenset[int], first: int) -> Times:
    """The replay by this module's loop (the compiled one's reference)."""
    dur, gap, lag = _with(g.dur, c.dur), _with(g.gap, c.gap), _with(g.lag, c.lag)
    delay, launch, wait = _with(g.delay, c.delay), _with(g.launch, c.launch), _with(g.wait, c.wait)
    chain, cross, tail, anchored, recorded = g.chain, g.cross, g.tail, g.anchored, g.start
    n = g.n
    start = list(recorded[:first]) + [0] * (n - first)
    end = [s + d for s, d in zip(start[:first], g.dur[:first], strict=True)] + [0] * (n - first)
    for i in range(first, n):
        if anchored[i] or i in pin:
            start[i] = t = recorded[i]
            end[i] = t + dur[i]
            continue
        t = -(1 << 62)
        p = wait[i]
        if p >= 0:
            t = end[p] + tail[i]
        p = chain[i]
        if p >= 0 and end[p] + gap[i] > t:
            t = end[p] + gap[i]
        p = launch[i]
        if p >= 0 and start[p] + lag[i] > t:
            t = start[p] + lag[i]
        p = cross[i]
        if p >= 0 and end[p] > t:
            t = end[p]
        if t == -(1 << 62):  # a change took its last dependency: it keeps its start
            t = recorded[i] - delay[i]
        t += delay[i]
        start[i] = t
        end[i] = t + dur[i]
    return Times(start, end, dur, gap, lag, delay, launch, wait)


def windows(g: Graph, times: Times) -> dict[int | None, tuple[int, int, int]]:
    """Return per step its window under ``times``: (start, end, the node that ends it); a
    step runs from its start mark to the later of its end mark and the end of the device
    work launched in it (docs/gaps.md, "--step"); where several processes (ranks) record it,
    from the first start to the last end. A run without steps has one window, under None:
    its first start to its last end."""
    start, end = times.start, times.end
    if not g.n:
        return {}
    if _replay is not None and isinstance(end, memoryview):  # the same, compiled
        keys, arrays = g.window_groups()
        found = _replay.spans(*arrays[:4], arrays[4], arrays[5], len(keys), start, end)
        return {s: (a, b, i) for s, a, b, i in zip(keys, *found, strict=True)}
    if not g.marks:
        last = max(range(g.n), key=lambda i: (end[i], i))
        return {None: (min(start), end[last], last)}
    ends = {s: max((start[b], b) for b in bs) for s, (_, bs) in g.marks.items()}
    for s, nodes in g.by_step().items():
        last = max(nodes, key=end.__getitem__)
        if s in ends and end[last] > ends[s][0]:
            ends[s] = (end[last], last)
    return {
        s: (min(start[a] for a in starts), ends[s][0], ends[s][1])
        for s, (starts, _) in sorted(g.marks.items())
    }


WALKED = dict.fromkeys(("window", "start_ns", "end_ns", "kind", "node"), pl.Int64)


def walk_all(
    g: Graph, times: Times, w0s: list[int], lasts: list[int], *, native: bool = True
) -> pl.DataFrame:
    """Return every window's critical path (window ``k`` from ``w0s[k]`` to the end of node
    ``lasts[k]``), its segments in time order within each window, one row each (``WALKED``):
    the window's index, start, end, kind (its code in ``KIND_CODES``) and node. By the
    compiled walk (_replay.c) where the replay was compiled, else (or with ``native`` False)
    by ``path``, which gives the same segments."""
    if native and _replay is not None and isinstance(times.start, memoryview):
        return frame(_replay.walk(
            w0s, lasts, times.start, times.end, times.gap, times.lag, g.tail, g.chain,
            times.launch, times.wait, g.cross, g.anchored, g.own,
        ))  # fmt: skip
    code = {k: c for c, k in enumerate(KIND_CODES)}
    out: tuple[list[int], ...] = ([], [], [], [], [])
    for k, (w0, last) in enumerate(zip(w0s, lasts, strict=True)):
        for a, b, kind, node in reversed(path(g, times, w0, last)):
            for column, value in zip(out, (k, a, b, code[kind], node), strict=True):
                column.append(value)
    return pl.DataFrame(dict(zip(WALKED, out, strict=True)), schema=WALKED)


def path(g: Graph, times: Times, w0: int, last: int) -> list[Segment]:
    """Return the critical path of the window from ``w0`` to the end of node ``last``: its
    segments, latest first (module doc). Kinds: the device work's kind, ``call`` (a host
    call's own time), ``host`` (the thread's time between calls), ``launch`` (from a launch
    call's start to its work's start, at most the launch latency), ``sync`` (a waiting call's
    return after the device work it waited for), ``unexplained`` (a delay no recorded
    dependency explains), ``before`` (time before a node that has no recorded dependency)."""
    s, e = times.start, times.end
    out: list[Segment] = []

    def add(a: int, b: int, kind: str, node: int) -> bool:
        """Add [a, b] clipped to the window; False once the window's start is reached."""
        if (
            b > a or kind == "sync"
        ) and b > w0:  # a wait is on the path even when its call's return took no time
            out.append((max(a, w0), b, kind, node))
        return a > w0

    i, at_end = last, True
    while True:
        if at_end and not add(s[i], e[i], _own(g, i), i):
            break
        at_end = True
        p, via, v = _binding(g, times, i)
        if p == NONE:
            add(w0, s[i], "before", i)
            break
        if not add(v, s[i], "unexplained", i):
            break
        if via == "wait":
            ok = add(e[p], v, "sync", i)
        elif via == "cross":
            ok = True  # on to the work on the other stream that the stream wait held it for
        elif via == "chain":
            ok = add(e[p], v, "host" if g.own[i] == OWN_CODES["call"] else "unexplained", i)
        else:
            ok = add(s[p], v, "launch", p)  # the launch call's: it starts there
            at_end = False  # on from the launch call's start, not through its own time
        if not ok:
            break
        i = p
    return out


def _own(g: Graph, i: int) -> str:
    return KIND_CODES[g.own[i]]


def _binding(g: Graph, times: Times, i: int) -> tuple[int, str, int]:
    """The dependency that started node ``i`` under ``times``: (node, which, the time it
    allowed); (NONE, "", start) where it has none."""
    s, e = times.start, times.end
    best, via, v = NONE, "", -(1 << 62)
    p = times.wait[i]
    if p >= 0:
        best, via, v = p, "wait", e[p] + g.tail[i]
    p = g.cross[i]
    if p >= 0 and e[p] > v:
        best, via, v = p, "cross", e[p]
    p = g.chain[i]
    if p >= 0 and e[p] + times.gap[i] > v:
        best, via, v = p, "chain", e[p] + times.gap[i]
    p = times.launch[i]
    if p >= 0 and s[p] + times.lag[i] > v:
        best, via, v = p, "launch", s[p] + times.lag[i]
    if g.anchored[i] or best == NONE:
        return NONE, "", s[i]
    return best, via, v
