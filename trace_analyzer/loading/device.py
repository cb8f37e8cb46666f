"""The device-profile exports beside a loaded run: what `gaps`, `ops` and `report` add below the
ops (docs/device.md, "From an op down to its engines").

``ta.load_device(path)`` reads every export under a path and says what is wrong with one it
cannot read; a command about the system view (gaps, ops, report) looks beside its run for them
and goes on without them when there are none or they cannot be read: ``traceana engines``
is the command that reports a broken export.

``--rank`` on the device profiles themselves (``select_device_ranks``): an export names its
process (instance and process id), not its rank; the system profile beside it gives each
process's rank (``process_ranks``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import polars as pl

from trace_analyzer.errors import InputError, UsageError
from trace_analyzer.loading.profile import Profile
from trace_analyzer.loading.select import rank_matches
from trace_analyzer.model.device import DeviceProfile, DeviceRun
from trace_analyzer.readers.device_profile import load_device


def device_beside(profile: Profile) -> DeviceRun | None:
    """Return the device profiles in ``profile``'s folder when the run has Neuron executions
    and the folder holds a readable export; else None (a GPU run has no NEFF to meet one, a
    trace file or an archive no folder)."""
    if not profile.events.select((pl.col("source") == "neuron_hw").any()).item():
        return None  # (a count, not a copy of the executions' rows)
    root = profile.root
    if not isinstance(root, Path) or not root.is_dir():
        return None
    try:
        run = load_device(root)
    except InputError:
        return None
    return run if run.profiles else None


def device_of(path: Path) -> tuple[DeviceRun | None, str | None]:
    """Return the device-profile exports under ``path`` for ``traceana report``, and why they
    could not be read: only a folder is searched (a trace or an archive has none), and an
    export that cannot be read is a note on the page, not an error (the report is about the
    system view first)."""
    if not path.is_dir():
        return None, None
    try:
        return load_device(path), None
    except InputError as e:
        return None, f"the device-profile export could not be read: {e}"


def process_ranks(profiles: Sequence[Profile]) -> dict[tuple[str | None, int], int]:
    """Return (host, pid) -> rank for every process of ``profiles`` (the system profile beside
    device-profile exports) whose events carry a rank (docs/distributed.md)."""
    out: dict[tuple[str | None, int], int] = {}
    for p in profiles:
        ranked = (
            p.events.lazy()
            .filter(pl.col("rank").is_not_null(), pl.col("pid").is_not_null())
            .group_by(host=pl.col("host").cast(pl.String), pid="pid")
            .agg(pl.col("rank").first())
            .collect()
        )
        for host, pid, rank in ranked.iter_rows():
            out.setdefault((host, int(pid)), int(rank))
    return out


def rank_of(profile: DeviceProfile, ranks: Mapping[tuple[str | None, int], int]) -> int | None:
    """The rank of the process that recorded ``profile`` (its instance and process id, as its
    ``DeviceProfileList`` row or its name has them), from ``ranks`` (``process_ranks``); a
    profile without an instance id takes the rank of the one process of its pid."""
    if profile.process_id is None:
        return None
    pid = int(profile.process_id)
    if (profile.instance_id, pid) in ranks:
        return ranks[(profile.instance_id, pid)]
    same = {r for (_, p), r in ranks.items() if p == pid}
    return same.pop() if profile.instance_id is None and len(same) == 1 else None


def select_device_ranks(
    run: DeviceRun, spec: str, ranks: Mapping[tuple[str | None, int], int]
) -> DeviceRun:
    """Return ``run`` with only the device profiles of the processes whose rank ``spec`` names
    (``select.rank_matches``; ``ranks``: ``process_ranks`` of the system profile beside).
    Raises a UsageError (``{param}``: ``ranks``) when no profile has a known rank, or when
    none of their ranks matches, naming them."""
    held = {p.name: rank_of(p, ranks) for p in run.profiles}
    known = sorted({r for r in held.values() if r is not None})
    if not known:
        raise UsageError(
            f"{{param}} {spec}: the device profiles under {run.root} have no rank numbers (no "
            "system profile beside them gives their processes' ranks): leave --rank out",
            param="ranks",
        )
    kept = [p for p in run.profiles if (r := held[p.name]) is not None and rank_matches(spec, r)]
    if not kept:
        raise UsageError(
            f"{{param}} {spec}: no device profile under {run.root} is of a rank it names; "
            f"their ranks: {', '.join(map(str, known))}",
            param="ranks",
        )
    return replace(run, profiles=kept)
