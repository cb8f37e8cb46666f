"""The text and Markdown layout of `traceana engines HEAD --base BASE`
(questions/engines/diff.py): the gates first, then each side's window and MFU/HFU/MBU over all
its profiles, the NEFFs on both sides (window, utilisation, verdict), each one's engines and
DMA base against head, and the NEFFs on one side only."""

from __future__ import annotations

from typing import Any

import polars as pl

from trace_analyzer.numbers import (
    DASH,
    change,
    data_size,
    duration,
    number,
    percent,
    signed_percent,
)
from trace_analyzer.questions.engines.diff import GATED_ENGINES, EnginesDiffResult, unmatched
from trace_analyzer.render.blocks import (
    MARKDOWN,
    Block,
    Items,
    Style,
    Table,
    heading,
    num_col,
    text_col,
)
from trace_analyzer.render.safe import shown
from trace_analyzer.render.view import View


def _pp(v: float | None) -> str:
    """A change of a percentage, in percentage points: ``+0.25 pp``."""
    if v is None:
        return DASH
    return ("+" if v > 0 else "") + f"{percent(v).removesuffix(' %')} pp"


def _arrow(base: str, head: str) -> str:
    return base if base == head else f"{base} → {head}"


def _engines_diff(result: EnginesDiffResult, style: Style) -> list[Block]:
    """Return the blocks of one comparison of two device profiles."""
    title = f"engines: {shown(result.head, style)} against {shown(result.base, style)}"
    blocks: list[Block] = [heading(title, style), ""]
    if result.failed:
        text = shown("FAILED " + "; ".join(result.failed), style)
        blocks += [f"**{text}**" if style == MARKDOWN else text, ""]
    if result.gate_notes:
        blocks += [*(shown(f"Gate: {n}.", style) for n in result.gate_notes), ""]
    blocks += [_overall(result.overall), ""]
    if result.whole is not None:
        blocks += [shown(_whole(result), style), ""]
    common = _where(result.neffs, status="common")
    if common.height:
        blocks += [_neffs(common), ""]
    else:
        blocks += ["no NEFF matched: nothing compared NEFF by NEFF", ""]
    for n in common.iter_rows(named=True):
        blocks += _neff(n, _where(result.engines, neff=n["neff"]), style)
    for title, names in (("NEFFs added in head", result.added),
                         ("NEFFs removed in head", result.removed)):  # fmt: skip
        if names:
            blocks += [Items(title, [shown(n, style) for n in names], noun="NEFFs"), ""]
    if result.notes:
        blocks.append(Items("notes", [shown(n, style) for n in result.notes], noun="notes"))
    return blocks


def _where(frame: pl.DataFrame, **where: str) -> pl.DataFrame:
    """The rows of ``frame`` whose columns hold ``where`` (none when it has no rows: a table
    made of no rows has no columns)."""
    return frame.filter(**where) if frame.height else frame


def _overall(o: dict[str, Any]) -> str:
    uses = "; ".join(
        f"{k.upper()} {_arrow(percent(o[f'{k}_pct_base']), percent(o[f'{k}_pct_head']))} "
        f"({_pp(o[f'{k}_pct_delta'])})"
        for k in ("mfu", "hfu", "mbu")
    )
    return (
        f"all profiles: window {duration(o['window_ns_base'])} → {duration(o['window_ns_head'])} "
        f"({change(o['window_ns_delta'])}, {signed_percent(o['window_pct_delta'])}); {uses}"
    )


def _whole(result: EnginesDiffResult) -> str:
    """The whole profiles compared, as the gate compares them when a NEFF is unmatched."""
    w = result.whole or {}
    engines = "; ".join(
        f"{e} active {signed_percent(w[f'{e}_active_pct_delta'])}" for e in GATED_ENGINES
    )
    return (
        f"NEFFs unmatched ({unmatched(result)}): the whole profiles compared: window "
        f"{duration(w['window_ns_base'])} → {duration(w['window_ns_head'])} "
        f"({signed_percent(w['window_pct_delta'])}); {engines}; DMA active "
        f"{signed_percent(w['dma_active_pct_delta'])}"
    )


def _matched(r: dict[str, Any]) -> str:
    """How a pair was matched: ``name``, or ``op: <base's NEFF>`` when renamed."""
    how = r.get("matched_by") or "name"
    return how if r.get("neff_base") in (None, r["neff"]) else f"{how}: {r['neff_base']}"


def _neffs(rows: pl.DataFrame) -> Table:
    cells = [
        [r["neff"], _matched(r), duration(r["window_ns_base"]), duration(r["window_ns_head"]),
         change(r["window_ns_delta"]), signed_percent(r["window_pct_delta"]),
         _pp(r["mfu_pct_delta"]), _pp(r["hfu_pct_delta"]), _pp(r["mbu_pct_delta"]),
         _arrow(r["verdict_base"] or DASH, r["verdict_head"] or DASH)]
        for r in rows.iter_rows(named=True)
    ]  # fmt: skip
    columns = (
        text_col("NEFF", cut=24), text_col("matched by", cut=24, drop=5), num_col("base"),
        num_col("head"), num_col("change"), num_col("change %"), num_col("MFU", drop=1),
        num_col("HFU", drop=3), num_col("MBU", drop=2), text_col("verdict", drop=4),
    )  # fmt: skip
    return Table("NEFFs matched: window (head − base)", columns, cells)


def _neff(n: dict[str, Any], engines: pl.DataFrame, style: Style) -> list[Block]:
    intensity = _arrow(number(n["intensity_base"]), number(n["intensity_head"]))
    dma = (
        f"DMA active {duration(n['dma_active_ns_base'])} → {duration(n['dma_active_ns_head'])} "
        f"({signed_percent(n['dma_active_pct_delta'])}), bytes "
        f"{data_size(n['dma_bytes_base'])} → {data_size(n['dma_bytes_head'])}; intensity "
        f"{intensity} FLOP/byte"
    )
    cells = [
        [e["engine"], duration(e["active_ns_base"]), duration(e["active_ns_head"]),
         signed_percent(e["active_pct_delta"]), duration(e["instruction_ns_base"]),
         duration(e["instruction_ns_head"]), change(e["instruction_ns_delta"]),
         signed_percent(e["instruction_pct_delta"])]
        for e in engines.iter_rows(named=True)
    ]  # fmt: skip
    columns = (
        text_col("engine"), num_col("active base"), num_col("active head"),
        num_col("active %"), num_col("instr. base", drop=2), num_col("instr. head", drop=2),
        num_col("instr. change", drop=1), num_col("instr. %"),
    )  # fmt: skip
    title = "engines, summed over cores (active: ActiveTime; instr.: instruction time)"
    renamed = "" if n.get("neff_base") in (None, n["neff"]) else f" (base {n['neff_base']})"
    return [
        heading(f"NEFF {shown(n['neff'] + renamed, style)}", style, 3),
        "",
        dma,
        "",
        Table(title, columns, cells),
        "",
    ]


def engines_diff_layout(result: EnginesDiffResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    return _engines_diff(result, style)
