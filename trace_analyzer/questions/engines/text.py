"""The text and Markdown layout of `traceana engines` (questions/engines/analysis.py): per
device profile and NEFF, its utilisation and roofline line, the engines of each core, the DMA,
the top opcodes, HLO ops and NKI source lines, the HLO ops on the roofline and the hints; then
the export's Summary beside traceana's figures, mismatches marked; then the pairs not exported."""

from __future__ import annotations

from typing import Any

import polars as pl

from trace_analyzer.numbers import DASH, count, data_size, duration, number, percent
from trace_analyzer.questions.engines.analysis import EnginesResult
from trace_analyzer.render.blocks import (
    TOP_MORE,
    Block,
    Items,
    Style,
    Table,
    heading,
    num_col,
    plural,
    text_col,
)
from trace_analyzer.render.safe import plain, shown
from trace_analyzer.render.view import View

SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _si(value: float | None, unit: str) -> str:
    """``8.19 TFLOP/s``, ``409.6 GB/s``: a rate or count in SI prefixes (None: a dash)."""
    if value is None:
        return DASH
    for size, prefix in SI:
        if abs(value) >= size:
            return f"{number(round(value / size, 2))} {prefix}{unit}"
    return f"{number(round(value, 2))} {unit}"


def _of(frame: pl.DataFrame, **where: str) -> pl.DataFrame:
    """The rows of ``frame`` whose columns hold ``where`` (none when it lacks one of them: a
    table no profile has rows in has no columns)."""
    if not all(k in frame.columns for k in where):
        return frame.clear()
    return frame.filter(**where)


def _engines_run(result: EnginesResult, style: Style, top: int) -> list[Block]:
    """Return the blocks of one path's device profiles."""
    blocks: list[Block] = [heading(f"engines: {shown(result.root, style)}", style), ""]
    if result.profiles.is_empty():
        blocks.append("no device-profile export under this path")
    if result.notes:
        blocks += [Items("notes", [shown(n, style) for n in result.notes], noun="notes"), ""]
    for p in result.profiles.iter_rows(named=True):
        blocks += _profile(result, p, style, top)
    commands = [plain(c) for u in result.unexported if (c := u.get("command"))]
    if commands:
        title = f"{plural(len(commands), 'NEFF/NTFF pair')} not exported: export it with"
        blocks.append(Items(title, commands, noun="commands", code=True))
    return blocks


def _profile(result: EnginesResult, p: dict[str, Any], style: Style, top: int) -> list[Block]:
    name = p["profile"]
    blocks: list[Block] = [heading(f"device profile {shown(name, style)}", style, 3), ""]
    peaks = (
        f"peak {_si(p['peak_flops'], 'FLOP/s')}, HBM {_si(p['hbm_bw'], 'B/s')}, ridge "
        f"{number(p['ridge'])} FLOP/byte"
        if p["no_peaks"] is None
        else f"no peaks: {shown(p['no_peaks'], style)}"
    )
    missing = f"; tables missing: {', '.join(p['missing'])}" if p["missing"] else ""
    schema = f"schema {shown(p['schema_version'], style)}; " if p["schema_version"] else ""
    blocks += [f"{schema}{peaks}{missing}", "", _use_line("all NEFFs", p), ""]
    for n in _of(result.neffs, profile=name).iter_rows(named=True):
        blocks += _neff(result, name, n, style, top)
    blocks += _comparison(_of(result.comparison, profile=name), p["summary"])
    return blocks


def _use_line(what: str, r: dict[str, Any]) -> str:
    """MFU, HFU, MBU, intensity and the roofline verdict of a NEFF or a whole profile."""
    verdict = r["verdict"] or "not placed on the roofline"
    head = (
        f", {number(r['headroom'])}× under the roof ({_si(r['roof_flops'], 'FLOP/s')})"
        if r["headroom"] is not None
        else ""
    )
    return (
        f"{what}: window {duration(r['window_ns'])}; MFU {percent(r['mfu_pct'])}, HFU "
        f"{percent(r['hfu_pct'])}, MBU {percent(r['mbu_pct'])}; intensity "
        f"{number(r['intensity'])} FLOP/byte; {verdict}, achieved "
        f"{_si(r['achieved_flops'], 'FLOP/s')}{head}"
    )


def _neff(
    result: EnginesResult, profile: str, n: dict[str, Any], style: Style, top: int
) -> list[Block]:
    where = {"profile": profile, "neff": n["neff"]}
    ran = "" if n["executions"] is None else f" ({plural(n['executions'], 'execution')})"
    blocks: list[Block] = [
        heading(f"NEFF {shown(n['neff'], style)}{ran}", style, 3),
        "",
        _use_line("all cores", n),
        "",
        _engines(_of(result.engines, **where)),
        "",
    ]
    blocks += [_dma_line(c) for c in _of(result.cores, **where).iter_rows(named=True)]
    tops = _of(result.tops, **where)
    for kind, title in (("opcode", "opcode"), ("hlo", "HLO op"), ("nki", "NKI source")):
        blocks += ["", _tops(_of(tops, kind=kind), title, top)]
    blocks += ["", _roofline(_of(result.roofline, level="hlo", **where), top)]
    if result.ladder.height:
        blocks += ["", _ladder(_of(result.ladder, **where))]
    hints = [
        shown(h["text"], style)
        for h in result.hints
        if all(h.get(k) == v for k, v in where.items())
    ]
    if hints:
        blocks += ["", Items("hints", hints, noun="hints")]
    return [*blocks, ""]


