"""Command line: ``python -m capture rmsnorm ...`` and ``python -m capture run module:function``."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from .backends import BACKENDS, resolve_name
from .core import NeuronOptions, profile
from .workloads import DTYPES, VARIANTS, device_for, rmsnorm_step


def _shape(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(n) for n in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected sizes like 4,512") from None


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--backend", choices=BACKENDS, default="auto")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--wait", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--active", type=int, default=1)
    p.add_argument(
        "--modes",
        default="DEVICE,RUNTIME",
        help="Neuron ProfileMode values (DEVICE reserves about 5 GB of HBM on Trn2)",
    )
    p.add_argument(
        "--nc",
        dest="capture_enabled_for_nc",
        default="0",
        help="Neuron cores to capture, e.g. 0,1,2-5",
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m capture", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    rms = sub.add_parser("rmsnorm", help="the three RMSNorm variants of the Trainium guide")
    rms.add_argument("--variant", choices=[*VARIANTS, "all"], default="all")
    rms.add_argument("--shape", type=_shape, default=(4, 512))
    rms.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    _common(rms)
    run = sub.add_parser("run", help="profile your own step function, given as module:function")
    run.add_argument("target", metavar="module:function")
    _common(run)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    options = dict(
        steps=args.steps,
        wait=args.wait,
        warmup=args.warmup,
        active=args.active,
        neuron=NeuronOptions(
            modes=tuple(args.modes.split(",")), capture_enabled_for_nc=args.capture_enabled_for_nc
        ),
    )
    try:
        if args.command == "run":
            module, _, name = args.target.partition(":")
            step = getattr(importlib.import_module(module), name)
            where = profile(step, args.out, backend=args.backend, workload=args.target, **options)
            print(f"wrote {where}")
            return 0
        backend = resolve_name(args.backend)
        variants = VARIANTS if args.variant == "all" else (args.variant,)
        for v in variants:
            # torch.compile's first run compiles (tens of seconds on a CPU): said before it
            doing = " (torch.compile: compiling first, which takes a while)" * (v == "compiled")
            print(f"capturing rmsnorm {v} on {backend}{doing}", file=sys.stderr, flush=True)
            step = rmsnorm_step(v, backend, args.shape, args.dtype, device_for(backend))
            out = args.out / v if args.variant == "all" else args.out
            where = profile(
                step,
                out,
                backend=backend,
                workload="rmsnorm",
                variant=v,
                shape=list(args.shape),
                dtype=args.dtype,
                **options,
            )
            print(f"wrote {where}")
    except (ImportError, ValueError, AttributeError) as e:
        print(f"capture: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
