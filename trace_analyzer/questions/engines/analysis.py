"""Below the gaps: each device profile's engines, DMA, MFU/HFU/MBU and roofline, per NEFF and
physical core (`traceana engines`; docs/device.md).

Definitions (docs/device.md has them all, with the formulas of questions/engines/roofline.py):
- A NEFF's **window** is the summed time of its executions (``ExecutionInfo``); without
  ExecutionInfo, the span of its instructions on that core (first start to last end).
- An engine's **active** time is the ActiveTime (already merged, waits left out) whose start
  lies in one of the NEFF's executions (without ExecutionInfo and with one NEFF: all of it);
  its **instruction** time the summed durations of its instructions; **idle between** the
  window less the union of its instructions; **waits** the ``EVENT_SEMAPHORE`` instructions,
  counted apart and in no figure of work.
- The **profile level** (all NEFFs together) has the window of the export's ``Summary``: the
  first instruction's start to the last one's end; its figures are compared with the
  ``Summary`` row, and each one more than 0.5 % apart (or absent on one side) is a mismatch.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.errors import UsageError
from trace_analyzer.model.device import DeviceProfile, DeviceRun
from trace_analyzer.questions.engines import tables as t
from trace_analyzer.questions.engines.hints import device_hints
from trace_analyzer.questions.engines.ladder import ladder
from trace_analyzer.questions.engines.roofline import (
    Peaks,
    compared,
    peaks_of,
    roofline,
    utilisation,
)


@dataclass(frozen=True, repr=False)
class EnginesResult(RunResult):
    """The engines of every device profile under one path (docs/device.md):

    ``profiles`` (one row per profile: peaks, ridge, the profile-level utilisation),
    ``neffs`` (per profile and NEFF, all cores: window, FLOPs, bytes, MFU/HFU/MBU, roofline),
    ``cores`` (per NEFF and core: window, DMA, throttling, FLOPs and bytes, short TensorEngine
    gaps), ``engines`` (per NEFF, core and engine), ``tops`` (the opcodes, HLO ops and NKI
    source locations by time, the first ``top`` of each or, None, all of them), ``roofline``
    (each NEFF and its HLO ops placed on it, as many), ``comparison``
    (ours against the export's ``Summary``), ``ladder`` (per NEFF its bounds ladder and the
    speed-up each rung leaves: ladder.py); ``hints``, ``mismatches``, ``unexported`` (the
    NEFF/NTFF pairs without an export, with the command exporting each) and ``notes``."""

    root: str
    top: int | None
    profiles: pl.DataFrame
    neffs: pl.DataFrame
    cores: pl.DataFrame
    engines: pl.DataFrame
    tops: pl.DataFrame
    roofline: pl.DataFrame
    comparison: pl.DataFrame
    ladder: pl.DataFrame = field(default_factory=pl.DataFrame)
    hints: tuple[dict[str, Any], ...] = ()
    mismatches: tuple[str, ...] = ()
    unexported: tuple[dict[str, str | None], ...] = ()
    notes: tuple[str, ...] = ()

    csv_table = "engines"

    def to_json(self) -> dict[str, Any]:
        frames = (
            "profiles", "neffs", "cores", "engines", "tops", "roofline", "comparison", "ladder",
        )  # fmt: skip
        return {
            "root": self.root,
            "top": self.top,
            **{k: getattr(self, k).to_dicts() for k in frames},
            "hints": list(self.hints),
            "mismatches": list(self.mismatches),
            "unexported": list(self.unexported),
            "notes": list(self.notes),
        }

    def main_frame(self) -> pl.DataFrame:
        return self.engines

    def summary_rows(self) -> list[tuple[str, object]]:
        return [
            ("path", self.root),
            ("device profiles", self.profiles.height),
            ("NEFFs", self.neffs.height),
            ("hints", len(self.hints)),
            ("mismatches with Summary", len(self.mismatches)),
            ("pairs not exported", len(self.unexported)),
        ]

    def __repr__(self) -> str:
        return frame_repr(
            "EnginesResult", root=self.root, profiles=self.profiles, neffs=self.neffs,
            engines=self.engines,
        )  # fmt: skip


def engines(run: DeviceRun, *, top: int | None = None, neff: str | None = None) -> EnginesResult:
    """Return the engines, DMA, utilisation and roofline of every device profile of ``run``
    (``readers.device_profile.load_device``), per NEFF and physical core. ``top``: how many
    opcodes, HLO ops and NKI source locations per NEFF and core (and HLO ops on the
    roofline), all of them when None (what `traceana engines` writes as JSON; its text shows
    its ``--top``); ``neff``: only the NEFFs this glob matches (a UsageError naming them when none
    does; the profile-level figures and the Summary comparison keep every NEFF)."""
    if neff is not None:
        _check_glob(run, neff)
    parts = [_profile(p, top, neff) for p in run.profiles]
    frames = {}
    for key in ("profiles", "neffs", "cores", "engines", "tops", "roofline", "comparison"):
        got = [p[key] for p in parts if p[key].height]
        whole = pl.concat(got, how="diagonal_relaxed") if got else pl.DataFrame()
        frames[key] = whole.select("profile", pl.exclude("profile")) if got else whole
    notes = [f"{p.name}: {n}" for p in run.profiles for n in p.notes]
    rungs = ladder(frames["neffs"], frames["cores"], frames["engines"], frames["profiles"])
    return EnginesResult(
        root=str(run.root),
        top=top,
        **frames,
        ladder=rungs,
        hints=tuple(h for p in parts for h in p["hints"]),
        mismatches=tuple(m for p in parts for m in p["mismatches"]),
        unexported=tuple(run.unexported),
        notes=tuple(notes),
    )


def neff_names(run: DeviceRun) -> list[str]:
    """Return the NEFF names of every profile of ``run`` (a null NEFF as ``UNKNOWN``)."""
    names = {n or t.UNKNOWN for p in run.profiles for n in p.instructions["neff"].to_list()}
    return sorted(names)


def _check_glob(run: DeviceRun, glob: str) -> None:
    names = neff_names(run)
    if not any(fnmatch.fnmatchcase(n, glob) for n in names):
        raise UsageError(
            f"no NEFF matches {{param}} {glob!r}; the NEFFs: {', '.join(names) or 'none'}",
            param="neff",
        )


def _filled(p: DeviceProfile) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The instructions, DMA and executions of ``p`` with ``neff`` filled."""
    fill = pl.col("neff").fill_null(t.UNKNOWN)
    return (
        p.instructions.with_columns(fill),
        p.dma.with_columns(fill),
        p.executions.with_columns(fill),
    )