# The bounds ladder's rungs, in the order AWS's NKI guidance climbs them (ladder.py).
RUNG_NAMES = {
    "dma_ns": "memory-bound at the measured DMA active time",
    "hbm_peak_ns": "memory-bound at peak HBM bandwidth",
    "hbm_no_spill_ns": "... with the spills removed",
    "tensor_ns": "compute-bound at the TensorEngine's active time",
    "flops_peak_ns": "compute-bound at peak FLOPs",
    "flops_no_transpose_ns": "... without the transposes",
    "pipeline_ns": "a perfect pipeline (the busiest engine or DMA)",
}


def _ladder(rows: pl.DataFrame) -> Table:
    """The NEFF's bounds ladder: each rung's time and the speed-up it leaves."""
    r = rows.row(0, named=True)
    cells = [
        [name, duration(r[k]), DASH if r[k.removesuffix("_ns") + "_speedup"] is None
         else f"{number(r[k.removesuffix('_ns') + '_speedup'])}×"]
        for k, name in RUNG_NAMES.items()
    ]  # fmt: skip
    title = f"bounds ladder (measured {duration(r['measured_ns'])}): what each step leaves to gain"
    return Table(title, (text_col("rung", cut=30), num_col("bound"), num_col("speed-up")), cells)


def _engines(rows: pl.DataFrame) -> Table:
    cells = [
        [
            count(r["pcore"]), r["engine"], duration(r["active_ns"]), percent(r["active_pct"]),
            count(r["instructions"]), duration(r["instruction_ns"]), duration(r["idle_ns"]),
            f"{duration(r['wait_ns'])} ({count(r['waits'])})",
        ]
        for r in rows.iter_rows(named=True)
    ]  # fmt: skip
    columns = (
        num_col("core"), text_col("engine"), num_col("active"), num_col("active %"),
        num_col("instructions", drop=3), num_col("instruction time", drop=2),
        num_col("idle between"), num_col("waits", drop=1),
    )  # fmt: skip
    return Table("engines (active: ActiveTime in the window; waits: semaphore)", columns, cells)


def _dma_line(c: dict[str, Any]) -> str:
    small = "" if c["dma_small_pct"] is None else f", {percent(c['dma_small_pct'])} under 4 KiB"
    throttle = "" if c["throttle_ns"] is None else f"; throttled {duration(c['throttle_ns'])}"
    return (
        f"core {c['pcore']}: DMA active {duration(c['dma_active_ns'])}, "
        f"{plural(c['dma_count'], 'transfer')}, {data_size(c['dma_bytes'])}, mean "
        f"{data_size(c['dma_mean_bytes'])}{small}{throttle}; "
        f"spilled {data_size(c['spill_bytes'])}; "
        f"{plural(c['short_gaps'], 'TensorEngine gap')} under 3 µs"
    )


def _tops(every: pl.DataFrame, title: str, top: int) -> Table:
    """The first ``top`` of each core's rows (``--top``; the JSON has them all)."""
    opcode = title == "opcode"
    rows = every.group_by("pcore", maintain_order=True).head(top) if every.height else every
    cells = [
        [count(r["pcore"]), *([r["engine"]] if opcode else []), r["name"], count(r["count"]),
         duration(r["ns"])]
        for r in rows.iter_rows(named=True)
    ]  # fmt: skip
    columns = (
        num_col("core"), *((text_col("engine"),) if opcode else ()),
        text_col(title, cut=24), num_col("count"), num_col("time"),
    )  # fmt: skip
    noun = {"opcode": "opcodes", "HLO op": "HLO ops"}.get(title, "NKI source lines")
    title = f"top {top} by {title} (instruction time)"
    return Table(title, columns, cells, total=every.height, noun=noun, more=TOP_MORE)


def _roofline(every: pl.DataFrame, top: int) -> Table:
    rows = every.head(top)
    cells = [
        [r["name"], _si(r["flops"], "FLOP"), data_size(r["hbm_bytes"]), duration(r["time_ns"]),
         number(r["intensity"]), _si(r["achieved_flops"], "FLOP/s"), r["verdict"] or DASH,
         DASH if r["headroom"] is None else f"{number(r['headroom'])}×"]
        for r in rows.iter_rows(named=True)
    ]  # fmt: skip
    columns = (
        text_col("HLO op", cut=24), num_col("FLOPs"), num_col("HBM", drop=2),
        num_col("time"), num_col("FLOP/byte", drop=1), num_col("achieved", drop=3),
        text_col("verdict"), num_col("headroom"),
    )  # fmt: skip
    title = "the top HLO ops on the roofline"
    return Table(title, columns, cells, total=every.height, noun="HLO ops", more=TOP_MORE)


def _value(v: float | None, unit: str) -> str:
    if v is None:
        return "absent"
    if unit == "ns":
        return duration(v)
    if unit == "%":
        return percent(v)
    return data_size(v) if unit == "byte" else number(v)


def _comparison(table: pl.DataFrame, has_summary: bool) -> list[Block]:
    if not has_summary:
        return ["the export has no Summary table: nothing to compare", ""]
    rows = list(table.iter_rows(named=True))
    bad = sum(r["mismatch"] for r in rows)
    cells = [
        [r["figure"], _value(r["ours"], r["unit"]), _value(r["export"], r["unit"]),
         percent(r["difference_pct"]), "MISMATCH" if r["mismatch"] else "ok"]
        for r in rows
    ]  # fmt: skip
    columns = (
        text_col("figure", cut=20), num_col("traceana"), num_col("Summary"), num_col("apart"),
        text_col("match"),
    )  # fmt: skip
    title = f"traceana against the export's Summary ({plural(bad, 'mismatch', 'mismatches')})"
    return [Table(title, columns, cells), ""]


def engines_layout(result: EnginesResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    return _engines_run(result, style, view.top)
