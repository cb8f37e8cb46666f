"""Run a step function under torch.profiler and write the output directory traceana reads.

torch (and torch_neuronx) are imported only when a capture runs, never at package import.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .backends import Backend, resolve, session_dir

CAPTURE_JSON = "capture.json"


@dataclass
class NeuronOptions:
    """torch_neuronx.profiling.NeuronConfig parameters (docs/neuron-formats.md §4.1).

    ``modes`` names ProfileMode values: DEVICE (.neff/.ntff; reserves about 5 GB of HBM on
    Trn2), RUNTIME (ntrace.pb, trace_info.pb), CPU_UTIL (cpu_util.pb), HOST_MEMORY
    (host_mem.pb). None leaves a parameter at NeuronConfig's default.
    """

    modes: tuple[str, ...] = ("DEVICE", "RUNTIME")
    capture_enabled_for_nc: str | None = "0"
    max_events_per_nc: int | None = None
    neff_cache_dir: str | None = None
    precache_node_info: bool | None = None


@dataclass
class Schedule:
    wait: int = 2
    warmup: int = 1
    active: int = 1

    @property
    def first_active(self) -> int:
        return self.wait + self.warmup


@dataclass
class CaptureInfo:
    """What capture.json records about one capture."""

    backend: str
    device: str
    torch_version: str
    torch_neuronx_version: str | None
    workload: str | None
    variant: str | None
    steps: int
    schedule: dict
    shape: list[int] | None
    dtype: str | None
    command: list[str]
    started_at: str
    host: str
    pid: int
    extra: dict = field(default_factory=dict)


def require_torch():
    """Return the torch module, or raise a clear ImportError naming the capture extra."""
    try:
        import torch
    except ImportError as e:
        raise ImportError(
            "capture needs PyTorch: pip install 'traceana[capture]' "
            "(on Trainium, torch-neuronx from AWS's Neuron repository)"
        ) from e
    return torch


def profile(
    step_fn: Callable[[], Any],
    out_dir: str | Path,
    *,
    steps: int = 4,
    wait: int = 2,
    warmup: int = 1,
    active: int = 1,
    backend: str = "auto",
    neuron: NeuronOptions | None = None,
    record_shapes: bool = True,
    with_stack: bool = False,
    workload: str | None = None,
    variant: str | None = None,
    shape: list[int] | None = None,
    dtype: str | None = None,
) -> Path:
    """Run ``step_fn`` ``steps`` times under the profiler; return the folder holding trace.json.

    The device is synchronised inside the loop before each ``prof.step()``. Neuron captures
    are laid out by torch-neuronx under ``out_dir``; CPU and GPU captures are written in the
    same session layout, ``<host>_pid_<pid>/<YYYYMMDD_HHMMSS_mmm>/trace.json``.
    """
    torch = require_torch()
    schedule = Schedule(wait, warmup, active)
    if steps < schedule.first_active + active:
        raise ValueError(
            f"steps={steps} ends before the active steps "
            f"(wait {wait} + warmup {warmup} + active {active})"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    chosen = resolve(backend, torch, out, neuron or NeuronOptions())
    kwargs = dict(
        activities=chosen.activities,
        schedule=torch.profiler.schedule(wait=wait, warmup=warmup, active=active),
        on_trace_ready=chosen.on_trace_ready,
        record_shapes=record_shapes,
        with_stack=with_stack,
    )
    if chosen.experimental_config is not None:
        kwargs["experimental_config"] = chosen.experimental_config
    with torch.profiler.profile(**kwargs) as prof:
        for _ in range(steps):
            step_fn()
            chosen.synchronize()
            prof.step()
    where = chosen.trace_dir() or out
    info = CaptureInfo(
        backend=chosen.name,
        device=chosen.device_name,
        torch_version=torch.__version__,
        torch_neuronx_version=chosen.neuronx_version,
        workload=workload,
        variant=variant,
        steps=steps,
        schedule=asdict(schedule),
        shape=shape,
        dtype=dtype,
        command=[Path(sys.argv[0]).name, *sys.argv[1:]],
        started_at=started.isoformat(),
        host=socket.gethostname(),
        pid=os.getpid(),
        extra={
            "python": platform.python_version(),
            "record_shapes": record_shapes,
            "with_stack": with_stack,
            **chosen.extra,
        },
    )
    (where / CAPTURE_JSON).write_text(json.dumps(asdict(info), indent=2) + "\n")
    return where


__all__ = ["Backend", "CaptureInfo", "NeuronOptions", "Schedule", "profile", "session_dir"]
