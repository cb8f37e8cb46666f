"""The Engines section of the report page (``traceana report``): ``traceana engines``' JSON as
the page embeds it, drawn by templates/section.html, with its roofline (plots.py) when
drawn."""

from __future__ import annotations

from typing import Any

from trace_analyzer.questions.engines.plots import VERDICT_COLOURS
from trace_analyzer.render.html import fill


def busiest(run: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """Return the busiest engine of each NEFF of an engines ``run`` (``traceana engines``'
    JSON), by (profile, NEFF): its row of ``engines`` with the highest active % on any core
    (the first of equals, in the JSON's order); none where no engine has an active %."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in run["engines"]:
        key, pct = (r["profile"], r["neff"]), r["active_pct"]
        if pct is not None and (key not in out or pct > out[key]["active_pct"]):
            out[key] = r
    return out


def engines_section(run: dict[str, Any], png: bytes | None) -> str:
    """Return the engines section of an engines ``run`` (``traceana engines``' JSON): per
    NEFF its window, MFU, MBU, intensity, roofline verdict and headroom and its busiest
    engine, the roofline plot, each engine's active %, the hints, the Summary's mismatches."""
    return fill(
        f"{__package__}:section.html",
        run=run,
        png=png,
        top=busiest(run),
        hints=[f"{h['neff']}: {h['text']}" for h in run["hints"]],
        commands=[u["command"] for u in run["unexported"] if u.get("command")],
        verdict_colours=VERDICT_COLOURS,
    )
