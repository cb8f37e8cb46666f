"""Per-run functions with faults built in, for tests/batch/test_batch_faults.py.

They live in a module of their own (not in the test file) so that `traceana batch`'s spawned
worker processes can import them by name, as they import ``batch.analyse_run``.
"""

from __future__ import annotations

import os
import signal
import time

from trace_analyzer.batch import RunSpec, analyse_run


def dies_or_hangs(spec: RunSpec) -> list[dict]:
    """Analyse the run, unless its folder is named ``die*`` (the worker is SIGKILLed, as the
    kernel's OOM killer would) or ``hang*`` (the worker sleeps for an hour)."""
    name = spec.run_id.rstrip("/").rsplit("/", 1)[-1]
    if name.startswith("die"):
        os.kill(os.getpid(), signal.SIGKILL)
    if name.startswith("hang"):
        time.sleep(3600)
    return analyse_run(spec)


def greedy(spec: RunSpec) -> list[dict]:
    """Analyse the run, unless its folder is named ``greedy*``: then first take 1 GiB in
    Python, which under a smaller --worker-memory is a MemoryError (without one, it is freed
    at once)."""
    name = spec.run_id.rstrip("/").rsplit("/", 1)[-1]
    if name.startswith("greedy"):
        hoard = b"x" * (1 << 30)
        del hoard
    return analyse_run(spec)
