"""The text and Markdown layout of `traceana kernels` (questions/kernels/analysis.py): the time per
kind
of work, then the kernels (Neuron: the NEFFs) by total device time, the first ``--top`` of
each rank."""

from __future__ import annotations

from typing import Any

from trace_analyzer.numbers import count, duration, percent
from trace_analyzer.questions.kernels.analysis import KernelsResult
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
from trace_analyzer.render.safe import shown
from trace_analyzer.render.text import as_doc
from trace_analyzer.render.view import View


def _owner(row: dict[str, Any]) -> str:
    """A row's rank, or its process when the run has no ranks."""
    return f"pid {row['pid']}" if row["rank"] is None else f"rank {row['rank']}"


def kernels_from_json(run: dict[str, Any], style: Style, view: View) -> list[Block]:
    """Return the blocks of one run's kernel breakdown."""
    kinds, rows = run["kinds"], run["kernels"]
    blocks: list[Block] = [heading(f"kernels: {shown(run['root'], style)}", style), ""]
    owners = list(dict.fromkeys(_owner(k) for k in kinds))
    work = sum(k["total_ns"] for k in kinds)
    pieces = sum(k["count"] for k in kinds)
    noun = (
        ("rank", "ranks") if all(k["rank"] is not None for k in kinds) else ("process", "processes")
    )
    step = "" if run["step"] is None else f" launched in ProfilerStep#{run['step']}"
    blocks.append(
        f"device work {duration(work)} in {plural(pieces, 'execution')}{step}, "
        f"{plural(len(rows), 'kernel')} on {plural(len(owners), *noun)}"
        if rows
        else f"no device work{step}"
    )
    if run["notes"]:
        blocks += ["", Items("notes", [shown(n, style) for n in run["notes"]], noun="notes")]
    if not rows:
        return blocks
    blocks += ["", _kinds(kinds), "", _kernels(rows, view.top)]
    return blocks


def _kinds(kinds: list[dict[str, Any]]) -> Table:
    cells = [
        [_owner(k), k["kind"], count(k["count"]), duration(k["total_ns"]), percent(k["share_pct"])]
        for k in kinds
    ]
    columns = (
        text_col("rank"), text_col("kind"), num_col("count"), num_col("total"), num_col("share"),
    )  # fmt: skip
    return Table("time per kind (share: of the rank's summed device work)", columns, cells)


def _kernels(rows: list[dict[str, Any]], top: int) -> Table:
    """The first ``top`` kernels of each rank (rows come sorted by rank, then total)."""
    seen: dict[str, int] = {}
    cells = []
    for r in rows:
        owner = _owner(r)
        seen[owner] = seen.get(owner, 0) + 1
        if seen[owner] > top:
            continue
        cells.append(
            [
                owner, r["name"], r["kind"], count(r["count"]),
                duration(r["total_ns"]), percent(r["share_pct"]),
                *(duration(r[c]) for c in ("mean_ns", "p50_ns", "p95_ns", "max_ns", "min_ns")),
            ]
        )  # fmt: skip
    columns = (
        text_col("rank"), text_col("kernel", cut=24), text_col("kind", drop=6),
        num_col("count"), num_col("total"), num_col("share"), num_col("mean", drop=5),
        num_col("p50", drop=3), num_col("p95", drop=2), num_col("max", drop=4),
        num_col("min", drop=1),
    )  # fmt: skip
    return Table(
        f"kernels by total device time (the first {top} of each rank)",
        columns,
        cells,
        total=len(rows),
        noun="kernels",
        more=TOP_MORE,
    )


def kernels_layout(result: KernelsResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``)."""
    return kernels_from_json(as_doc(result, style, view), style, view)
