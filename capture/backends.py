"""Profiler set-up per backend: activities, synchronisation, where the trace goes.

- neuron: activities CPU and PrivateUse1, ``experimental_config=NeuronConfig(...)`` and
  ``on_trace_ready=NeuronProfiler(config).export_trace`` from ``torch_neuronx.profiling``,
  ``torch.neuron.synchronize()`` in the loop (docs/neuron-formats.md §4.1).
- cuda: activities CPU and CUDA, ``torch.cuda.synchronize()``.
- cpu: activity CPU.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BACKENDS = ("auto", "neuron", "cuda", "cpu")
NO_NEURONX = (
    "backend 'neuron' needs torch-neuronx from AWS's Neuron repository "
    "(the PyPI package of that name is a 2022 placeholder)"
)


@dataclass
class Backend:
    name: str
    device_name: str
    activities: list
    synchronize: Callable[[], None]
    on_trace_ready: Callable[[Any], None]
    trace_dir: Callable[[], Path | None]  # where trace.json ended up, after the run
    experimental_config: Any = None
    neuronx_version: str | None = None
    extra: dict = field(default_factory=dict)


def session_dir(out: Path) -> Path:
    """Return a new ``<host>_pid_<pid>/<YYYYMMDD_HHMMSS_mmm>`` folder under ``out``."""
    now = datetime.now(UTC)
    stamp = now.strftime("%Y%m%d_%H%M%S_") + f"{now.microsecond // 1000:03d}"
    host = socket.gethostname().replace("/", "-") or "localhost"
    folder = out / f"{host}_pid_{os.getpid()}" / stamp
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def neuronx():
    """Return torch_neuronx, or None when it does not import (it is not on PyPI: AWS's repo)."""
    try:
        import torch_neuronx
    except ImportError:
        return None
    return torch_neuronx


def resolve_name(name: str) -> str:
    """Return the concrete backend: ``auto`` is neuron when torch_neuronx imports, else cuda
    when a GPU is there, else cpu."""
    if name not in BACKENDS:
        raise ValueError(f"backend {name!r}: expected one of {', '.join(BACKENDS)}")
    if name == "neuron" and neuronx() is None:
        raise ImportError(NO_NEURONX)
    if name != "auto":
        return name
    import torch

    return "neuron" if neuronx() else "cuda" if torch.cuda.is_available() else "cpu"


def resolve(name: str, torch, out: Path, neuron_options) -> Backend:
    """Return the profiler set-up of a backend (``auto`` resolved as resolve_name says)."""
    name = resolve_name(name)
    return {"neuron": _neuron, "cuda": _cuda, "cpu": _cpu}[name](torch, out, neuron_options)


def _kineto(
    torch, out: Path, name: str, device: str, activities: list, synchronize: Callable[[], None]
) -> Backend:
    folder: list[Path] = []

    def export(prof) -> None:
        folder.append(session_dir(out))
        prof.export_chrome_trace(str(folder[-1] / "trace.json"))

    return Backend(
        name=name,
        device_name=device,
        activities=activities,
        synchronize=synchronize,
        on_trace_ready=export,
        trace_dir=lambda: folder[-1] if folder else None,
    )


def _cpu(torch, out: Path, _options) -> Backend:
    import platform

    acts = [torch.profiler.ProfilerActivity.CPU]
    return _kineto(
        torch, out, "cpu", platform.processor() or platform.machine(), acts, lambda: None
    )


def _cuda(torch, out: Path, _options) -> Backend:
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    return _kineto(torch, out, "cuda", torch.cuda.get_device_name(), acts, torch.cuda.synchronize)


def _neuron(torch, out: Path, options) -> Backend:
    tnx = neuronx()
    if tnx is None:
        raise ImportError(NO_NEURONX)
    from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode

    params = {
        "modes": [getattr(ProfileMode, m) for m in options.modes],
        "profile_output_dir": str(out),
    }
    for key in (
        "capture_enabled_for_nc",
        "max_events_per_nc",
        "neff_cache_dir",
        "precache_node_info",
    ):
        if getattr(options, key) is not None:
            params[key] = getattr(options, key)
    config = NeuronConfig(**params)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
    sync = getattr(getattr(torch, "neuron", None), "synchronize", None) or tnx.synchronize

    def trace_dir() -> Path | None:  # torch-neuronx lays out <instance>_pid_<pid>/<ts>/ itself
        traces = sorted(out.glob("*_pid_*/**/trace.json"), key=lambda p: p.stat().st_mtime)
        return traces[-1].parent if traces else None

    return Backend(
        name="neuron",
        device_name="neuron",
        activities=acts,
        synchronize=sync,
        on_trace_ready=NeuronProfiler(config).export_trace,
        trace_dir=trace_dir,
        experimental_config=config,
        neuronx_version=getattr(tnx, "__version__", None),
        extra={
            "neuron_config": {
                k: v if k != "modes" else list(options.modes) for k, v in params.items()
            }
        },
    )
