"""Two device profiles of the same NEFFs compared: `traceana engines HEAD --base BASE`
(docs/device.md, "Comparing two device profiles").

Each side is an ``EnginesResult`` (questions/engines/analysis.py). NEFFs are matched by name; a NEFF
in several profiles of a side is taken over all of them (its window, FLOPs, bytes and times
summed; MFU, HFU and MBU the window-weighted mean). For each NEFF on both sides: the window,
MFU/HFU/MBU (percentage points), intensity, verdict, DMA, and per engine (summed over cores)
its active and instruction time, base and head and the change. A NEFF on one side only is
``added`` (head) or ``removed`` (base). The side level (``overall``) takes every profile of
a side: its windows summed, MFU/HFU/MBU the window-weighted mean of its profiles'.

A relative change (``_pct_delta``) is 100 × (head − base) / base; 0 → 0 is 0 %, from 0 to
anything else undefined (as ``traceana diff`` has it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.questions.engines.analysis import EnginesResult
from trace_analyzer.units import Condition, failed

USE = ("mfu_pct", "hfu_pct", "mbu_pct")
GATED_ENGINES = ("tensor", "vector", "scalar", "gpsimd")

# The --fail-on metrics of `traceana engines --base` (docs/device.md).
ENGINES_DIFF_METRICS = {
    "mfu_pct_delta": "MFU of all profiles, head − base (percentage points)",
    "hfu_pct_delta": "HFU of all profiles, head − base (percentage points)",
    "mbu_pct_delta": "MBU of all profiles, head − base (percentage points)",
    "window_pct_delta": "the largest relative change of a common NEFF's window (%)",
    **{
        f"{e}_active_pct_delta": f"the largest relative change of a common NEFF's {e} "
        "active time, summed over cores (%)"
        for e in GATED_ENGINES
    },
    "dma_active_pct_delta": "the largest relative change of a common NEFF's DMA active "
    "time, summed over cores (%)",
}
NEFF_LEVEL = {m for m in ENGINES_DIFF_METRICS if not m.startswith(USE)}


@dataclass(frozen=True, repr=False)
class EnginesDiffResult(RunResult):
    """Base against head, NEFF by NEFF (docs/device.md, "Comparing two device profiles"):

    ``overall`` (each side's window and MFU/HFU/MBU over all its profiles, and the changes),
    ``neffs`` (one row per NEFF: ``status`` common, added or removed; window, MFU/HFU/MBU,
    intensity, verdict, DMA active time and bytes, base, head and change), ``engines`` (per
    common NEFF and engine: active and instruction time, base, head and change), ``added``
    and ``removed`` (NEFF names), ``metrics`` (the --fail-on values, ``worst``: the NEFF each
    NEFF-level one is from), ``failed`` and ``gate_notes`` (the gates), ``notes``."""

    root: str
    base: str
    head: str
    overall: dict[str, Any]
    neffs: pl.DataFrame
    engines: pl.DataFrame
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
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
            "added": list(self.added), "removed": list(self.removed),
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
            ("NEFFs on both sides", common),
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


def _neff_rows(b: dict[str, dict[str, Any]], h: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for name in sorted(b.keys() | h.keys()):
        status = "common" if name in b and name in h else "added" if name in h else "removed"
        base, head = b.get(name, {}), h.get(name, {})
        rows.append({
            "neff": name, "status": status, **_changes(base, head, NEFF_FIGURES),
            "intensity_base": base.get("intensity"), "intensity_head": head.get("intensity"),
            "verdict_base": base.get("verdict"), "verdict_head": head.get("verdict"),
        })  # fmt: skip
    return rows


def _engine_rows(
    base: EnginesResult, head: EnginesResult, common: list[str]
) -> list[dict[str, Any]]:
    """Per common NEFF and engine (summed over cores and profiles): active and instruction
    time, base, head and change. An engine without a row on a side ran nothing there: 0
    (its active time null when that side has no ActiveTime)."""
    cols = ["active_ns", "instruction_ns"]
    sides = [_sums(s.engines, ["neff", "engine"], cols) for s in (base, head)]
    has_active = [s.engines.height > 0 and s.engines["active_ns"].null_count() < s.engines.height
                  for s in (base, head)]  # fmt: skip
    rows = []
    for name in common:
        engines = sorted({e for s in sides for (n, e) in s if n == name and e is not None})
        for e in engines:
            b, h = (s.get((name, e)) or {"active_ns": 0 if a else None, "instruction_ns": 0}
                    for s, a in zip(sides, has_active, strict=True))  # fmt: skip
            rows.append({"neff": name, "engine": e, **_changes(b, h, tuple(cols))})
    return rows


def engines_diff(base: EnginesResult, head: EnginesResult) -> EnginesDiffResult:
    """Return ``head`` against ``base`` (two ``engines()`` results), NEFF by NEFF (module
    doc); the gate metrics in ``metrics`` (``gate`` judges them)."""
    b, h = _by_neff(base), _by_neff(head)
    neffs = _neff_rows(b, h)
    common = [r["neff"] for r in neffs if r["status"] == "common"]
    engines = _engine_rows(base, head, common)
    overall = _changes(_overall(base), _overall(head), ("window_ns", *USE))
    metrics, worst = _metrics(overall, neffs, engines)
    notes = [f"base: {n}" for n in base.notes] + [f"head: {n}" for n in head.notes]
    return EnginesDiffResult(
        root=head.root, base=base.root, head=head.root, overall=overall,
        neffs=pl.DataFrame(neffs, infer_schema_length=None),
        engines=pl.DataFrame(engines, infer_schema_length=None),
        added=tuple(r["neff"] for r in neffs if r["status"] == "added"),
        removed=tuple(r["neff"] for r in neffs if r["status"] == "removed"),
        metrics=metrics, worst=worst, notes=tuple(notes),
    )  # fmt: skip


def _metrics(
    overall: dict[str, Any], neffs: list[dict[str, Any]], engines: list[dict[str, Any]]
) -> tuple[dict[str, float | None], dict[str, str]]:
    """The --fail-on values: the side-level MFU/HFU/MBU changes, and for each NEFF-level one
    the largest over the common NEFFs (with the NEFF it is from)."""
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
        known = [(v, n) for n, v in got if v is not None]
        top = max(known, default=None, key=lambda x: x[0])
        values[metric] = None if top is None else top[0]
        if top is not None:
            worst[metric] = top[1]
    return values, worst


def gate(result: EnginesDiffResult, conditions: list[Condition]) -> EnginesDiffResult:
    """Return ``result`` with ``failed``: each condition that holds or whose metric is
    undefined, a NEFF-level one naming its NEFF. With no NEFF on both sides a NEFF-level
    condition compares nothing: it passes, with a line in ``gate_notes``."""
    metrics, worst = result.metrics or {}, result.worst or {}
    common = not result.neffs.is_empty() and (result.neffs["status"] == "common").any()
    lines, notes = [], []
    for c in conditions:
        if c.metric in NEFF_LEVEL and not common:
            notes.append(f"--fail-on '{c.text}' passed: no NEFF is on both sides, so "
                         f"{c.metric} compares nothing")  # fmt: skip
            continue
        why = {c.metric: _undefined(c.metric)}
        where = f" (NEFF {worst[c.metric]})" if c.metric in worst else ""
        lines += [line + where for line in failed([c], metrics, why)]
    return replace(result, failed=tuple(lines), gate_notes=tuple(notes))


def _undefined(metric: str) -> str:
    if metric in NEFF_LEVEL:
        return "no common NEFF has it on both sides, or its base is 0"
    return "a side has no peaks (Metadata) or no window"
