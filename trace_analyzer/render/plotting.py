"""What every plot shares (the report's, each question's part of it, trend's): matplotlib, a
figure to draw on, its bytes, the colours, a name from a trace as a plot draws it.

matplotlib is the optional extra ``traceana[report]``, imported when a plot is drawn, never
at ``import trace_analyzer``. Figures are drawn on the non-interactive Agg canvas, without
pyplot, so no global backend is switched.
"""

from __future__ import annotations

import io
from types import ModuleType
from typing import TYPE_CHECKING

from trace_analyzer.errors import UsageError
from trace_analyzer.render.cut import cut as cut_text
from trace_analyzer.render.cut import cut_apart
from trace_analyzer.render.safe import plain

if TYPE_CHECKING:  # matplotlib is imported only to draw
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter

INSTALL_HINT = "pip install 'traceana[report]'"
DPI = 100
WIDTH_IN = 12.0
# Okabe-Ito colours: told apart with the common colour-vision deficiencies.
CAUSE_COLOURS = {
    "host_dispatch": "#E69F00",
    "launch_blocked": "#882255",
    "event_wait": "#44AA99",
    "launch_latency": "#F0E442",
    "transfer": "#56B4E9",
    "sync": "#CC79A7",
    "graph": "#009E73",
    "collective": "#0072B2",
    "runtime": "#D55E00",
    "uncorrelated": "#999999",
    "other": "#000000",
}
BUSY_COLOUR = "#1F3A5F"
OP_COLOUR, OP_EDGE = "#DCE3EE", "#7A8BA6"
OUTSIDE_COLOUR = "#F2F2F2"


def require() -> ModuleType:
    """Return the matplotlib module; a UsageError naming the extra when it is absent."""
    try:
        import matplotlib
    except ImportError as e:
        raise UsageError(
            f"traceana report draws its plots with matplotlib, which is not "
            f"installed: {INSTALL_HINT}"
        ) from e
    return matplotlib


def figure(height_in: float) -> Figure:
    """Return a new figure ``height_in`` inches high, ``WIDTH_IN`` wide, on the Agg canvas
    (a UsageError without matplotlib)."""
    require()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, fmt: str) -> bytes | str:
    """Return ``fig`` drawn in ``fmt``: "png" bytes, or "svg" text (without a date, so the
    same plot gives the same file)."""
    buf = io.BytesIO()
    metadata = {"Software": "traceana"} if fmt == "png" else {"Date": None}
    fig.savefig(buf, format=fmt, metadata=metadata)
    return buf.getvalue() if fmt == "png" else buf.getvalue().decode()


def patch(colour: str, label: str, edge: str | None = None) -> Patch:
    """Return a legend entry: a ``colour`` swatch (its edge ``edge``, else the same colour)
    named ``label``."""
    from matplotlib.patches import Patch

    return Patch(facecolor=colour, edgecolor=edge or colour, label=label)


def ticks(per: int) -> FuncFormatter:
    """Return a tick formatter that shows x / ``per`` (µs as ms with ``per`` 1000)."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda x, _: f"{x / per:,.10g}")


def message(text: str, fmt: str) -> bytes | str:
    """Return a plot that only says ``text``, in ``fmt`` (``save``): what is drawn when there
    is nothing to draw."""
    fig = figure(1.2)
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=10, color="#555555")
    return save(fig, fmt)


def as_png(image: bytes | str) -> bytes:
    """Return ``image``, a plot drawn with ``fmt="png"``, as the bytes it is (TypeError for
    SVG text)."""
    if not isinstance(image, bytes):
        raise TypeError("not a PNG: an SVG plot is text")
    return image


def text(name: str) -> str:
    """Return a name from a trace as a plot draws it: control characters shown as escapes
    (``safe.plain``: no glyph is missing, no warning carries them to stderr), and ``$``
    escaped, so that matplotlib draws it rather than reading mathtext."""
    return plain(name).replace("$", r"\$")


def short_names(names: list[str]) -> list[str]:
    """Return the lane ``names`` without the path components all of them share (the last two
    kept)."""
    parts = [n.split("/") for n in names]
    keep = min((len(p) for p in parts), default=0)
    common = 0
    while common < keep - 2 and len({tuple(p[: common + 1]) for p in parts}) == 1:
        common += 1
    return ["/".join(p[common:]) for p in parts]


def cut(name: str, most: int = 60) -> str:
    """A name as a plot's label: in ``most`` characters at most, cut in its middle (a C++
    kernel's name can be a thousand; render/cut.py)."""
    return cut_text(name, most)


def cut_names(names: list[str], most: int = 60) -> list[str]:
    """The labels of ``names`` drawn side by side: each ``cut``, names that would read the
    same keeping the part where they differ (``cut.cut_apart``)."""
    shown = cut_apart(names, most)
    return [shown[n] for n in names]
