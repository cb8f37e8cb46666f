"""The device's peaks and the roofline: MFU, HFU, MBU, arithmetic intensity, the ridge point,
each verdict and its headroom; and the comparison of traceana's profile-level figures with the
export's own ``Summary`` row (docs/device.md).

Formulas (ours: AWS publishes the field names, not how Explorer computes them):

- peak_flops (FLOP/s) = tensor_engine_num_rows × tensor_engine_num_cols × 2
  × tensor_engine_clock_freq [GHz] × 1e9 × num_physical_cores (``Metadata``);
- hbm_bw (bytes/s) = ``Metadata.hbm_ddr_bandwidth``; ridge = peak_flops / hbm_bw (FLOP/byte);
- with time_s = window ns / 1e9: MFU % = 100 × model_flops / (time_s × peak_flops), HFU % the
  same of hardware_flops, MBU % = 100 × hbm_bytes / (time_s × hbm_bw);
- intensity = model_flops / hbm_bytes (null without bytes); achieved = model_flops / time_s;
  roof = min(peak_flops, intensity × hbm_bw) (peak_flops without bytes); verdict
  ``memory-bound`` when intensity < ridge, else ``compute-bound``; headroom = roof / achieved
  (null when nothing was achieved).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

PEAK_FIELDS = (
    "tensor_engine_num_rows",
    "tensor_engine_num_cols",
    "tensor_engine_clock_freq",
    "num_physical_cores",
)
BW_FIELD = "hbm_ddr_bandwidth"
TOLERANCE_PCT = 0.5  # ours and the export's differ by more than this: a mismatch
SUMMARY_ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")


@dataclass(frozen=True)
class Peaks:
    """The device's peaks from ``Metadata``: FLOP/s and HBM bytes/s; ``why``: why they are
    None (no Metadata, or the fields it lacks)."""

    flops: float | None
    hbm_bw: float | None
    why: str | None = None

    @property
    def ridge(self) -> float | None:
        """The ridge point (FLOP/byte): peak FLOP/s over HBM bytes/s."""
        if self.flops is None or not self.hbm_bw:
            return None
        return self.flops / self.hbm_bw


def peaks_of(metadata: dict[str, Any], missing: tuple[str, ...] = ()) -> Peaks:
    """Return the peaks of a device profile from its ``Metadata`` row (module doc)."""
    if not metadata:
        table = "no Metadata table" if "Metadata" in missing or not missing else "Metadata empty"
        return Peaks(None, None, f"{table}: MFU, HFU, MBU and the roofline need its peaks")
    lacks = [f for f in (*PEAK_FIELDS, BW_FIELD) if _num(metadata.get(f)) is None]
    flops = None
    if not any(f in lacks for f in PEAK_FIELDS):
        rows, cols, ghz, cores = (float(metadata[f]) for f in PEAK_FIELDS)
        flops = rows * cols * 2 * ghz * 1e9 * cores
    bw = _num(metadata.get(BW_FIELD))
    why = f"Metadata lacks {', '.join(lacks)}" if lacks else None
    return Peaks(flops, bw, why)


def _num(v: object) -> float | None:
    """``v`` as a finite float, or None."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _pct(a: float | None, b: float | None) -> float | None:
    r = _div(a, b)
    return None if r is None else 100 * r


def utilisation(
    model: int | None, hardware: int | None, hbm: int | None, window_ns: int | None, p: Peaks
) -> dict[str, Any]:
    """Return MFU, HFU, MBU (%), intensity and the roofline of work that did ``model`` and
    ``hardware`` FLOPs and moved ``hbm`` bytes in ``window_ns`` (module doc)."""
    time_s = None if not window_ns else window_ns / 1e9
    cap_f = None if time_s is None or p.flops is None else time_s * p.flops
    cap_b = None if time_s is None or p.hbm_bw is None else time_s * p.hbm_bw
    return {
        "mfu_pct": _pct(model, cap_f),
        "hfu_pct": _pct(hardware, cap_f),
        "mbu_pct": _pct(hbm, cap_b),
        **roofline(model, hbm, window_ns, p),
    }


