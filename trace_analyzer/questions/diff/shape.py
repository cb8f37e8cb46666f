"""What a run is a recording of, so that ``traceana diff`` can say when its two sides are not
the same kind of run (docs/diff.md, "Sides that differ").

A run's **shape**: its **platform** (what ran on the hardware: Neuron, CUDA, ROCm, MTIA),
its **ranks** (the rank numbers its processes carry), its **world size** (the ranks of the job
it was part of, as its traces' ``distributedInfo`` says), its **devices** (how many ran work)
and its **steps** (how many ProfilerStep#N it recorded). Rank 3 of an 8-rank run against rank 1
of a 2-rank run, a GPU trace against a Neuron one, one step against ten: the figures of such
sides differ for reasons that are no change of the code, and a gate on them would judge the
wrong thing. A side's value is the set of its runs' values; a side whose runs have no shape
(a ``traceana gaps --format json`` output, a baseline saved before shapes) is not compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import polars as pl

from trace_analyzer.model.schema import text

if TYPE_CHECKING:
    from trace_analyzer.loading.profile import Profile
    from trace_analyzer.questions.gaps.analysis import GapsResult

KEYS = ("platform", "ranks", "world_size", "devices", "steps")
PLATFORMS = {"neuron_hw": "Neuron", "cuda": "CUDA", "rocm": "ROCm", "mtia": "MTIA"}
STEP = r"^ProfilerStep#\d+$"


def _spans(numbers: Sequence[int]) -> str:
    """``0–7``, ``1, 3``: sorted numbers, runs of consecutive ones as a span."""
    out: list[str] = []
    for n in sorted(set(numbers)):
        if out and out[-1].split("–")[-1] == str(n - 1):
            out[-1] = f"{out[-1].split('–')[0]}–{n}"
        else:
            out.append(str(n))
    return ", ".join(out)


def shape_of(profile: Profile, g: GapsResult) -> dict[str, str]:
    """Return the shape of one run (module doc), each value as words: ``platform`` (the
    platforms of its hardware events, ``none`` without), ``ranks`` (``none`` without rank
    numbers), ``world_size`` (``none`` where no trace says), ``devices`` (the devices that ran
    work) and ``steps`` (ProfilerStep#N)."""
    ev = profile.events
    hardware = ev.filter(pl.col("lane_kind").cast(pl.String) == "hardware")
    sources = hardware["source"].cast(pl.String).unique().to_list()
    platform = ", ".join(sorted({PLATFORMS.get(s, s) for s in sources if s})) or "none"
    ranks = [int(r) for r in ev["rank"].drop_nulls().unique().to_list()]
    steps = ev.filter(text("name").str.contains(STEP))["name"].n_unique()
    worlds = sorted({r.world_size for r in profile.reads if r.world_size is not None})
    return {
        "platform": platform,
        "ranks": _spans(ranks) or "none",
        "world_size": ", ".join(map(str, worlds)) or "none",
        "devices": str(g.devices.height),
        "steps": str(steps),
    }


def _values(shapes: Sequence[Mapping[str, str] | None], key: str) -> str | None:
    """A side's value of ``key``: its runs' values (``a / b`` when they differ); None when a
    run has no shape."""
    got = [s.get(key) for s in shapes if s is not None]
    if len(got) < len(shapes) or any(v is None for v in got):
        return None
    return " / ".join(sorted({str(v) for v in got}))


def mismatch(
    base: Sequence[Mapping[str, str] | None],
    head: Sequence[Mapping[str, str] | None],
    *,
    step: int | None = None,
) -> str | None:
    """Return how the runs of base and head (their shapes) differ, in words
    (``ranks (base 1, head 3), platform (base CUDA, head Neuron)``), or None when they do not,
    or cannot be told apart. A value ``none`` is not compared (no rank numbers; a side that ran
    nothing on hardware, whose platform and devices ``--allow-empty`` judges); with ``step``
    (``--step N``: one step of each) the steps are not compared."""
    unknown = {None, "none"}  # a side that does not say, or ran nothing on hardware
    if {_values(base, "platform"), _values(head, "platform")} & unknown:
        skip = {"platform", "devices"}  # no executions on a side: --allow-empty's to judge
    else:
        skip = set()
    out = []
    for key in KEYS:
        if key in skip or (key == "steps" and step is not None):
            continue
        b, h = _values(base, key), _values(head, key)
        if b not in unknown and h not in unknown and b != h:
            out.append(f"{key.replace('_', ' ')} (base {b}, head {h})")
    return ", ".join(out) or None
