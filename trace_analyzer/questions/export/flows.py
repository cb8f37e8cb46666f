"""The links of a run as flows that Perfetto's trace processor keeps, each on its own slices.

How Perfetto's JSON importer binds a flow (checked with its own engine, UI build v52, in
tests/render/test_export_perfetto.py; docs/graph.md):

- A v1 flow point (``ph: "s"``, or ``"f"`` with ``bp: "e"``) binds to the slice on top of its
  thread's stack at its time, after every slice beginning at that time. A slice that ended
  stays on top until the next slice begins on that thread. So a point binds to its slice for
  sure only at the slice's start, and only when no nested slice starts there too.
- A flow whose end comes before its start is dropped (``flow_end_without_start``); one whose
  end slice starts before its start slice is stored from the earlier slice to the later.
- A v2 flow (``bind_id`` with ``flow_out`` / ``flow_in`` on the complete event itself) binds
  to that slice whatever its nesting; one slice carries one ``bind_id``, so it can start
  flows to many slices (all with its id) and end the flow of one.

So each link is written as a v1 flow from the start of the earlier of its two slices to the
start of the later, and as a v2 flow where a nested slice starts with one of the two. Perfetto
draws a link whose child starts before its parent (a link against time) from the child.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

LINK_CAT = "traceana_link"
# A link: (src, dst, hop, link_method, latency_ns), a row of the edges table.
Edge = tuple[int, int, str, str, int]


class Slots(Protocol):
    """Where each event's slice is written (questions/export/perfetto.py's tracks)."""

    def where(self, eid: int) -> tuple[int, int]:
        """The (pid, tid) of the event's slice."""
        ...

    def start(self, eid: int) -> int:
        """The event's start (ns)."""
        ...

    def pinned(self, eid: int) -> bool:
        """Whether no other slice of its track starts with it, after it."""
        ...

    def order(self, eid: int) -> tuple[int, int]:
        """The order in which Perfetto reads its slice: (start, place in the file)."""
        ...


@dataclass
class Flows:
    """How each link is written: as a v1 pair of records (``records``) or as v2 fields set on
    its two slices (``on_slice``)."""

    v1_links: bytearray = field(default_factory=bytearray)  # per link: 1 where written as v1
    on_slice: dict[int, dict[str, Any]] = field(default_factory=dict)  # event_id -> v2 fields
    v1: int = 0
    v2: int = 0
    unsure: int = 0  # links neither form binds for sure (written as v1)


def us(ns: int) -> float:
    """Return ns as µs; three decimals give ns exactly (the shortest float repr is written)."""
    return ns / 1000


def flows(edges: Iterable[Edge], links: int, slots: Slots) -> Flows:
    """Return how each of ``edges`` (src, dst, hop, link_method, latency_ns rows; ``links`` of
    them) is written, link i (from 1) as the flow with id i, the v2 ids above them;
    ``slots``: where each event's slice is."""
    out = Flows()
    binds = _Binds(slots.order, links)
    for src, dst, *_ in edges:
        a, b = _ends(src, dst, slots)
        sure = slots.pinned(a) and slots.pinned(b)  # a v1 point at the slice's start binds
        v2 = not sure and binds.add(a, b)
        out.v1_links.append(not v2)
        if v2:
            out.v2 += 1
            continue
        out.unsure += not sure
        out.v1 += 1
    out.on_slice = binds.on_slice
    return out


def records(
    edges: Iterable[Edge], linked: Flows, slots: Slots, base: int, size: int
) -> Iterator[list[dict[str, Any]]]:
    """Yield the ``ph: "s"`` / ``"f"`` records of the links written as v1 (``linked``), in
    pairs, in lists of at most ``size``; ``base``: the document's time origin (ns)."""
    out: list[dict[str, Any]] = []
    for i, (src, dst, hop, method, latency) in enumerate(edges, start=1):
        if not linked.v1_links[i - 1]:
            continue
        a, b = _ends(src, dst, slots)
        common = {"cat": LINK_CAT, "name": hop, "id": i}
        args = {"link_method": method, "latency_us": us(latency), "src": src, "dst": dst}
        for ph, eid in (("s", a), ("f", b)):
            pid, tid = slots.where(eid)
            rec: dict[str, Any] = {"ph": ph, **common, "pid": pid, "tid": tid}
            if ph == "f":
                rec["bp"] = "e"
            rec["ts"] = us(slots.start(eid) - base)
            if ph == "s":
                rec["args"] = args
            out.append(rec)
        if len(out) >= size:
            yield out
            out = []
    if out:
        yield out


def _ends(src: int, dst: int, slots: Slots) -> tuple[int, int]:
    """The link's two events, the one whose slice starts first first."""
    return (src, dst) if slots.start(dst) >= slots.start(src) else (dst, src)


class _Binds:
    """The v2 ids given so far: one per slice. A slice both ending and starting flows ends
    one id and starts it again; Perfetto binds each ``flow_in`` to the latest slice that
    started its id (in the order it reads slices: by start, then as written), so an id is
    kept only while every slice ending it gets the flow of its own link."""

    def __init__(self, order: Callable[[int], tuple[int, int]], after: int):
        self.order, self.next_id = order, after + 1
        self.on_slice: dict[int, dict[str, Any]] = {}
        self.sources: dict[int, set[int]] = defaultdict(set)
        self.ends: dict[int, dict[int, int]] = defaultdict(dict)  # id -> {dst: its src}

    def add(self, a: int, b: int) -> bool:
        """Bind the link a → b as a v2 flow; False (nothing changed) where it cannot."""
        fa, fb = self.on_slice.get(a, {}), self.on_slice.get(b, {})
        if "flow_in" in fb or ("bind_id" in fa and "bind_id" in fb):
            return False
        bid = fa.get("bind_id", fb.get("bind_id"))
        if bid is None:
            bid, self.next_id = self.next_id, self.next_id + 1
        before = {k: dict(v) for k, v in ((a, fa), (b, fb))}
        self.on_slice[a] = {**fa, "bind_id": bid, "flow_out": True}
        self.on_slice[b] = {**fb, "bind_id": bid, "flow_in": True}
        self.sources[bid].add(a)
        self.ends[bid][b] = a
        if self._kept(bid):
            return True
        for eid, fields in before.items():  # undo
            if fields:
                self.on_slice[eid] = fields
            else:
                del self.on_slice[eid]
        if "flow_out" not in before[a]:
            self.sources[bid].discard(a)
        del self.ends[bid][b]
        return False

    def _kept(self, bid: int) -> bool:
        srcs = sorted(self.sources[bid], key=self.order)
        for dst, src in self.ends[bid].items():
            latest = [s for s in srcs if self.order(s) < self.order(dst)]
            if not latest or latest[-1] != src:
                return False
        return True
