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
from dataclasses import dataclass, field
from typing import Any

LINK_CAT = "traceana_link"


@dataclass
class Flows:
    """The flow records of the links, and the v2 fields to set on some slices."""

    records: list[dict[str, Any]] = field(default_factory=list)  # ph "s" / "f", in pairs
    on_slice: dict[int, dict[str, Any]] = field(default_factory=dict)  # event_id -> v2 fields
    v1: int = 0
    v2: int = 0
    unsure: int = 0  # links neither form binds for sure (written as v1)


def us(ns: int) -> float:
    """Return ns as µs; three decimals give ns exactly (the shortest float repr is written)."""
    return ns / 1000


def flows(
    edges: list[tuple[int, int, str, str, int]],
    where: dict[int, tuple[int, int]],
    span: dict[int, tuple[int, int]],
    pinned: set[int],
    order: dict[int, tuple[int, int]],
    base: int,
) -> Flows:
    """Return the flows of ``edges`` (src, dst, hop, link_method, latency_ns rows), flow i
    (from 1) with id i.

    ``where``: each event's (pid, tid); ``span``: its (start, end) ns; ``pinned``: the
    events no other slice of their track starts with, after them; ``order``: the order in
    which Perfetto reads the slices (start, then place in the file); ``base``: the
    document's time origin (ns)."""
    out = Flows()
    binds = _Binds(order, len(edges))

    for i, (src, dst, hop, method, latency) in enumerate(edges, start=1):
        a, b = (src, dst) if span[dst][0] >= span[src][0] else (dst, src)
        sure = a in pinned and b in pinned  # a v1 point at the slice's start binds to it
        if not sure and binds.add(a, b):
            out.v2 += 1
            continue
        out.unsure += not sure
        out.v1 += 1
        common = {"cat": LINK_CAT, "name": hop, "id": i}
        args = {"link_method": method, "latency_us": us(latency), "src": src, "dst": dst}
        for ph, eid in (("s", a), ("f", b)):
            pid, tid = where[eid]
            rec: dict[str, Any] = {"ph": ph, **common, "pid": pid, "tid": tid}
            if ph == "f":
                rec["bp"] = "e"
            rec["ts"] = us(span[eid][0] - base)
            if ph == "s":
                rec["args"] = args
            out.records.append(rec)
    out.on_slice = binds.on_slice
    return out


class _Binds:
    """The v2 ids given so far: one per slice. A slice both ending and starting flows ends
    one id and starts it again; Perfetto binds each ``flow_in`` to the latest slice that
    started its id (in the order it reads slices: by start, then as written), so an id is
    kept only while every slice ending it gets the flow of its own link."""

    def __init__(self, order: dict[int, tuple[int, int]], after: int):
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
        srcs = sorted(self.sources[bid], key=self.order.__getitem__)
        for dst, src in self.ends[bid].items():
            latest = [s for s in srcs if self.order[s] < self.order[dst]]
            if not latest or latest[-1] != src:
                return False
        return True
