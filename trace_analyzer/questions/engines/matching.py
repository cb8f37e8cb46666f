"""Which NEFF of base is which NEFF of head, for `traceana engines HEAD --base BASE`
(docs/device.md, "Matching").

A NEFF's file name is a hash of the compiled graph, so nearly every change to a model renames
its NEFFs. A NEFF of base and one of head are taken for the same work, in this order, each
NEFF matched once:

1. **name**: the same NEFF name on both sides;
2. **network name**: the same network name in the NEFF header (``NeffHeader.network_name``;
   the JSON export's ``neff_header``), where a profile of one NEFF records one, the name
   unique on each side;
3. **op**: the framework op that launched its executions, from the system profile beside the
   export (the chain op → runtime → ``nc_exec_running``, whose ``model_name`` names the
   NEFF), and its rank among that op's NEFFs in the order they first ran: the second NEFF of
   ``aten::mul`` in base is the second of ``aten::mul`` in head;
4. **position**: the k-th NEFF to run (by its first execution, else its first instruction)
   when both sides ran as many NEFFs: the same step, recompiled.

A NEFF left unmatched is added (head) or removed (base); what cannot be matched is compared
at the level of the whole profile (questions/engines/diff.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from trace_analyzer.errors import TraceanaError
from trace_analyzer.model.device import DeviceRun
from trace_analyzer.questions.engines.tables import UNKNOWN

if TYPE_CHECKING:
    from trace_analyzer.loading.profile import Profile

HOW = ("name", "network name", "op", "position")


@dataclass(frozen=True)
class NeffKeys:
    """What identifies the NEFFs of one side beyond their names: ``order``, every NEFF in the
    order it first ran; ``network``, NEFF -> its header's network name; ``op``, NEFF -> the
    op that launched it (the op of most of its executions)."""

    order: tuple[str, ...]
    network: Mapping[str, str] = field(default_factory=dict)
    op: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Pair:
    """A NEFF of base (``base``) matched with one of head (``head``), and ``how``."""

    base: str
    head: str
    how: str


def neff_keys(run: DeviceRun, ops: Mapping[str, str] | None = None) -> NeffKeys:
    """Return the keys of the NEFFs of ``run`` (``ops``: NEFF file name -> the op that
    launched it, ``ops_beside``)."""
    first: dict[str, int] = {}
    network: dict[str, str] = {}
    for p in run.profiles:
        timed = p.executions if p.executions.height else p.instructions
        ran = timed.filter(pl.col("neff").is_not_null(), pl.col("start_ns").is_not_null())
        starts = ran.group_by("neff").agg(pl.min("start_ns"))
        for name, start in starts.iter_rows():
            first[name] = min(first.get(name, start), start)
        names = p.instructions["neff"].drop_nulls().unique().to_list()
        if p.network and len(names) == 1:
            network[names[0]] = p.network
    order = tuple(sorted(first, key=lambda n: (first[n], n)))
    by_file = dict(ops or {})  # the system profile names a NEFF by its file name
    known = {n: by_file[_file(n)] for n in order if _file(n) in by_file}
    return NeffKeys(order=order, network=network, op=known)


def _file(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def _unique(keyed: Mapping[str, object], left: list[str]) -> dict[object, str]:
    """Key -> NEFF, among the NEFFs ``left``, for the keys only one of them has."""
    seen: dict[object, list[str]] = {}
    for n in left:
        if n in keyed:
            seen.setdefault(keyed[n], []).append(n)
    return {k: v[0] for k, v in seen.items() if len(v) == 1}


def _op_ranks(keys: NeffKeys) -> dict[str, tuple[str, int]]:
    """NEFF -> (its op, its rank among that op's NEFFs in the order they first ran)."""
    count: dict[str, int] = {}
    out = {}
    for n in keys.order:
        op = keys.op.get(n)
        if op is not None:
            out[n] = (op, count.get(op, 0))
            count[op] = count.get(op, 0) + 1
    return out


def match(base: NeffKeys, head: NeffKeys) -> list[Pair]:
    """Return the NEFFs of ``base`` and ``head`` matched (module doc), in head's order."""
    b_left = [n for n in base.order if n != UNKNOWN]
    h_left = [n for n in head.order if n != UNKNOWN]
    pairs: list[Pair] = []

    def take(b: str, h: str, how: str) -> None:
        pairs.append(Pair(b, h, how))
        b_left.remove(b)
        h_left.remove(h)

    for n in [n for n in b_left if n in h_left]:
        take(n, n, "name")
    for how, bk, hk in (("network name", base.network, head.network),
                        ("op", _op_ranks(base), _op_ranks(head))):  # fmt: skip
        theirs = _unique(hk, h_left)
        for key, b in _unique(bk, b_left).items():
            if key in theirs:
                take(b, theirs[key], how)
    if len(base.order) == len(head.order):
        for b, h in zip(base.order, head.order, strict=True):
            if b in b_left and h in h_left:
                take(b, h, "position")
    place = {n: i for i, n in enumerate(head.order)}
    return sorted(pairs, key=lambda p: place.get(p.head, len(place)))


def ops_beside(path: Path, runs: Sequence[Profile] | None = None) -> dict[str, str]:
    """Return NEFF file name -> the framework op that launched most of its executions, from
    the system profile under ``path`` (the run beside a device-profile export; ``runs``: it,
    already read with its args); {} where ``path`` holds no system profile, or one that
    cannot be read (the ops then match nothing)."""
    from trace_analyzer.loading.profile import load_runs
    from trace_analyzer.questions.engines.below import op_neffs

    if runs is None:
        try:
            runs = load_runs(path, args=True)
        except TraceanaError:
            return {}
    votes: dict[str, tuple[int, str]] = {}
    for profile in runs:
        for op, neff, n in op_neffs(profile).iter_rows():
            if op != "(unlinked)" and (neff not in votes or n > votes[neff][0]):
                votes[neff] = (n, op)
    return {neff: op for neff, (_, op) in votes.items()}
