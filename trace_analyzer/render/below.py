"""The table below an op in the gaps and ops reports: the engines of the NEFF it ran, from
the run's device-profile exports (questions/engines/below.py; docs/device.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trace_analyzer.numbers import DASH, count, number, percent
from trace_analyzer.render.blocks import TOP_MORE, Table, num_col, text_col

TITLE = "below the ops: each op's NEFF on its engines (device profiles: `traceana engines`)"


def engines_below(rows: Sequence[dict[str, Any]], ops: Sequence[str] | None = None) -> Table:
    """Per op and NEFF: executions, the busiest engine, every engine's share of the NEFF's
    window, MFU, MBU, intensity, the roofline verdict and headroom. With ``ops`` (the ops
    the table above shows, in its order), only their rows, in that order; a line under the
    table counts the rest."""
    if ops is not None:
        place = {op: i for i, op in enumerate(ops)}
        shown = sorted((r for r in rows if r["op"] in place), key=lambda r: place[r["op"]])
    else:
        shown = list(rows)
    return Table(
        TITLE,
        (
            text_col("op", cut=20),
            text_col("NEFF", cut=20, keep_end=True),
            num_col("executions", drop=2),
            text_col("busiest engine", cut=16),
            text_col("engines (% of window)", cut=32, drop=4),
            num_col("MFU"),
            num_col("MBU", drop=3),
            num_col("FLOP/byte", drop=1),
            text_col("verdict", cut=14),
            num_col("headroom", drop=5),
        ),
        [
            [
                r["op"],
                r["neff"],
                count(r["executions"]),
                DASH if r["busiest"] is None else f"{r['busiest']} {percent(r['busiest_pct'])}",
                r["engines"] or DASH,
                percent(r["mfu_pct"]),
                percent(r["mbu_pct"]),
                number(r["intensity"]),
                r["verdict"] or DASH,
                DASH if r["headroom"] is None else f"{number(r['headroom'])}×",
            ]
            for r in shown
        ],
        total=len(rows),
        noun="rows",
        more=TOP_MORE,
    )