def roofline(flops: int | None, hbm: int | None, time_ns: int | None, p: Peaks) -> dict[str, Any]:
    """Return the place on the roofline of ``flops`` FLOPs moving ``hbm`` HBM bytes in
    ``time_ns``: intensity, achieved and roof (FLOP/s), verdict, headroom (module doc)."""
    intensity = _div(flops, hbm)
    achieved = None if flops is None or not time_ns else flops / (time_ns / 1e9)
    roof = verdict = None
    if p.flops is not None and p.hbm_bw is not None:
        roof = p.flops if intensity is None else min(p.flops, intensity * p.hbm_bw)
        ridge = p.ridge
        bound = intensity is not None and ridge is not None and intensity < ridge
        verdict = "memory-bound" if bound else "compute-bound"
    if flops is None or (intensity is None and not flops):
        verdict = None  # no FLOPs and no bytes: nowhere on the roofline
    return {
        "intensity": intensity,
        "achieved_flops": achieved,
        "roof_flops": roof,
        "verdict": verdict,
        "headroom": _div(roof, achieved),
    }


def compared(ours: dict[str, Any], summary: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Return one row per figure of the profile that the export's ``Summary`` also has:
    ``figure``, ``ours``, ``export`` (times in ns: Summary's seconds × 1e9), ``unit``,
    ``difference_pct`` and ``mismatch`` (more than ``TOLERANCE_PCT`` apart, or absent on one
    side). Figures absent on both sides are left out; no Summary: no rows."""
    if summary is None:
        return []
    rows = []
    for figure, (key, unit, ours_v) in _pairs(ours).items():
        theirs = _num(summary.get(key))
        if theirs is not None and unit == "ns":
            theirs *= 1e9
        if ours_v is None and theirs is None:
            continue
        diff = None
        if ours_v is not None and theirs is not None:
            big = max(abs(ours_v), abs(theirs))
            diff = 0.0 if big == 0 else 100 * abs(ours_v - theirs) / big
        rows.append(
            {
                "figure": figure,
                "summary_field": key,
                "ours": ours_v,
                "export": theirs,
                "unit": unit,
                "difference_pct": diff,
                "mismatch": diff is None or diff > TOLERANCE_PCT,
            }
        )
    return rows


def _pairs(o: dict[str, Any]) -> dict[str, tuple[str, str, float | None]]:
    """Each compared figure: its ``Summary`` field, unit and our value (from ``o``, the
    profile-level figures; ``o["engines"]``: per engine, its active, instruction time and
    count, active %)."""
    pairs: dict[str, tuple[str, str, float | None]] = {
        "total time": ("total_time", "ns", o["window_ns"]),
        "model FLOPs": ("model_flops", "FLOP", o["model_flops"]),
        "hardware FLOPs": ("hardware_flops", "FLOP", o["hardware_flops"]),
        "transpose FLOPs": ("transpose_flops", "FLOP", o["transpose_flops"]),
        "MFU": ("mfu_estimated_percent", "%", o["mfu_pct"]),
        "HFU": ("hfu_estimated_percent", "%", o["hfu_pct"]),
        "MBU": ("mbu_estimated_percent", "%", o["mbu_pct"]),
        "arithmetic intensity": ("mm_arithmetic_intensity", "FLOP/byte", o["intensity"]),
        "ridge point": ("peak_flops_bandwidth_ratio", "FLOP/byte", o["ridge"]),
        "HBM read": ("hbm_read_bytes", "byte", o["hbm_read_bytes"]),
        "HBM write": ("hbm_write_bytes", "byte", o["hbm_write_bytes"]),
        "spill save": ("spill_save_bytes", "byte", o["spill_save_bytes"]),
        "spill reload": ("spill_reload_bytes", "byte", o["spill_reload_bytes"]),
        "DMA active": ("dma_active_time", "ns", o["dma_active_ns"]),
        "DMA transfers": ("dma_transfer_count", "count", o["dma_count"]),
        "DMA bytes": ("dma_transfer_total_bytes", "byte", o["dma_bytes"]),
        "DMA mean transfer": ("dma_transfer_average_bytes", "byte", o["dma_mean_bytes"]),
    }
    for e in SUMMARY_ENGINES:
        f = o["engines"].get(e, {})
        pairs[f"{e} active"] = (f"{e}_engine_active_time", "ns", f.get("active_ns"))
        pairs[f"{e} active %"] = (f"{e}_engine_active_time_percent", "%", f.get("active_pct"))
        pairs[f"{e} instruction time"] = (
            f"{e}_engine_instruction_time",
            "ns",
            f.get("instruction_ns"),
        )
        pairs[f"{e} instructions"] = (
            f"{e}_engine_instruction_count",
            "count",
            f.get("instructions"),
        )
    return pairs
