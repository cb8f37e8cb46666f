"""A multi-rank run held two ways for the tests of a question measured a file at a time
(analyses/passes.py): read whole, and as each of its trace files read alone."""

from __future__ import annotations

import functools
from pathlib import Path

from trace_analyzer.inputs.discover import discover
from trace_analyzer.loading.by_file import by_file
from trace_analyzer.loading.profile import Profile, load_parts
from trace_analyzer.model.schema import COLLECTIVES


@functools.cache
def held(path: Path) -> tuple[Profile, tuple[Profile, ...]]:
    """The run at ``path`` read whole, and each of its files read alone (in the run's order),
    as `report` reads them (the collectives' args); once per test worker."""
    run = discover(path)[0]
    files = by_file(run)
    assert files is not None, f"{path} cannot be read a file at a time"
    whole = load_parts(run, args=COLLECTIVES)
    assert len(whole) == 1
    return whole[0], tuple(load_parts(f, args=COLLECTIVES)[0] for f in files.files)
