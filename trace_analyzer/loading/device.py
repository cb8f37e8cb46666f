"""The device-profile exports beside a loaded run: what `gaps`, `ops` and `report` add below the
ops (docs/device.md, "From an op down to its engines").

``ta.load_device(path)`` reads every export under a path and says what is wrong with one it
cannot read; a command about the system view (gaps, ops, report) looks beside its run for them
and goes on without them when there are none or they cannot be read: ``traceana engines``
is the command that reports a broken export.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.device import DeviceRun
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
