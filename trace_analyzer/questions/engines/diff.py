"""Two device profiles of the same NEFFs compared: `traceana diff BASE HEAD --engines` (and its
older spelling `traceana engines HEAD --base BASE`; docs/device.md, "Comparing two device
profiles"). ``compare_runs`` is the whole comparison both spellings run.

Each side is an ``EnginesResult`` (questions/engines/analysis.py). NEFFs are matched by name,
or across a rename by network name, op or position (``matching.py``, which says how each pair
was matched); a NEFF in several profiles of a side is taken over all of them (its window,
FLOPs, bytes and times summed; MFU, HFU and MBU the window-weighted mean). For each pair of
matched NEFFs: the window, MFU/HFU/MBU (percentage points), intensity, verdict, DMA, and per
engine (summed over cores) its active and instruction time, base and head and the change.
A NEFF left unmatched is ``added`` (head) or ``removed`` (base). The side level
(``overall``) takes every profile of a side: its windows summed, MFU/HFU/MBU the
window-weighted mean of its profiles'. When a NEFF is left unmatched, the gate's NEFF-level
metrics also compare the whole profiles (``whole``: the window, each engine's active time
and the DMA's, over every NEFF), so that work no NEFF pair holds is still compared.

A relative change (``_pct_delta``) is 100 × (head − base) / base; 0 → 0 is 0 %, from 0 to
anything else undefined (as ``traceana diff`` has it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.model.device import DeviceRun
from trace_analyzer.questions.engines.analysis import EnginesResult, engines
from trace_analyzer.questions.engines.matching import Pair, match, neff_keys
from trace_analyzer.units import Condition, failed, judge

USE = ("mfu_pct", "hfu_pct", "mbu_pct")
GATED_ENGINES = ("tensor", "vector", "scalar", "gpsimd")

# The --fail-on metrics of `traceana diff --engines` (`engines --base`; docs/device.md).
ENGINES_DIFF_METRICS = {
    "mfu_pct_delta": "MFU of all profiles, head − base (percentage points)",
    "hfu_pct_delta": "HFU of all profiles, head − base (percentage points)",
    "mbu_pct_delta": "MBU of all profiles, head − base (percentage points)",
    "window_pct_delta": "the largest relative change of a matched NEFF's window, or of the "
    "whole profiles' when a NEFF is unmatched (%)",
    **{
        f"{e}_active_pct_delta": f"the largest relative change of a matched NEFF's {e} "
        "active time, summed over cores, or of the whole profiles' (%)"
        for e in GATED_ENGINES
    },
    "dma_active_pct_delta": "the largest relative change of a matched NEFF's DMA active "
    "time, summed over cores, or of the whole profiles' (%)",
}
NEFF_LEVEL = {m for m in ENGINES_DIFF_METRICS if not m.startswith(USE)}
WHOLE = "(whole profiles)"  # in ``worst``: the metric is the whole profiles' change


@dataclass(frozen=True, repr=False)
class EnginesDiffResult(RunResult):
    """Base against head, NEFF by NEFF (docs/device.md, "Comparing two device profiles"):

    ``overall`` (each side's window and MFU/HFU/MBU over all its profiles, and the changes),
    ``neffs`` (one row per NEFF: ``status`` common (matched), added or removed; ``neff`` the
    head's name, ``neff_base`` the base's, ``matched_by`` how; window, MFU/HFU/MBU,
    intensity, verdict, DMA active time and bytes, base, head and change), ``engines`` (per
    matched NEFF and engine: active and instruction time, base, head and change), ``added``
    and ``removed`` (NEFF names), ``whole`` (when a NEFF is unmatched: the whole profiles'
    window, gated engines' and DMA active time, base, head and change; else None),
    ``metrics`` (the --fail-on values, ``worst``: the NEFF each NEFF-level one is from, or
    ``WHOLE``), ``failed`` and ``gate_notes`` (the gates), ``notes``."""

    root: str
    base: str
    head: str
    overall: dict[str, Any]
    neffs: pl.DataFrame
    engines: pl.DataFrame
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    whole: dict[str, Any] | None = None
    metrics: dict[str, float | None] | None = None
    worst: dict[str, str] | None = None
    failed: tuple[str, ...] = ()
    gate_notes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    csv_table = "neffs"

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root, "base": self.base, "head": self.head,
            "overall": self.overall,
            "neffs": self.neffs.to_dicts(), "engines": self.engines.to_dicts(),
            "added": list(self.added), "removed": list(self.removed), "whole": self.whole,
            "metrics": dict(self.metrics or {}), "worst": dict(self.worst or {}),
            "failed": list(self.failed), "gate_notes": list(self.gate_notes),
            "notes": list(self.notes),
        }  # fmt: skip

    def main_frame(self) -> pl.DataFrame:
        return self.neffs

    def summary_rows(self) -> list[tuple[str, object]]:
        common = self.neffs.filter(pl.col("status") == "common").height
        return [
            ("base", self.base),
            ("head", self.head),
            ("NEFFs matched", common),
            ("NEFFs added", len(self.added)),
            ("NEFFs removed", len(self.removed)),
            ("MFU change (pp)", self.overall.get("mfu_pct_delta")),
            ("gates failed", len(self.failed)),
        ]

    def __repr__(self) -> str:
        return frame_repr("EnginesDiffResult", base=self.base, head=self.head,
                          neffs=self.neffs, engines=self.engines)  # fmt: skip


def pct_delta(base: float | None, head: float | None) -> float | None:
    """100 × (head − base) / base; 0 → 0 is 0; from 0 to anything else, or a null, None."""
    if base is None or head is None:
        return None
    if base == 0:
        return 0.0 if head == 0 else None
    return 100 * (head - base) / base


def _minus(base: float | None, head: float | None) -> float | None:
    return None if base is None or head is None else head - base


def _sum(values: list[Any]) -> Any:
    """The sum of ``values``; None when any is None (a figure the export lacks)."""
    return None if any(v is None for v in values) else sum(values)


def _weighted(rows: list[dict[str, Any]], key: str) -> float | None:
    """The window-weighted mean of ``key`` over ``rows`` (None when any is null)."""
    total = sum(r["window_ns"] or 0 for r in rows)
    if not rows or total == 0 or any(r[key] is None for r in rows):
        return None
    return float(sum(r[key] * (r["window_ns"] or 0) for r in rows) / total)


def _by_neff(side: EnginesResult) -> dict[str, dict[str, Any]]:
    """Per NEFF name, over every profile and core of ``side``: window, FLOPs, bytes,
    MFU/HFU/MBU, intensity, verdict, DMA active time and bytes."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in side.neffs.to_dicts() if side.neffs.height else []:
        rows.setdefault(r["neff"], []).append(r)
    dma = _sums(side.cores, ["neff"], ["dma_active_ns", "dma_bytes"])
    out = {}
    for name, mine in rows.items():
        flops, hbm = _sum([r["model_flops"] for r in mine]), _sum([r["hbm_bytes"] for r in mine])
        verdicts = sorted({r["verdict"] for r in mine if r["verdict"]})
        out[name] = {
            "window_ns": _sum([r["window_ns"] for r in mine]),
            **{k: _weighted(mine, k) for k in USE},
            "intensity": mine[0]["intensity"] if len(mine) == 1 else _ratio(flops, hbm),
            "verdict": " / ".join(verdicts) or None,
            **dma.get((name,), {"dma_active_ns": None, "dma_bytes": None}),
        }
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _sums(
    frame: pl.DataFrame, keys: list[str], cols: list[str]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Per ``keys``: each of ``cols`` summed (null when any row's is null)."""
    if frame.is_empty():
        return {}
    agg = [
        pl.when(pl.col(c).null_count() > 0).then(None).otherwise(pl.col(c).sum()).alias(c)
        for c in cols
    ]
    return {
        tuple(r[k] for k in keys): {c: r[c] for c in cols}
        for r in frame.group_by(keys).agg(agg).to_dicts()
    }


def _overall(side: EnginesResult) -> dict[str, Any]:
    rows = side.profiles.to_dicts() if side.profiles.height else []
    return {"window_ns": _sum([r["window_ns"] for r in rows]) if rows else None,
            **{k: _weighted(rows, k) for k in USE}}  # fmt: skip


def _changes(base: dict[str, Any], head: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """``k_base``, ``k_head``, ``k_delta`` (and for times ``_pct_delta``) of each key."""
    out: dict[str, Any] = {}
    for k in keys:
        b, h = base.get(k), head.get(k)
        out |= {f"{k}_base": b, f"{k}_head": h, f"{k}_delta": _minus(b, h)}
        if not k.endswith("_pct"):
            out[f"{k.removesuffix('_ns')}_pct_delta"] = pct_delta(b, h)
    return out


NEFF_FIGURES = ("window_ns", *USE, "dma_active_ns", "dma_bytes")


def _neff_rows(
    b: dict[str, dict[str, Any]], h: dict[str, dict[str, Any]], pairs: list[Pair]
) -> list[dict[str, Any]]:
    """One row per matched pair (``neff``: head's name, ``neff_base``: base's, ``matched_by``:
    how), then per NEFF of one side only (added, removed)."""
    paired: list[tuple[str, str | None, str | None, str | None]]
    paired = [("common", p.base, p.head, p.how) for p in pairs]
    bases, heads = {p.base for p in pairs}, {p.head for p in pairs}
    paired += [("added", None, n, None) for n in sorted(h.keys() - heads)]
    paired += [("removed", n, None, None) for n in sorted(b.keys() - bases)]
    rows = []
    for status, bn, hn, how in paired:
        base, head = b.get(bn or "", {}), h.get(hn or "", {})
        rows.append({
            "neff": hn or bn, "status": status, **_changes(base, head, NEFF_FIGURES),
            "intensity_base": base.get("intensity"), "intensity_head": head.get("intensity"),
            "verdict_base": base.get("verdict"), "verdict_head": head.get("verdict"),
            "neff_base": bn, "matched_by": how,
        })  # fmt: skip
    return rows


def _engine_rows(
    base: EnginesResult, head: EnginesResult, pairs: list[Pair]
) -> list[dict[str, Any]]:
    """Per matched pair and engine (summed over cores and profiles; ``neff``: head's name):
    active and instruction time, base, head and change. An engine without a row on a side
    ran nothing there: 0 (its active time null when that side has no ActiveTime)."""
    cols = ["active_ns", "instruction_ns"]
    sides = [_sums(s.engines, ["neff", "engine"], cols) for s in (base, head)]
    has_active = [_has_active(s) for s in (base, head)]
    rows = []
    for p in pairs:
        names = (p.base, p.head)
        engines = sorted({e for s, name in zip(sides, names, strict=True)
                          for (n, e) in s if n == name and e is not None})  # fmt: skip
        for e in engines:
            b, h = (s.get((name, e)) or {"active_ns": 0 if a else None, "instruction_ns": 0}
                    for s, name, a in zip(sides, names, has_active, strict=True))  # fmt: skip
            rows.append({"neff": p.head, "engine": e, **_changes(b, h, tuple(cols))})
    return rows


def _has_active(side: EnginesResult) -> bool:
    e = side.engines
    return e.height > 0 and e["active_ns"].null_count() < e.height


def _whole(side: EnginesResult) -> dict[str, Any]:
    """The whole side's NEFF-level figures: its window (as ``overall``), each gated engine's
    active time and the DMA's, summed over every NEFF and core."""
    out: dict[str, Any] = {"window_ns": _overall(side)["window_ns"]}
    e = side.engines
    for name in GATED_ENGINES:
        mine = e.filter(pl.col("engine") == name) if e.height else e
        out[f"{name}_active_ns"] = (
            (int(mine["active_ns"].fill_null(0).sum()) if mine.height else 0)
            if _has_active(side)
            else None
        )
    cores = side.cores
    out["dma_active_ns"] = int(cores["dma_active_ns"].fill_null(0).sum()) if cores.height else 0
    return out


def by_name(base: EnginesResult, head: EnginesResult) -> list[Pair]:
    """The NEFFs of both sides matched by name alone (``matching.match`` matches renames)."""
    names = set(base.neffs["neff"].to_list()) if base.neffs.height else set()
    common = names & (set(head.neffs["neff"].to_list()) if head.neffs.height else set())
    return [Pair(n, n, "name") for n in sorted(common)]


def engines_diff(
    base: EnginesResult, head: EnginesResult, pairs: list[Pair] | None = None
) -> EnginesDiffResult:
    """Return ``head`` against ``base`` (two ``engines()`` results), NEFF by NEFF (module
    doc): ``pairs``, the NEFFs matched (``matching.match``; by name alone when None). The
    gate metrics are in ``metrics`` (``gate`` judges them)."""
    pairs = by_name(base, head) if pairs is None else pairs
    b, h = _by_neff(base), _by_neff(head)
    pairs = [p for p in pairs if p.base in b and p.head in h]
    neffs = _neff_rows(b, h, pairs)
    engines = _engine_rows(base, head, pairs)
    overall = _changes(_overall(base), _overall(head), ("window_ns", *USE))
    unmatched = any(r["status"] != "common" for r in neffs)
    whole = _changes(_whole(base), _whole(head), tuple(_whole(base))) if unmatched else None
    metrics, worst = _metrics(overall, neffs, engines, whole)
    notes = [f"base: {n}" for n in base.notes] + [f"head: {n}" for n in head.notes]
    return EnginesDiffResult(
        root=head.root, base=base.root, head=head.root, overall=overall,
        neffs=pl.DataFrame(neffs, infer_schema_length=None),
        engines=pl.DataFrame(engines, infer_schema_length=None),
        added=tuple(r["neff"] for r in neffs if r["status"] == "added"),
        removed=tuple(r["neff"] for r in neffs if r["status"] == "removed"),
        whole=whole, metrics=metrics, worst=worst, notes=tuple(notes),
    )  # fmt: skip


def compare_runs(
    base: DeviceRun,
    head: DeviceRun,
    *,
    neff: str | None = None,
    ops: Sequence[Mapping[str, str]] = ({}, {}),
    conditions: Sequence[Condition] = (),
    allow_empty: bool = False,
) -> EnginesDiffResult:
    """Return ``head`` against ``base`` (two ``load_device`` runs), NEFF by NEFF, gated: the
    comparison `traceana diff BASE HEAD --engines` prints. ``neff``: only the NEFFs this glob
    matches on each side; ``ops``: per side, NEFF file name -> the op that launched it
    (``matching.ops_beside``), for matching across a rename; ``conditions``,
    ``allow_empty``: the gate (``gate``)."""
    sides = [engines(r, neff=neff) for r in (base, head)]
    keys = [neff_keys(r, o) for r, o in zip((base, head), ops, strict=True)]
    compared = engines_diff(sides[0], sides[1], match(keys[0], keys[1]))
    return gate(compared, list(conditions), allow_empty=allow_empty)


def _metrics(
    overall: dict[str, Any],
    neffs: list[dict[str, Any]],
    engines: list[dict[str, Any]],
    whole: dict[str, Any] | None,
) -> tuple[dict[str, float | None], dict[str, str]]:
    """The --fail-on values: the side-level MFU/HFU/MBU changes, and for each NEFF-level one
    the largest over the matched NEFFs and, when a NEFF is unmatched (``whole``), the whole
    profiles' change (with the NEFF it is from, or ``WHOLE``)."""
    values: dict[str, float | None] = {f"{k}_delta": overall[f"{k}_delta"] for k in USE}
    worst: dict[str, str] = {}
    common = [r for r in neffs if r["status"] == "common"]
    per = {
        "window_pct_delta": [(r["neff"], r["window_pct_delta"]) for r in common],
        "dma_active_pct_delta": [(r["neff"], r["dma_active_pct_delta"]) for r in common],
    }
    for e in GATED_ENGINES:
        per[f"{e}_active_pct_delta"] = [
            (r["neff"], r["active_pct_delta"]) for r in engines if r["engine"] == e
        ]  # fmt: skip
    for metric, got in per.items():
        if whole is not None:
            got.append((WHOLE, whole[metric]))
        known = [(v, n) for n, v in got if v is not None]
        top = max(known, default=None, key=lambda x: x[0])
        values[metric] = None if top is None else top[0]
        if top is not None:
            worst[metric] = top[1]
    return values, worst


def gate(
    result: EnginesDiffResult, conditions: list[Condition], *, allow_empty: bool = False
) -> EnginesDiffResult:
    """Return ``result`` with ``failed``: each condition that holds or whose metric is
    undefined, a NEFF-level one naming its NEFF (or the whole profiles). A gate none of
    whose metrics has a value compared nothing: ``errors.EmptyGate``, or with ``allow_empty``
    a pass that says so in ``gate_notes`` (``units.judge``)."""
    metrics, worst = result.metrics or {}, result.worst or {}
    why = {c.metric: _undefined(c.metric) for c in conditions}
    where = f"{result.head} against {result.base}"
    judged = judge(conditions, metrics, why, where=where, allow_empty=allow_empty)
    if judged.notes:
        return replace(result, failed=(), gate_notes=judged.notes)
    lines = []
    for c in conditions:
        lines += [line + _from(result, worst.get(c.metric)) for line in failed([c], metrics, why)]
    return replace(result, failed=tuple(lines))


def _from(result: EnginesDiffResult, neff: str | None) -> str:
    """Where a NEFF-level value comes from: `` (NEFF x)``, with base's name and how it was
    matched when renamed, or `` (the whole profiles: …)``."""
    if neff is None:
        return ""
    if neff == WHOLE:
        return f" (the whole profiles; NEFFs unmatched: {unmatched(result)})"
    common = result.neffs.filter(pl.col("neff") == neff, pl.col("status") == "common")
    row = common.row(0, named=True)
    if row["neff_base"] == neff:
        return f" (NEFF {neff})"
    return f" (NEFF {neff}, base {row['neff_base']}, matched by {row['matched_by']})"


def unmatched(result: EnginesDiffResult) -> str:
    """``1 removed, 6 added``: the NEFFs no pair holds, why the whole profiles are compared."""
    parts = [f"{len(result.removed)} removed"] if result.removed else []
    return ", ".join(parts + ([f"{len(result.added)} added"] if result.added else []))


def _undefined(metric: str) -> str:
    if metric in NEFF_LEVEL:
        return "no matched NEFF has it on both sides, nor the whole profiles, or its base is 0"
    return "a side has no peaks (Metadata) or no window"