def _profile(p: DeviceProfile, top: int | None, glob: str | None) -> dict[str, Any]:
    """Every table of one device profile (``glob``: only the NEFFs it matches)."""
    ins, dma, execs = _filled(p)
    peaks = peaks_of(p.metadata, p.missing)
    absent = set(p.absent.get("Instruction", ()))  # the export lacks them: sums unknown
    overall = _overall(p, ins, dma, peaks, absent)
    if glob is not None:
        keep = [n for n in ins["neff"].unique().to_list() if fnmatch.fnmatchcase(n, glob)]
        kept = pl.col("neff").is_in(keep)
        ins, dma, execs = ins.filter(kept), dma.filter(kept), execs.filter(kept)
    win = t.windows(ins, execs)
    has_active = "ActiveTime" not in p.missing
    active = t.placed(p.active, "start_ns", ins, execs, every=True) if has_active else None
    work = ins.filter(~pl.col("wait"))
    cores = _cores(p, ins, dma, execs, win, absent)
    neffs = _neffs(ins, execs, peaks, absent)
    named = {"profile": pl.lit(p.name, pl.String)}
    comparison = compared(overall, p.summary)
    return {
        "profiles": pl.DataFrame([_profile_row(p, overall, peaks)]),
        "neffs": neffs.with_columns(**named),
        "cores": cores.with_columns(**named),
        "engines": t.engine_rows(ins, active, win).with_columns(**named),
        "tops": t.tops(work, top).with_columns(**named),
        "roofline": _roofline(work, neffs, peaks, absent, top).with_columns(**named),
        "comparison": pl.DataFrame(comparison).with_columns(**named),
        "hints": device_hints(cores.with_columns(**named).to_dicts()),
        "mismatches": [_mismatch(p.name, r, peaks) for r in comparison if r["mismatch"]],
    }


