"""The text and Markdown layout of `traceana ranks` (questions/ranks/analysis.py): the ranks and
their clocks, each device's step broken down, and the straggler of each step."""

from __future__ import annotations

import polars as pl

from trace_analyzer.numbers import DASH, count, data_size, duration, number, percent
from trace_analyzer.questions.ranks.analysis import RanksResult
from trace_analyzer.render.blocks import Block, Items, Style, Table, heading, num_col, text_col
from trace_analyzer.render.safe import shown
from trace_analyzer.render.view import View


def _signed(value: int | None) -> str:
    return DASH if value is None else ("-" if value < 0 else "+") + duration(abs(value))


def _rank(value: int | None) -> str:
    return DASH if value is None else f"rank {value}"


def ranks_layout(result: RanksResult, style: Style, view: View) -> list[Block]:
    """Return the blocks of ``result`` for a terminal or Markdown (``style``, ``view``): its
    ranks, steps and stragglers."""
    blocks: list[Block] = [heading(f"ranks: {shown(result.root, style)}", style), ""]
    slow = result.stragglers
    if slow.height:
        s = slow.row(0, named=True)
        blocks += [
            f"straggler of step {s['step']}: {_rank(s['rank'])}, {duration(s['behind_ns'])} behind "
            f"the others ({s['why']}: its step started {_signed(s['late_start_ns'])} after "
            f"theirs, its compute {_signed(s['extra_compute_ns'])} against theirs)",
            "",
        ]
    if result.notes:
        blocks += [Items("notes", [shown(n, style) for n in result.notes], noun="notes"), ""]
    clocks = [
        [_rank(r["rank"]), count(r["pid"]), r["host"] or DASH,
         _signed(r["offset_ns"]), r["offset_from"] or DASH, "yes" if r["applied"] else "no"]
        for r in result.ranks.iter_rows(named=True)
    ]  # fmt: skip
    blocks.append(
        Table(
            "ranks and their clocks (offset after the first rank's)",
            (
                text_col("rank"),
                num_col("pid"),
                text_col("host", cut=12),
                num_col("offset"),
                text_col("measured on"),
                text_col("applied"),
            ),
            clocks,
        )  # fmt: skip
    )
    blocks += ["", _steps(result.steps), ""]
    if slow.height:
        blocks.append(_stragglers(slow))
    else:
        blocks.append("stragglers: none (no step on two ranks or more)")
    return blocks + _collectives(result, view)


WORST = 10  # the collectives the text shows, the longest waits first (JSON has them all)


def _group_name(r: dict[str, object]) -> str:
    if r["match_by"] == "name":
        return "(no group: by name)"
    return f"{r['group']} {r['group_ranks'] or ''}".strip()


def _gbps(v: float | None) -> str:
    return DASH if v is None else f"{number(v)} GB/s"


def _collectives(result: RanksResult, view: View) -> list[Block]:
    """The collectives matched across ranks: per process group, the worst by wait, the
    slowest link (docs/distributed.md, "Collectives matched across ranks")."""
    coll, groups = result.collectives, result.collective_groups
    if coll.is_empty():
        return ["", "collectives: none (no NCCL/RCCL kernel, no Neuron collective)"]
    cells = [
        [_group_name(r), count(r["collectives"]), count(r["ranks"]), r["kinds"] or DASH,
         duration(r["latency_ns"]), duration(r["wait_ns"]), duration(r["skew_ns"]),
         data_size(r["size_bytes"]), _rank(r["late_rank"]),
         DASH if r["late_count"] is None else count(r["late_count"])]
        for r in groups.iter_rows(named=True)
    ]  # fmt: skip
    columns = (
        text_col("group", cut=24), num_col("collectives"), num_col("ranks"),
        text_col("kinds", drop=2), num_col("latency"), num_col("wait"), num_col("skew"),
        num_col("size", drop=1), text_col("last most often"), num_col("times", drop=3),
    )  # fmt: skip
    blocks: list[Block] = ["", Table("collectives per process group (matched across ranks)",
                                     columns, cells)]  # fmt: skip
    worst = coll.sort("max_wait_ns", "skew_ns", descending=True).head(min(view.top, WORST))
    rows = [
        [_group_name(r), DASH if r["seq"] is None else number(r["seq"]), r["kind"] or DASH,
         count(r["ranks"]), duration(r["skew_ns"]), _rank(r["last_rank"]),
         duration(r["latency_ns"]), duration(r["max_wait_ns"]), _rank(r["most_waiting_rank"]),
         data_size(r["size_bytes"]), _gbps(r["busbw_gbps"])]
        for r in worst.iter_rows(named=True)
    ]  # fmt: skip
    columns_of_worst = (
        text_col("group", cut=24), num_col("seq"), text_col("kind"), num_col("ranks"),
        num_col("skew"), text_col("last to arrive"), num_col("latency"), num_col("longest wait"),
        text_col("waited most"), num_col("size", drop=1), num_col("bus bw", drop=2),
    )  # fmt: skip
    title = "the collectives with the longest waits (latency: the shortest rank's duration)"
    blocks += ["", Table(title, columns_of_worst, rows, total=coll.height, noun="collectives")]
    link = result.collective_links.head(1).to_dicts()
    if link and link[0]["bandwidth_gbps"] is not None and result.collective_links.height > 1:
        s = link[0]
        size, took = data_size(s["size_bytes"]), duration(s["latency_ns"])
        blocks += [
            "",
            f"slowest link: rank {s['src']} -> rank {s['dst']}, {_gbps(s['bandwidth_gbps'])} "
            f"over {count(s['transfers'])} transfers ({size} in {took})",
        ]
    return blocks


def _steps(steps: pl.DataFrame) -> Table:
    cells = [
        [
            _rank(r["rank"]),
            r["device"],
            DASH if r["step"] is None else number(r["step"]),
            *(duration(r[c]) for c in ("window_ns", "compute_ns", "communication_ns")),
            percent(r["overlap_pct"]),
            *(duration(r[c]) for c in ("exposed_communication_ns", "memory_ns", "idle_ns")),
            percent(r["idle_pct"]),
        ]
        for r in steps.iter_rows(named=True)
    ]
    columns = (
        text_col("rank"), text_col("device", cut=16), num_col("step"), num_col("window"),
        num_col("compute"), num_col("communication"), num_col("overlap %", drop=2),
        num_col("exposed comm."), num_col("memory", drop=1), num_col("idle"),
        num_col("idle %", drop=3),
    )  # fmt: skip
    return Table(
        "per rank and step (overlap %: of communication, run beside compute)",
        columns,
        cells,
        noun="rows",
        more="`--format json` has every row",
    )


def _stragglers(slow: pl.DataFrame) -> Table:
    cells = [
        [number(r["step"]), _rank(r["rank"]), count(r["ranks"]), duration(r["wait_ns"]),
         duration(r["others_wait_ns"]), duration(r["behind_ns"]), _signed(r["extra_compute_ns"]),
         _signed(r["late_start_ns"]), r["why"]]
        for r in slow.iter_rows(named=True)
    ]  # fmt: skip
    columns = (
        num_col("step"), text_col("straggler"), num_col("ranks"), num_col("its wait"),
        num_col("others' wait"), num_col("behind"), num_col("extra compute"),
        num_col("late start"), text_col("why"),
    )  # fmt: skip
    return Table("stragglers: the rank the others wait for, per step", columns, cells)
