"""The plot of ``traceana trend -o trend.png``: idle % and device time over capture time."""

from __future__ import annotations

from typing import Any

from trace_analyzer.render.plotting import figure as _figure
from trace_analyzer.render.plotting import save as _save
from trace_analyzer.render.plotting import text as _text


def trend(result: dict[str, Any]) -> bytes:
    """Return the PNG of a ``traceana trend`` result (its JSON shape: ``by``, and the rows
    of ``runs[0]``): idle % (top) and device time (bottom) over capture time, one line per
    group."""
    from datetime import datetime

    fig = _figure(6.0)
    top, bottom = fig.subplots(2, 1, sharex=True)
    rows = [r for r in result["runs"][0]["rows"] if r["time"]]
    for name in sorted({r["group"] for r in rows}):
        pts = [r for r in rows if r["group"] == name]
        x = [datetime.fromisoformat(r["time"]) for r in pts]
        top.plot(x, [r["idle_pct"] for r in pts], marker="o", label=_text(name))
        bottom.plot(x, [r["device_time_ms"] for r in pts], marker="o", label=_text(name))
    top.set_ylabel("idle %")
    bottom.set_ylabel("device time (ms)")
    sources = sorted({r["time_from"] for r in rows if r.get("time_from")})
    # the time said as what it is: file modification times are not capture times
    bottom.set_xlabel("time (" + ", ".join(sources) + ")" if sources else "time")
    top.set_title(f"trend by {result['by']}")
    if rows:
        top.legend(loc="best", fontsize="small")
    png = _save(fig, "png")
    assert isinstance(png, bytes)
    return png