def _cores(
    p: DeviceProfile,
    ins: pl.DataFrame,
    dma: pl.DataFrame,
    execs: pl.DataFrame,
    win: pl.DataFrame,
    absent: set[str],
) -> pl.DataFrame:
    """Per NEFF and core: window, executions, instructions, DMA, throttling, FLOPs and bytes,
    short TensorEngine gaps."""
    work = ins.filter(~pl.col("wait"))
    counts = work.group_by(t.CORE).agg(instructions=pl.len().cast(pl.Int64))
    table = win.join(counts, on=t.CORE, how="left").join(
        t.sums(ins, t.CORE, absent), on=t.CORE, how="left"
    )
    table = table.join(t.dma_rows(dma, t.CORE), on=t.CORE, how="left")
    table = table.join(t.short_gaps(work), on=t.CORE, how="left")
    if "Throttle" in p.missing:
        table = table.with_columns(throttle_ns=pl.lit(None, pl.Int64))
    else:
        thr = t.placed(p.throttle, "timestamp_ns", ins, execs)
        per = thr.group_by(t.CORE).agg(throttle_ns=pl.col("duration_ns").sum())
        table = table.join(per, on=t.CORE, how="left").with_columns(
            pl.col("throttle_ns").fill_null(0)
        )
    zero = ["instructions", "dma_count", "dma_bytes", "dma_active_ns", "short_gaps"]
    return table.with_columns(pl.col(zero).fill_null(0)).sort(t.CORE)


def _neffs(ins: pl.DataFrame, execs: pl.DataFrame, peaks: Peaks, absent: set[str]) -> pl.DataFrame:
    """Per NEFF, all cores: window (its executions, else its instructions' span), FLOPs,
    bytes, MFU/HFU/MBU and its place on the roofline."""
    spans = ins.group_by("neff").agg(
        span_ns=pl.col("end_ns").max() - pl.col("start_ns").min(),
        pcores=pl.col("pcore").n_unique().cast(pl.Int64),
    )
    ran = execs.group_by("neff").agg(
        exec_ns=(pl.col("end_ns") - pl.col("start_ns")).sum(), executions=pl.len().cast(pl.Int64)
    )
    table = (
        spans.join(ran, on="neff", how="left")
        .join(t.sums(ins, ["neff"], absent), on="neff", how="left")
        .with_columns(window_ns=pl.coalesce("exec_ns", "span_ns"))
        .drop("exec_ns", "span_ns")
        .sort("neff")
    )
    rows = [
        {**r, **utilisation(r["model_flops"], r["hardware_flops"], r["hbm_bytes"],
                            r["window_ns"], peaks)}
        for r in table.to_dicts()
    ]  # fmt: skip
    return pl.DataFrame(rows, infer_schema_length=None) if rows else table


def _roofline(
    work: pl.DataFrame, neffs: pl.DataFrame, peaks: Peaks, absent: set[str], top: int | None
) -> pl.DataFrame:
    """Each NEFF, then its ``top`` HLO ops (None: all) by instruction time, on the roofline:
    FLOPs, HBM bytes, time (a NEFF's window; an op's: the union of its instructions, all
    engines and cores), intensity, achieved and roof FLOP/s, verdict, headroom."""
    rows = [
        {"neff": r["neff"], "level": "neff", "name": r["neff"], "flops": r["model_flops"],
         "hbm_bytes": r["hbm_bytes"], "time_ns": r["window_ns"]}
        for r in neffs.to_dicts()
    ]  # fmt: skip
    ops = work.filter(pl.col("hlo_name").is_not_null())
    keys = ["neff", "hlo_name"]
    ranked = (
        t.sums(ops, keys, absent)
        .join(ops.group_by(keys).agg(ns=pl.col("duration_ns").sum()), on=keys)
        .join(t.covered(ops, keys), on=keys)
        .sort("ns", "hlo_name", descending=[True, False])
        .group_by("neff", maintain_order=True)
        .head(t.first(top, ops))
    )
    for r in ranked.sort("neff", maintain_order=True).to_dicts():
        rows.append(
            {"neff": r["neff"], "level": "hlo", "name": r["hlo_name"], "flops": r["model_flops"],
             "hbm_bytes": r["hbm_bytes"], "time_ns": r["covered_ns"]}
        )  # fmt: skip
    placed = [{**r, **roofline(r["flops"], r["hbm_bytes"], r["time_ns"], peaks)} for r in rows]
    return pl.DataFrame(placed, infer_schema_length=None)


