"""Below the gaps and ops: the engines of each op's NEFF, where the run's folder holds
device-profile exports (questions/engines/below.py; docs/device.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import polars as pl

    from trace_analyzer.cli.common import Loading
    from trace_analyzer.loading.profile import Profile

R = TypeVar("R")


def op_engines_of(profile: Profile, path: Path, loading: Loading) -> pl.DataFrame | None:
    """Return the engines of each op's NEFF (``device_ops.op_engines``) when the run has
    Neuron executions and its folder device-profile exports; else None. An export traceana
    cannot read is left to `traceana engines` to report: here it is none."""
    import polars as pl

    from trace_analyzer.errors import InputError

    if profile.events.filter(pl.col("source") == "neuron_hw").is_empty():
        return None
    root = profile.root
    if not isinstance(root, Path) or not root.is_dir():
        return None
    from trace_analyzer.questions.engines.analysis import engines
    from trace_analyzer.questions.engines.below import below_the_ops
    from trace_analyzer.questions.kernels.command import with_neffs
    from trace_analyzer.readers.device_profile import load_device

    try:
        run = load_device(root)
    except InputError:
        return None
    if not run.profiles:
        return None
    return below_the_ops(with_neffs(profile, path, loading), engines(run))


def with_engines(result: R, profile: Profile, path: Path, loading: Loading) -> R:
    """Return ``result`` (a gaps or ops result) with ``engines`` set where the run has them."""
    found = op_engines_of(profile, path, loading)
    return result if found is None else replace(result, engines=found)  # type: ignore[type-var]
