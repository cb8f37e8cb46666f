"""The Engines section of the Markdown report (``traceana report -o report.md``), drawn from
``traceana engines``' JSON as the page embeds it: the roofline's link, per NEFF its window,
MFU, MBU, intensity, verdict, headroom and busiest engine, the hints and the Summary's
mismatches, numbers written as the text outputs write them (docs/report.md)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from trace_analyzer.numbers import DASH, duration, number, percent
from trace_analyzer.questions.engines.html import busiest
from trace_analyzer.render.blocks import (
    MARKDOWN,
    Block,
    Items,
    Table,
    draw,
    heading,
    num_col,
    text_col,
)
from trace_analyzer.render.safe import markdown as inert_markdown


def engines_markdown(run: dict[str, Any], image: str | None) -> str:
    """Return the Markdown engines section of an engines ``run`` (its JSON): the roofline
    plot's link (``image``, its file name beside the .md; none with ``--no-images``), per
    NEFF its window, MFU, MBU, intensity, verdict, headroom and busiest engine, the hints and
    the Summary's mismatches."""
    blocks: list[Block] = [heading("engines", MARKDOWN)]
    blocks.append("Per NEFF of the run's device-profile exports (`traceana engines PATH` has "
                  "every table; docs/device.md).")  # fmt: skip
    if image:
        blocks.append(f"![roofline]({quote(image)})")
    top = busiest(run)
    rows = [
        [n["neff"], duration(n["window_ns"]) if n["window_ns"] is not None else DASH,
         percent(n["mfu_pct"]), percent(n["mbu_pct"]), number(n["intensity"]),
         n["verdict"] or DASH, DASH if n["headroom"] is None else f"{number(n['headroom'])}×",
         (b := top.get((n["profile"], n["neff"]), {})).get("engine") or DASH,
         percent(b.get("active_pct"))]
        for n in run["neffs"]
    ]  # fmt: skip
    columns = (text_col("NEFF"), num_col("window"), num_col("MFU"), num_col("MBU"),
               num_col("FLOP/byte"), text_col("verdict"), num_col("headroom"),
               text_col("busiest engine"), num_col("active"))  # fmt: skip
    blocks.append(Table(None, columns, rows))
    hints = [inert_markdown(f"{h['neff']}: {h['text']}") for h in run["hints"]]
    mismatches = [inert_markdown(m) for m in run["mismatches"]]
    blocks += [Items("hints", hints, noun="hints")] if hints else []
    blocks += [Items("mismatches with the export's Summary", mismatches)] if mismatches else []
    return "\n\n".join("\n".join(draw([b], MARKDOWN)).strip() for b in blocks)
