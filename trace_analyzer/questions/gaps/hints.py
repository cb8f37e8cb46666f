"""The next step to take: a short hint per cause, and per op for the cause of most of its idle
(docs/gaps.md, "Next steps"). Words for Trainium where the lane is a NeuronCore.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from trace_analyzer.model.schema import matching
from trace_analyzer.numbers import duration
from trace_analyzer.questions.gaps.tally import EXPOSED, HELD, LOADER, Tally

CAUSE_HINTS = {
    "host_dispatch": (
        "the device waits for the host to launch the next op: fewer, larger ops "
        "(torch.compile, a fused op) or CUDA graphs remove the gaps",
        "the NeuronCore waits for the host to dispatch the next op: fewer, larger ops "
        "(torch.compile, a fused op) run as one NEFF without the gaps",
    ),
    "launch_blocked": (
        "a launch call itself held the device: a first launch loads its kernel's module, a "
        "library's first call sets it up (warm up before the profiled steps); one that blocks "
        "every step waits inside the call (a full launch queue, a synchronising launch)",
        "a dispatch call itself held the NeuronCore: a first call loads its NEFF (warm up "
        "before the profiled steps)",
    ),
    "event_wait": (
        "the next kernel was queued in time and then held on the device by a stream wait: the "
        "stream waits on an event another stream (or the host's copy) records; record the "
        "event earlier, or wait later",
        "the next execution was queued in time and then held on the device by a wait on "
        "another queue: check what that queue ran",
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
        "queued before the lane went idle, started late, and nothing the trace records on "
        "its stream explains the wait (no copy, synchronisation or collective there): unexplained",
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


# torch.compile's own code: its annotation, or a frame of Dynamo or Inductor.
COMPILED_FRAME = r"torch/_(dynamo|inductor)/"
COMPILED_HINT = (
    "torch.compile's own code ran before its kernels (Dynamo's guards, Inductor's generated "
    "wrapper): it is compiled already, fusing will not shorten it; {graphs}, and look for "
    "recompilations and graph breaks (TORCH_LOGS=recompiles,graph_breaks)"
)
GRAPHS = {
    "cuda": 'torch.compile(mode="reduce-overhead") replays it as a CUDA graph',
    "rocm": 'torch.compile(mode="reduce-overhead") replays it as a HIP graph',
}
# An inference run that replays no graph yet: what a graph would take off its launches.
INFERENCE_HINT = (
    "this run records no backward pass and replays no graph: an inference step is what "
    "{graph}s are for: capture it once ({how}) and the host launches it in one call"
)
CAPTURE = {
    "cuda": ("CUDA graph", 'torch.cuda.graph, or torch.compile(mode="reduce-overhead")'),
    "rocm": ("HIP graph", 'torch.cuda.graph, or torch.compile(mode="reduce-overhead")'),
}
LOADER_HINT = (
    "the device waits for the next batch (more workers, pin_memory=True, a larger "
    "prefetch_factor, or a cheaper dataset and transforms)"
)
# A call that held the host, by what it is, and what to change (docs/gaps.md, "Next steps").
CALL_HINTS = (
    (
        r"(?i)(free|malloc|alloc)",
        "the allocator taking or returning device memory: a warm-up step before the "
        "profiled ones, and no torch.cuda.empty_cache() in the loop",
    ),
    (
        r"(?i)(synchroni[sz]e|memcpy(withstream)?$|eventsynchronize)",
        "the host waiting for the device (an .item(), .cpu(), print or blocking copy of a "
        "device tensor?): move it out of the step loop",
    ),
)


COPY_HINTS = {
    "DtoD": "a device-to-device copy on its stream holds the next kernel: a .contiguous(), "
    ".clone() or reshape that copies? keep views, or let torch.compile fuse the copy",
    "Pageable": "a copy from pageable host memory holds the next kernel (it is staged and "
    "synchronous): copy from pinned memory (pin_memory=True) with non_blocking=True, earlier",
}


def copy_hint(copies: list[str]) -> str | None:
    """Return the hint for the copies that held gaps (their names, as Kineto writes them:
    "Memcpy DtoD (Device -> Device)"), where one kind says what to change: all of them
    device-to-device, or any from pageable memory; else None (the cause's hint)."""
    if copies and all("DtoD" in c for c in copies):
        return COPY_HINTS["DtoD"]
    if any("Pageable" in c for c in copies):
        return COPY_HINTS["Pageable"]
    return None


def call_hint(call: str) -> str:
    """Return what a runtime call that held the host is, and what to change."""
    for pattern, text in CALL_HINTS:
        if re.search(pattern, call):
            return text
    return "a runtime call on the launching thread"


# The GPU hints say CUDA; what each other accelerator calls the same thing (no CUDA advice on
# an MTIA or a ROCm trace).
VENDOR_WORDS = {
    "rocm": (
        ("CUDA graphs", "HIP graphs"),
        ("activities CPU and CUDA", "activities CPU and CUDA (ProfilerActivity.CUDA records HIP)"),
    ),
    "mtia": (
        (" or CUDA graphs remove", " remove"),
        ("CUDA graphs or fusion", "fusion"),
        ("activities CPU and CUDA", "activities CPU and MTIA"),
    ),
}


def cause_hint(cause: str, neuron: bool, vendor: str = "cuda") -> str:
    """Return the hint for one cause, in Trainium words when ``neuron``, else in the words of
    ``vendor`` (the executions' source: cuda, rocm, mtia)."""
    gpu, trn = CAUSE_HINTS.get(cause, ("", ""))
    if neuron:
        return trn
    for said, meant in VENDOR_WORDS.get(vendor, ()):
        gpu = gpu.replace(said, meant)
    return gpu


def hints(
    every: Tally,
    neuron: bool,
    top: int = 5,
    frames: bool = False,
    vendor: str = "cuda",
    inference: bool = False,
) -> list[dict[str, Any]]:
    """Return the next steps of one run: one per cause that left the devices idle (most idle
    first; among them the DataLoader's, "cause" ``data_loader``, where idle time lies inside
    its ``__next__``: ``host_data_loader_ns``), then one per op for the cause of most of the
    idle before it (the ``top`` ops), each ``{"op", "cause", "idle_ns", "gaps", "hint"}``.
    ``frames``: the run records Python frames (``with_stack=True``): then none is told to turn
    it on. ``vendor``: the executions' source (``cause_hint``)."""
    if not every.gaps:
        return []
    out = []
    by_cause = (
        every.sums.group_by("cause")
        .agg(
            idle_ns=pl.col("idle_ns").sum(),
            gaps=pl.col("n").sum(),
            longest=pl.col("idle_max").max(),
            loading=pl.col("loader_ns").sum(),
        )
        .sort("idle_ns", "cause", descending=[True, False])
    )
    copies = _copies(every) if not neuron else []
    for c, idle, n, longest, loading_ns in by_cause.rows():
        text = cause_hint(c, neuron, vendor)
        if c == "transfer":
            text = copy_hint(copies) or text
        # many dispatch gaps, none of them most of the idle: the ops are too small, fuse them
        # (one long stall is not what fusion fixes, nor a host mostly fetching batches; the
        # op's hint says where the host was)
        if c == "host_dispatch" and n >= 3 and 2 * longest <= idle and 2 * loading_ns <= idle:
            text = (
                f"{n:,} separate dispatches leave the device idle {duration(idle)} between "
                "them: fusing the ops removes up to that"
            )
        if inference and c in ("host_dispatch", "launch_latency") and vendor in CAPTURE:
            graph, how = CAPTURE[vendor]
            text += "; " + INFERENCE_HINT.format(graph=graph, how=how)
        out.append({"op": None, "cause": c, "idle_ns": int(idle), "gaps": int(n), "hint": text})
    loader = _data_loader(every)
    if loader:
        ns, n = loader
        share = 100 * ns / int(every.sums["idle_ns"].cast(pl.Int128).sum())
        text = f"{share:.1f} % of the idle lies inside the DataLoader's __next__: {LOADER_HINT}"
        item = {"op": None, "cause": "data_loader", "idle_ns": ns, "gaps": n, "hint": text}
        at = next((i for i, h in enumerate(out) if h["idle_ns"] < ns), len(out))
        out.insert(at, item)
    exposed = _exposed(every)
    if exposed:
        at = next((i for i, h in enumerate(out) if h["idle_ns"] < exposed["idle_ns"]), len(out))
        out.insert(at, exposed)
    return out + _per_op(every, neuron, top, frames, vendor)


def _exposed(every: Tally) -> dict[str, Any] | None:
    """Return the next step for the time collectives ran with no compute in the gaps, or None
    where none did (``idle_ns`` holds that time: the item is ranked by it)."""
    if EXPOSED not in every.has:
        return None
    ns = int(every.sums["exposed_ns"].cast(pl.Int128).sum())
    if not ns:
        return None
    text = (
        f"collectives ran with no compute beside them for {duration(ns)}: exposed "
        "communication, not idle; find the rank the others wait for (traceana ranks) and "
        "overlap the collectives with compute"
    )
    return {
        "op": None, "cause": "exposed_communication", "idle_ns": ns,
        "gaps": int(every.sums["exposed_gaps"].sum()),
        "hint": text,
    }  # fmt: skip


def _copies(every: Tally) -> list[str]:
    """Return the distinct copies that held ``transfer`` gaps."""
    held = every.copies.filter(pl.col("cause") == "transfer")["transfer_event"]
    return held.cast(pl.String).unique().sort().to_list()


def _data_loader(every: Tally) -> tuple[int, int] | None:
    """Return the idle time inside a DataLoader's ``__next__`` and the gaps it lies in, or
    None where there is none."""
    if LOADER not in every.has:
        return None
    ns = int(every.sums["loader_ns"].cast(pl.Int128).sum())
    return (ns, int(every.sums["loader_gaps"].sum())) if ns else None


def _per_op(
    every: Tally, neuron: bool, top: int, frames: bool, vendor: str
) -> list[dict[str, Any]]:
    """Return a hint for each of the ``top`` ops with the most idle before them."""
    split = [c for c in HOST_HINTS if c in every.has]
    names = pl.col("transfer_event").unique().sort().cast(pl.String).str.join(", ")
    copies = every.copies.group_by("next_op", "cause").agg(copies=names)
    per = (
        every.sums.lazy()
        .filter(pl.col("next_op").is_not_null())
        .group_by("next_op", "cause")
        .agg(
            *(pl.col(c).sum() for c in split),
            loading_ns=pl.col("loader_ns").sum(),
            compiled_ns=pl.col("compiled_ns").sum(),
            idle_ns=pl.col("idle_ns").sum(),
            gaps=pl.col("n").sum(),
        )
        .sort("idle_ns", "next_op", "cause", descending=[True, False, False])
        .unique("next_op", keep="first", maintain_order=True)
        .head(top)
        .join(copies.lazy(), on=["next_op", "cause"], how="left", maintain_order="left")
        .with_columns(pl.col("copies").fill_null(""))
        .collect()
    )
    named = {k: _most_held(every, k) for k in HELD}
    out = []
    for r in per.to_dicts():
        op, c = r["next_op"], r["cause"]
        text = cause_hint(c, neuron, vendor)
        kinds = r["copies"].split(", ") if r["copies"] else []
        if c == "transfer" and not neuron and (said := copy_hint(kinds)):
            text = f"{r['copies']} ({_times(r['gaps'])}): {said}"
        elif c == "transfer" and r["copies"]:
            what = (
                "a host tensor (a CPU-side scalar such as the epsilon?)" if neuron else "a tensor"
            )
            text = (
                f"{what} is copied to the device before it ({r['copies']}; "
                f"{_times(r['gaps'])}): create it on the device once"
            )
        elif c == "host_dispatch" and split:
            text = _late_hint(r, split, named, op, frames, vendor)
        out.append(
            {"op": op, "cause": c, "idle_ns": int(r["idle_ns"]), "gaps": r["gaps"], "hint": text}
        )
    return out


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _late_hint(
    r: dict[str, Any],
    split: list[str],
    named: dict[str, dict[str, tuple[str, int, str | None]]],
    op: str,
    frames: bool,
    vendor: str = "cuda",
) -> str:
    """Return the hint for an op launched late: the DataLoader, torch.compile's own code
    (a compiled region or a Dynamo or Inductor frame), or the call or Python frame that held
    the host for most of the idle before it, where one did, else where the host's late time
    went. ``vendor``: the executions' source (the graphs it replays: ``GRAPHS``)."""
    idle = r["idle_ns"]
    if 2 * r["loading_ns"] > idle:
        return (
            f"launched late; {duration(r['loading_ns'])} of it inside the DataLoader's "
            f"__next__: {LOADER_HINT}"
        )
    frame = named["host_frame"].get(op)
    if 2 * r["compiled_ns"] > idle or (
        frame and 2 * frame[1] > idle and re.search(COMPILED_FRAME, frame[0])
    ):
        where = (
            f"{duration(frame[1])} of it in {frame[0]}"
            if frame and re.search(COMPILED_FRAME, frame[0])
            else f"{duration(r['compiled_ns'])} of it inside a Torch-Compiled Region"
        )
        graphs = GRAPHS.get(vendor, "fewer, larger compiled regions")
        return f"launched late; {where}: {COMPILED_HINT.format(graphs=graphs)}"
    if (call := named["host_call"].get(op)) and 2 * call[1] > idle:
        return f"launched late; {duration(call[1])} of it in {call[0]}: {call_hint(call[0])}"
    if frame and 2 * frame[1] > idle:
        caller = f" (called from {frame[2]})" if frame[2] else ""
        return (
            f"launched late; {duration(frame[1])} of it in the Python frame {frame[0]}{caller}: "
            "the code that runs there, between the launches"
        )
    most = max(split, key=lambda k: r[k] or 0)
    where = HOST_HINTS[most]
    if frames and most == "host_untraced_ns":
        where = "Python between ops"
    return f"launched late; the host was mostly in {where}"


def _most_held(every: Tally, column: str) -> dict[str, tuple[str, int, str | None]]:
    """Return per op (``next_op``) of its host_dispatch gaps the call or frame (``column``:
    ``host_call`` or ``host_frame``) that held the host longest over them all: its name, that
    time, and the frame's caller (the most common one, then the first by name; None for
    calls)."""
    if column not in every.held:
        return {}
    held = every.held[column]
    if column == "host_frame":
        callers = (
            held.sort("n", "host_caller", descending=[True, False], nulls_last=True)
            .group_by("next_op", column, maintain_order=True)
            .agg(caller=pl.col("host_caller").first())
        )
    else:
        callers = held.select("next_op", column).unique().with_columns(caller=pl.lit(None))
    most = (
        held.group_by("next_op", column)
        .agg(pl.col("ns").sum())
        .join(callers, on=["next_op", column], how="left", nulls_equal=True)
        .sort("ns", column, descending=[True, False])
        .unique("next_op", keep="first", maintain_order=True)
        .select("next_op", column, "ns", "caller")
    )
    return {op: (name, ns, c) for op, name, ns, c in most.iter_rows()}


def run_hints(
    every: Tally, events: pl.DataFrame, neuron: bool, vendor: str
) -> tuple[dict[str, Any], ...]:
    """Return the next steps of a run (``hints``; ``every`` device gap, tallied), told from
    its ``events`` whether it records Python frames and whether it is an inference step
    launched kernel by kernel."""
    frames, inference = _has_frames(events), _inference(events)
    return tuple(hints(every, neuron, frames=frames, vendor=vendor, inference=inference))


# A backward pass (a training step), and a graph replayed (the host launches graphs already).
TRAINING = r"(Backward|^autograd::engine::evaluate_function)"
REPLAYS = r"^(cuda|hip)GraphLaunch"


def _inference(events: pl.DataFrame) -> bool:
    """Whether the run is an inference step launched kernel by kernel: framework ops, none
    of them a backward pass, and no graph replayed (docs/gaps.md, "Next steps")."""
    names = events["name"]
    ops = events["lane_kind"] == "framework_op"
    return bool(
        ops.any()
        and not events.select(matching(names, TRAINING).any()).item()
        and not events.select(matching(names, REPLAYS).any()).item()
    )


def _has_frames(events: pl.DataFrame) -> bool:
    """Whether the run records Python frames (``with_stack=True``: ``python_function``)."""
    return bool((events["category"] == "python_function").any())
