"""The text and Markdown layout of `traceana kernels` (questions/kernels/analysis.py): the time
per kind of work, then the kernels (Neuron: the NEFFs) by total device time, the first ``--top``
of each rank."""

from __future__ import annotations

import polars as pl

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
from trace_analyzer.render.view import View

# Who a row is shown under: its rank, or its process when it has no rank (``_owner``).
SHOWN_UNDER = (pl.col("rank"), pl.when(pl.col("rank").is_null()).then(pl.col("pid")))


def _owner(rank: int | None, pid: int) -> str:
    """A row's rank, or its process when the run has no ranks."""
    return f"pid {pid}" if rank is None else f"rank {rank}"


def kernels_layout(result: KernelsResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``): its
    kernel breakdown."""
    kinds, rows = result.kinds, result.kernels
    blocks: list[Block] = [heading(f"kernels: {shown(result.root, style)}", style), ""]
    owners = kinds.select(SHOWN_UNDER).n_unique()
    noun = ("rank", "ranks") if kinds["rank"].null_count() == 0 else ("process", "processes")
    step = "" if result.step is None else f" launched in ProfilerStep#{result.step}"
    blocks.append(
        f"device work {duration(result.work_ns)} in "
        f"{plural(int(kinds['count'].sum()), 'execution')}{step}, "
        f"{plural(rows.height, 'kernel')} on {plural(owners, *noun)}"
        if rows.height
        else f"no device work{step}"
    )
    if result.notes:
        blocks += ["", Items("notes", [shown(n, style) for n in result.notes], noun="notes")]
    if not rows.height:
        return blocks
    blocks += ["", _kinds(kinds), "", _kernels(rows, view.top)]
    return blocks


def _kinds(kinds: pl.DataFrame) -> Table:
    cells = [
        [_owner(k["rank"], k["pid"]), k["kind"], count(k["count"]), duration(k["total_ns"]),
         percent(k["share_pct"])]
        for k in kinds.iter_rows(named=True)
    ]  # fmt: skip
    columns = (
        text_col("rank"), text_col("kind"), num_col("count"), num_col("total"), num_col("share"),
    )  # fmt: skip
    return Table("time per kind (share: of the rank's summed device work)", columns, cells)


def _kernels(rows: pl.DataFrame, top: int) -> Table:
    """The first ``top`` kernels of each rank (rows come sorted by rank, then total)."""
    first = rows.filter(pl.int_range(pl.len()).over(*SHOWN_UNDER) < top)
    cells = [
        [
            _owner(r["rank"], r["pid"]), r["name"], r["kind"], count(r["count"]),
            duration(r["total_ns"]), percent(r["share_pct"]),
            *(duration(r[c]) for c in ("mean_ns", "p50_ns", "p95_ns", "max_ns", "min_ns")),
        ]
        for r in first.iter_rows(named=True)
    ]  # fmt: skip
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
        total=rows.height,
        noun="kernels",
        more=TOP_MORE,
    )
