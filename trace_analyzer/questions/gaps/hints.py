"""The next step to take: a short hint per cause, and per op for the cause of most of its idle
(docs/gaps.md, "Next steps"). Words for Trainium where the lane is a NeuronCore.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from trace_analyzer.numbers import duration, from_us

# The RMSNorm example the fusion hint quotes (docs/gaps.md): naive PyTorch, torch.compile.
FUSED_FROM_US, FUSED_TO_US = 2355, 376

CAUSE_HINTS = {
    "host_dispatch": (
        "the device waits for the host to launch the next op: fewer, larger ops "
        "(torch.compile, a fused op) or CUDA graphs remove the gaps",
        "the NeuronCore waits for the host to dispatch the next op: fewer, larger ops "
        "(torch.compile, a fused op) run as one NEFF without the gaps",
    ),
    "launch_latency": (
        "kernels too short for their launch cost: CUDA graphs or fusion",
        "executions too short for their launch cost: fuse ops (torch.compile) into one NEFF",
    ),
    "transfer": (
        "a host-device copy holds the next kernel: keep the tensor on the device, or copy "
        "it earlier from pinned memory with non_blocking=True",
        "a host tensor is copied to the device before the next execution: create it on the "
        "device once (a CPU-side scalar such as an epsilon is copied on every call)",
    ),
    "sync": (
        "a synchronisation on the stream holds the next kernel: check the stream waits and "
        "events it depends on",
        "a barrier on the NeuronCore holds the next execution: check what it waits for",
    ),
    "graph": (
        "gaps inside a graph replay are the graph's own dependencies, not host overhead",
        "gaps inside a graph replay are the graph's own dependencies, not host overhead",
    ),
    "collective": (
        "a communication lane waits for its peers: compare the ranks (traceana batch) for "
        "the slow one",
        "a collective waits for its peers: compare the ranks (traceana batch) for the slow one",
    ),
    "runtime": (
        "launched early, started late: the device or another stream was busy, or the "
        "runtime queue was",
        "dispatched early, started late: runtime scheduling between nrta_execute_schedule "
        "and nc_exec_running",
    ),
    "uncorrelated": (
        "no launch recorded: profile with activities CPU and CUDA so each kernel links to "
        "its launch",
        "no dispatch recorded: profile with torch.profiler (CPU and PrivateUse1) so each "
        "execution links to its op",
    ),
}
# What the host was doing while it was late, and what to change (host_dispatch gaps).
HOST_HINTS = {
    "host_untraced_ns": "Python between ops (profile with with_stack=True to see it)",
    "host_framework_ns": "framework overhead inside the ops: fuse or compile them",
    "host_runtime_ns": "runtime or driver calls: fewer, larger launches",
    "host_sync_ns": "a synchronize on the launching thread (an .item(), .cpu() or print of a "
    "device tensor?): move it out of the step loop",
}


def cause_hint(cause: str, neuron: bool) -> str:
    """Return the hint for one cause, in Trainium words when ``neuron``."""
    gpu, trn = CAUSE_HINTS.get(cause, ("", ""))
    return trn if neuron else gpu


def hints(device_gaps: pl.DataFrame, neuron: bool, top: int = 5) -> list[dict[str, Any]]:
    """Return the next steps of one run: one per cause that left the devices idle (most idle
    first), then one per op for the cause of most of the idle before it (the ``top`` ops),
    each ``{"op", "cause", "idle_ns", "gaps", "hint"}``."""
    if device_gaps.is_empty():
        return []
    out = []
    by_cause = (
        device_gaps.group_by("cause")
        .agg(
            idle_ns=pl.col("duration_ns").sum(), gaps=pl.len(), longest=pl.col("duration_ns").max()
        )
        .sort("idle_ns", "cause", descending=[True, False])
    )
    for c, idle, n, longest in by_cause.rows():
        text = cause_hint(c, neuron)
        # many dispatch gaps, none of them most of the idle: the ops are too small, fuse them
        # (one long stall is not what fusion fixes; its op's hint says where the host was)
        if c == "host_dispatch" and n >= 3 and 2 * longest <= idle:
            text = (
                f"{n:,} separate dispatches leave the device idle {duration(idle)} between "
                f"them: fusing the ops removes up to that (the RMSNorm example went from "
                f"{from_us(FUSED_FROM_US)} to {from_us(FUSED_TO_US)} this way)"
            )
        out.append({"op": None, "cause": c, "idle_ns": int(idle), "gaps": int(n), "hint": text})
    return out + _per_op(device_gaps, neuron, top)


def _per_op(device_gaps: pl.DataFrame, neuron: bool, top: int) -> list[dict[str, Any]]:
    """Return a hint for each of the ``top`` ops with the most idle before them."""
    split = [c for c in HOST_HINTS if c in device_gaps.columns]
    per = (
        device_gaps.lazy()  # lazy: the columns it sums, not a copy of the whole table
        .filter(pl.col("next_op").is_not_null())
        .group_by("next_op", "cause")
        .agg(
            *(pl.col(c).sum() for c in split),
            idle_ns=pl.col("duration_ns").sum(),
            gaps=pl.len(),
            copies=pl.col("transfer_event")
            .drop_nulls()
            .unique()
            .sort()
            .cast(pl.String)
            .str.join(", "),
        )
        .sort("idle_ns", "next_op", descending=[True, False])
        .unique("next_op", keep="first", maintain_order=True)
        .head(top)
        .collect()
    )
    out = []
    for r in per.to_dicts():
        op, c = r["next_op"], r["cause"]
        text = cause_hint(c, neuron)
        if c == "transfer" and r["copies"]:
            what = (
                "a host tensor (a CPU-side scalar such as the epsilon?)" if neuron else "a tensor"
            )
            text = (
                f"{what} is copied to the device before it ({r['copies']}; "
                f"{_times(r['gaps'])}): create it on the device once"
            )
        elif c == "host_dispatch" and split:
            most = max(split, key=lambda k: r[k] or 0)
            text = f"launched late; the host was mostly in {HOST_HINTS[most]}"
        out.append(
            {"op": op, "cause": c, "idle_ns": int(r["idle_ns"]), "gaps": r["gaps"], "hint": text}
        )
    return out


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"
