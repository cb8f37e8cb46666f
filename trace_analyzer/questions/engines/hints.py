"""The next steps below the gaps: hints from a device profile, per NEFF and physical core
(docs/device.md, "Hints"), worded with their numbers as questions/gaps/hints.py words the gaps'.

- ``small_dma``: the mean DMA transfer is below 4 KiB, or most transfers are;
- ``spill``: bytes spilled from SBUF to HBM and reloaded (spill_save + spill_reload) > 0;
- ``transpose``: transpose FLOPs over 10 % of the hardware FLOPs (all the TensorEngine did);
- ``tensor_gaps``: gaps between consecutive TensorEngine instructions shorter than the
  throttle ramp (3 µs on Trn2): each lets the engine throttle down and ramp up again.
"""

from __future__ import annotations

from typing import Any

from trace_analyzer.numbers import count, data_size, duration, percent, plural
from trace_analyzer.questions.engines.tables import RAMP_NS, SMALL_DMA_BYTES

TRANSPOSE_PCT = 10.0  # transposes over this % of the hardware FLOPs: a hint
MOST_PCT = 50.0  # "most transfers": over this % of them below SMALL_DMA_BYTES


def device_hints(cores: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the hints of each NEFF and core (``cores``: the rows of the result's ``cores``
    table), each ``{"profile", "neff", "pcore", "kind", "text", "figure"}``."""
    out = []
    for c in cores:
        where = {"profile": c["profile"], "neff": c["neff"], "pcore": c["pcore"]}
        for kind, text, figure in _hints_of(c):
            out.append({**where, "kind": kind, "text": text, "figure": figure})
    return out


def _hints_of(c: dict[str, Any]) -> list[tuple[str, str, float]]:
    """The (kind, text, figure) of every hint one NEFF and core has."""
    found = []
    n, mean, small = c.get("dma_count") or 0, c.get("dma_mean_bytes"), c.get("dma_small_pct")
    if n and mean is not None and (mean < SMALL_DMA_BYTES or (small or 0) > MOST_PCT):
        found.append(
            (
                "small_dma",
                f"small DMA transfers: {count(n)} moved {data_size(c['dma_bytes'] or 0)}, "
                f"{data_size(mean)} each on average, {percent(small)} of them under "
                f"{data_size(SMALL_DMA_BYTES)}: each pays the DMA's fixed cost; move larger "
                "tiles, contiguous in memory, in fewer transfers",
                float(mean),
            )
        )
    spill = c.get("spill_bytes") or 0
    if spill > 0:
        found.append(
            (
                "spill",
                f"{data_size(spill)} spilled from SBUF to HBM and reloaded: the working set "
                "does not fit on chip; smaller tiles or fewer live tensors keep it there",
                float(spill),
            )
        )
    done, transpose = c.get("hardware_flops") or 0, c.get("transpose_flops") or 0
    if done > 0 and 100 * transpose / done > TRANSPOSE_PCT:
        share = 100 * transpose / done
        found.append(
            (
                "transpose",
                f"transposes are {percent(share)} of the FLOPs ({count(transpose)} of "
                f"{count(done)}): a layout that needs none (or one transpose, by DMA) "
                "gives the TensorEngine that time back",
                share,
            )
        )
    gaps = c.get("short_gaps") or 0
    if gaps > 0:
        found.append(
            (
                "tensor_gaps",
                f"the TensorEngine idles in {plural(gaps, 'gap')} under {duration(RAMP_NS)}: "
                "it throttles down and ramps again; keep it fed",
                float(gaps),
            )
        )
    return found
