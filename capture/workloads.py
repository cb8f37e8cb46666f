"""The three RMSNorm experiments of AWS's Trainium profiling guide, as step functions."""

from __future__ import annotations

from collections.abc import Callable

VARIANTS = ("naive", "fused", "compiled")
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
EPS = 1e-6


def rmsnorm_naive(x, weight, eps):
    """RMSNorm in plain ops: mul, mean, add (eps), rsqrt, mul, mul: 6 operator calls."""
    variance = (x * x).mean(-1, keepdim=True)
    return x * (variance + eps).rsqrt() * weight


def rmsnorm_step(
    variant: str, backend: str, shape=(4, 512), dtype: str = "bf16", device=None
) -> Callable[[], object]:
    """Return a step function running one RMSNorm variant on ``device``.

    The naive variant's epsilon is a CPU-side scalar tensor, as in the guide: on Trainium
    it is copied host-to-device before aten::add.
    """
    import torch

    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: expected one of {', '.join(VARIANTS)}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    dt = getattr(torch, DTYPES[dtype])
    x = torch.randn(*shape, dtype=dt, device=device)
    weight = torch.ones(shape[-1], dtype=dt, device=device)
    eps = torch.tensor(EPS, dtype=dt)  # lives on the CPU
    if variant == "naive":
        return lambda: rmsnorm_naive(x, weight, eps)
    if variant == "fused":
        return lambda: torch.rms_norm(x, (shape[-1],), weight, EPS)
    compiled = torch.compile(
        rmsnorm_naive, fullgraph=True, **({"backend": "neuron"} if backend == "neuron" else {})
    )
    compiled(x, weight, EPS)  # compile outside the profiled steps
    return lambda: compiled(x, weight, EPS)


def device_for(backend: str) -> str | None:
    """Return the torch device string a backend runs on."""
    return {"neuron": "neuron", "cuda": "cuda", "cpu": "cpu"}.get(backend)