def _overall(
    p: DeviceProfile, ins: pl.DataFrame, dma: pl.DataFrame, peaks: Peaks, absent: set[str]
) -> dict[str, Any]:
    """The profile-level figures (all NEFFs and cores): what ``Summary`` holds (module doc)."""
    span = ins.select(pl.col("end_ns").max() - pl.col("start_ns").min()).item()
    window = None if span is None else int(span)
    every = ins.with_columns(_all=pl.lit(0))
    sums = t.sums(every, ["_all"], absent).to_dicts()
    s = sums[0] if sums else dict.fromkeys(("model_flops", "hardware_flops", "transpose_flops",
                                            "hbm_bytes", "spill_bytes"))  # fmt: skip
    one = {c: None if c in absent or ins.is_empty() else int(ins[c].fill_null(0).sum())
           for c in ("hbm_read_bytes", "hbm_write_bytes", "spill_save_bytes",
                     "spill_reload_bytes")}  # fmt: skip
    d = t.dma_rows(dma.with_columns(_all=pl.lit(0)), ["_all"]).to_dicts()
    dmas = d[0] if d else {"dma_count": 0, "dma_bytes": 0, "dma_active_ns": 0}
    return {
        "window_ns": window, **s, **one,
        "pcores": ins["pcore"].n_unique(),
        "dma_active_ns": dmas["dma_active_ns"], "dma_count": dmas["dma_count"],
        "dma_bytes": dmas["dma_bytes"], "dma_mean_bytes": dmas.get("dma_mean_bytes"),
        "ridge": peaks.ridge,
        "engines": _overall_engines(p, ins, window),
        **utilisation(s["model_flops"], s["hardware_flops"], s["hbm_bytes"], window, peaks),
    }  # fmt: skip


def _overall_engines(p: DeviceProfile, ins: pl.DataFrame, window: int | None) -> dict[str, Any]:
    """Per engine, over the whole profile: active ns (the union of its ActiveTime over every
    physical core: when any core's engine was busy), active % (of the window), instruction
    ns and count (as Explorer's Summary measures them: docs/device.md)."""
    work = ins.filter(~pl.col("wait"))
    has_active = "ActiveTime" not in p.missing
    busy = t.covered(p.active, ["engine"])
    out = {}
    for e in sorted({*_engines_in(ins), *_engines_in(p.active), *("tensor", "vector", "scalar",
                                                              "gpsimd", "sync")}):  # fmt: skip
        mine = work.filter(pl.col("engine") == e)
        active = int(busy.filter(pl.col("engine") == e)["covered_ns"].sum())
        out[e] = {
            "active_ns": active if has_active else None,
            "active_pct": 100 * active / window if has_active and window else None,
            "instruction_ns": int(mine["duration_ns"].sum()),
            "instructions": mine.height,
        }
    return out


def _engines_in(frame: pl.DataFrame) -> list[str]:
    """The engines named in ``frame``."""
    return [e for e in frame["engine"].unique().to_list() if e is not None]


def _profile_row(p: DeviceProfile, o: dict[str, Any], peaks: Peaks) -> dict[str, Any]:
    keep = ("window_ns", "pcores", "model_flops", "hardware_flops", "transpose_flops",
            "hbm_bytes", "spill_bytes", "mfu_pct", "hfu_pct", "mbu_pct", "intensity",
            "achieved_flops", "roof_flops", "verdict", "headroom")  # fmt: skip
    return {
        "profile": p.name, "root": str(p.root), "schema_version": p.schema_version,
        "peak_flops": peaks.flops, "hbm_bw": peaks.hbm_bw, "ridge": peaks.ridge,
        "no_peaks": peaks.why, **{k: o[k] for k in keep},
        "summary": p.summary is not None, "missing": list(p.missing),
    }  # fmt: skip


def _mismatch(name: str, r: dict[str, Any], peaks: Peaks) -> str:
    """One line saying how ours and the export's figure differ."""
    what = f"{name}: {r['figure']} ({r['summary_field']})"
    if r["export"] is None:
        return f"{what}: ours {r['ours']:.6g} {r['unit']}, absent from the export's Summary"
    if r["ours"] is None:
        why = f" ({peaks.why})" if peaks.why else ""
        return f"{what}: the export's {r['export']:.6g} {r['unit']}, not computed here{why}"
    return (
        f"{what}: ours {r['ours']:.6g} {r['unit']}, the export's {r['export']:.6g} "
        f"({r['difference_pct']:.2f} % apart)"
    )
