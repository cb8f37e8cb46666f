"""The Critical path section of the Markdown report (``traceana report -o report.md``), drawn
from ``traceana critical``'s JSON as the page embeds it: the verdict, the fixes ranked by
the step time they save, numbers written as the text outputs write them."""

from __future__ import annotations

from typing import Any

from trace_analyzer.numbers import count, duration, percent
from trace_analyzer.render.blocks import MARKDOWN, Block, Table, draw, heading, num_col, text_col
from trace_analyzer.render.safe import markdown as inert_markdown


def critical_markdown(run: dict[str, Any], image: str | None) -> str:
    """Return the Markdown critical-path section of a critical ``run`` (its JSON; ``image``
    unused: the section has no plot): the verdict and the ranked fixes."""
    del image
    blocks: list[Block] = [heading("critical path", MARKDOWN), inert_markdown(run["verdict"])]
    rows = [
        [str(f["rank"]), f["fix"], duration(f["saved_ns"]), percent(f["saved_pct"]),
         duration(f["replayed_ns"]), count(f["path_segments"]), f["assumption"]]
        for f in run["fixes"]
    ]  # fmt: skip
    columns = (
        num_col("#"), text_col("fix"), num_col("saves per step"), num_col("%"),
        num_col("step after"), num_col("path segments"), text_col("assumption"),
    )  # fmt: skip
    blocks += ["", Table("the fixes, ranked by the step time they save", columns, rows)]
    return "\n".join(draw(blocks, MARKDOWN))
