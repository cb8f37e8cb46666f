"""A per-file function of `traceana ranks --jobs` with a fault built in, for
tests/analyses/test_ranks_by_file.py: in a module of its own so that the spawned worker
processes can import it by name, as they import ``batch.ranks.read_rank``."""

from __future__ import annotations

import os
import signal

from trace_analyzer.batch.ranks import RankMap, read_rank
from trace_analyzer.batch.runs import RunSpec


def dies_on_rank_2(spec: RunSpec) -> list[dict]:
    """Read the file, unless it is ``rank-2.json``: then the worker is SIGKILLed, as the
    kernel's OOM killer would."""
    if spec.run_id.endswith("rank-2.json"):
        os.kill(os.getpid(), signal.SIGKILL)
    return read_rank(spec, RankMap())
