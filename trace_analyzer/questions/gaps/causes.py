"""Why the hardware was idle: each gap's neighbours, its next op, and one cause.

Every gap's cause comes from ``cause()``, the one place the rules live (docs/gaps.md, "The gap
model"); the numbers that decide it are columns of the gap row (``gap_evidence.py`` adds the
host's time split and the sentence that says it).
"""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from trace_analyzer.analyses.busy import Window, device_of, once_each
from trace_analyzer.analyses.states import COLLECTIVE_NAMES, kind_of, placed_in
from trace_analyzer.model.schema import by_row, matching
from trace_analyzer.questions.gaps.evidence import Typical, covered, host_split, launches
from trace_analyzer.questions.gaps.host import long_launch
from trace_analyzer.questions.gaps.tally import Tally
from trace_analyzer.questions.gaps.waits import device_side, waited

CAUSES = (
    "host_dispatch",
    "launch_blocked",
    "event_wait",
    "launch_latency",
    "transfer",
    "sync",
    "graph",
    "collective",
    "runtime",
    "uncorrelated",
    "other",
)
# A transfer or sync explains a gap when it covers at least this share of it.
COVER_SHARE = 0.5
UNLINKED = "(unlinked)"
# A kernel queued before the previous one ended that starts within this much of its end
# waited only for the device's own launch latency (HTA's kernel_wait). Set from the corpus:
# docs/gaps.md, "launch_latency".
LATENCY_NS = 5_000
# Where a gap's copies and syncs must run to explain it: its own stream, or its NeuronCore
# (Neuron's host-side copies sit on the runtime lane of the core they feed).
NEURON_CORE = r"/neuron_(?:hw|rt)/NC:?(\d+)(?::\d+)?$"


def cause(latency_ns: int = LATENCY_NS) -> pl.Expr:
    """Return the cause of each gap; every rule is here, in order of precedence.

    Columns used: ``comm_lane`` (the gap's lane carries communication kernels),
    ``neuron`` (the next execution is a Neuron one), ``transfer_ns`` and ``sync_ns`` (how much
    of the gap a copy or a device-side synchronisation on the gap's own stream or core
    covers), ``launch_ns`` (when the host launched the next execution: its runtime launch or
    PrivateUse1 dispatch, else its op's start), ``launch_call_ns`` (the launch call's own time
    inside the gap) and ``launch_typical_ns`` (the run's median launch call), ``same_graph``
    (both executions come from one graph launch), ``next_collective`` (the next execution is a
    communication kernel).
    """
    gap = pl.col("duration_ns")
    covers = pl.col("transfer_ns") >= COVER_SHARE * gap
    held = waited(latency_ns)
    return (
        pl.when(pl.col("comm_lane"))
        .then(pl.lit("collective"))
        # On Neuron the runtime copies host tensors on the host while it submits the next
        # execution (nrt_tensor_write between schedule and submit): the copy is the wait.
        .when(pl.col("neuron") & covers)
        .then(pl.lit("transfer"))
        .when(pl.col("launch_ns").is_null())
        .then(pl.lit("uncorrelated"))
        # The next execution is queued only when its launch call returns: a call that held
        # most of the gap, far longer than a launch takes here, is what the device waited on.
        .when((pl.col("launch_call_ns") >= COVER_SHARE * gap) & long_launch(latency_ns))
        .then(pl.lit("launch_blocked"))
        # launched after the lane fell idle, and not then held on the device (waits.py)
        .when((pl.col("launch_ns") >= pl.col("start_ns")) & ~held)
        .then(pl.lit("host_dispatch"))
        .when(pl.col("same_graph"))
        .then(pl.lit("graph"))
        .when(gap <= latency_ns)
        .then(pl.lit("launch_latency"))
        .when(covers)
        .then(pl.lit("transfer"))
        .when(pl.col("sync_ns") >= COVER_SHARE * gap)
        .then(pl.lit("sync"))
        # queued, then held on the device while a collective ran on its other lanes
        .when(held & (2 * pl.col("comm_ns") >= pl.col("device_wait_ns")))
        .then(pl.lit("collective"))
        .when(held & pl.col("wait_call").is_not_null())
        .then(pl.lit("event_wait"))
        .when(pl.col("next_collective"))
        .then(pl.lit("collective"))
        .otherwise(pl.lit("runtime"))
    )


# The annotation PyTorch records around each batch a DataLoader hands the training loop.
DATA_LOADER = r"^enumerate\(DataLoader\)#.*__next__$"


def _loads(events: pl.DataFrame) -> pl.DataFrame:
    """The DataLoader's ``__next__`` calls of ``events``: pid, start, end, name."""
    return (
        events.lazy()
        .filter(matching(events["name"], DATA_LOADER))
        .select("pid", "start_ns", "end_ns", "name")
        .collect()
    )


COMPILED = r"^Torch-Compiled Region"  # torch.compile's annotation of a compiled frame's run


def in_compiled(gaps: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Return ``gaps`` with ``host_compiled_ns``: how much of each lies inside a
    ``Torch-Compiled Region`` in the gap's process (torch.compile's own code ran then:
    Dynamo's guards, Inductor's generated wrapper before its launches); null where the run
    records no compiled region."""
    regions = (
        events.lazy()
        .filter(matching(events["name"], COMPILED))
        .select("pid", "start_ns", "end_ns", "name")
        .collect()
    )
    if regions.is_empty():
        return gaps.with_columns(host_compiled_ns=pl.lit(None, pl.Int64))
    return covered(gaps, regions, "host_compiled", by="pid", last_event=False)


def in_data_loader(gaps: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Return ``gaps`` with ``host_data_loader_ns``: how much of each lies inside a
    DataLoader's ``__next__`` in the gap's process (the device waited while the host fetched
    a batch); null where the run records no DataLoader. On a device's gaps ``idle_in_loader``
    then takes off the time the device copied or communicated meanwhile."""
    loads = _loads(events)
    if loads.is_empty():
        return gaps.with_columns(host_data_loader_ns=pl.lit(None, pl.Int64))
    return covered(gaps, loads, "host_data_loader", by="pid", last_event=False)


def idle_in_loader(gaps: pl.DataFrame, apart: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Return a device's ``gaps`` (``host_data_loader_ns`` and their states: ``states.within``)
    with ``host_data_loader_ns`` the idle inside a DataLoader's ``__next__``: its time less
    that of the instants the device copied or communicated in it (``apart``: ``states.alone``)
    that the DataLoader covers as well."""
    if apart.is_empty() or gaps.is_empty() or gaps["host_data_loader_ns"].is_null().all():
        return gaps
    placed = placed_in(gaps, apart, "device")
    busy = covered(placed, _loads(events), "busy_loader", by="pid", last_event=False)
    per = busy.group_by("device", start_ns="gap_start").agg(pl.col("busy_loader_ns").sum())
    return (
        gaps.join(per, on=["device", "start_ns"], how="left", maintain_order="left")
        .with_columns(
            host_data_loader_ns=pl.col("host_data_loader_ns")
            - pl.col("busy_loader_ns").fill_null(0)
        )
        .drop("busy_loader_ns")
    )


def core_of(lane: pl.Expr) -> pl.Expr:
    """Return the place a lane's copies and syncs count for: a GPU stream lane as it is, a
    Neuron lane (runtime or hardware) as its process and NeuronCore."""
    return lane.cast(pl.String).str.replace(NEURON_CORE, "/NC$1")


def comm_lanes(events: pl.DataFrame) -> pl.DataFrame:
    """Return the hardware lanes that carry communication: most of their executions are
    NCCL/RCCL kernels or Neuron collectives (one column, ``lane``)."""
    hw = events.lazy().filter(pl.col("lane_kind") == "hardware").select("lane", "name").collect()
    share = hw.group_by("lane").agg(comm=matching(hw["name"], COLLECTIVE_NAMES).mean())
    return share.filter(pl.col("comm") >= 0.5).select("lane")


def _in_window(w: Window) -> pl.Expr:
    """An execution overlapping the window, or a zero-length one inside it (edges too)."""
    overlaps = (pl.col("end_ns") > w.start_ns) & (pl.col("start_ns") < w.end_ns)
    point = (pl.col("start_ns") == pl.col("end_ns")) & pl.col("start_ns").is_between(
        w.start_ns, w.end_ns
    )
    return overlaps | point


class Hardware(NamedTuple):
    """The executions of a run as the gaps read them (``hardware``)."""

    clipped: pl.DataFrame  # those in the window, clipped to it, with their device and kind
    keys: pl.DataFrame  # each lane and its device
    other: pl.DataFrame  # the work in the window that is not compute: collectives, copies, sets
    neuron: bool  # whether any is a Neuron core's
    vendor: str  # the source most of them come from: cuda, rocm, mtia, neuron_hw, ...


def hardware(hw: pl.DataFrame, copies: pl.DataFrame, w: Window) -> Hardware:
    """Return ``Hardware`` of the executions ``hw`` (the gaps' columns of the hardware
    events, their category among them) and the device copies ``copies`` (the same columns)
    in the window ``w``: each with its device and kind (``states.kind_of``)."""

    def clip(rows: pl.DataFrame) -> pl.DataFrame:
        inside = rows.filter(_in_window(w))
        out = inside.select(
            "event_id",
            "lane",
            "pid",
            start_ns=pl.col("start_ns").clip(w.start_ns),
            end_ns=pl.col("end_ns").clip(upper_bound=w.end_ns),
            kind=kind_of(inside),
        )
        return out.with_columns(device=once_each(out["lane"], device_of))

    clipped = clip(hw)
    compute = pl.col("kind") == "compute"
    other = pl.concat(  # ``execution``: a hardware execution, not a copy
        [
            clipped.filter(~compute).with_columns(execution=pl.lit(True)),
            clip(copies).with_columns(execution=pl.lit(False)),
        ]
    )
    keys = hw.select("lane").unique()
    keys = keys.with_columns(device=once_each(keys["lane"], device_of))
    vendor = hw["source"].cast(pl.String).mode().sort().first() if hw.height else None
    return Hardware(
        clipped, keys, other, bool(hw["source"].eq("neuron_hw").any()), str(vendor or "")
    )


def lanes_are_devices(events: pl.DataFrame, all_compute: bool) -> bool:
    """Whether every device's gaps are its lane's, causes and evidence included, so that the
    device pass can take the lane pass's: every execution computes (``all_compute``: no
    collective or memset, which the device's gaps leave out), each device has one hardware
    lane and there is no communication lane, and each copy or sync counts at a device
    exactly when it counts at that device's lane (``attribute`` places them by ``core_of``)."""
    kind = pl.col("lane_kind")
    lanes = events.lazy().filter(kind == "hardware").select("lane").unique().collect()
    lanes = lanes.with_columns(device=device_of(pl.col("lane")))
    if not all_compute or lanes["device"].n_unique() != lanes.height:
        return False
    if not comm_lanes(events).is_empty():
        return False
    marks = events.lazy().filter(kind.is_in(["transfer", "sync"])).select("lane").unique()
    at = marks.collect().select(
        by_device=core_of(device_of(pl.col("lane"))), by_lane=core_of(pl.col("lane"))
    )
    own = lanes.select(by_device=core_of(pl.col("device")), by_lane=core_of(pl.col("lane")))
    # a mark that counts at a device must count at its lane, and the other way round
    at_device = at.join(own, on="by_device", suffix="_own")
    at_lane = at.join(own, on="by_lane", suffix="_own")
    return bool(
        (at_device["by_lane"] == at_device["by_lane_own"]).all()
        and (at_lane["by_device"] == at_lane["by_device_own"]).all()
    )


def attribute(
    gaps: pl.DataFrame,
    events: pl.DataFrame,
    chain: pl.DataFrame,
    edges: pl.DataFrame,
    key: str = "lane",
    latency_ns: int = LATENCY_NS,
    typical: Typical = None,
) -> pl.DataFrame:
    """Return ``gaps`` (per ``key``: lane or device) with the executions around them, the
    next op, its launch, the numbers its evidence cites and a cause (``evidence`` itself
    null: ``evidence.sentence`` writes it for the rows that are read, ``Worded``);
    ``events``: the run's events, ``chain``: their chains (``chain.chain_table``), ``edges``:
    their links; ``typical``: the run's median launch call, where ``events`` are one rank's
    (``evidence.launches``)."""
    numbered = by_row(events)  # once: a compare of every event's id
    launch = launches(events, edges, numbered, typical)
    out = _neighbours(gaps, events, chain, launch, numbered)
    out = out.with_columns(_dev=once_each(out[key], device_of) if key == "lane" else pl.col(key))
    out = device_side(out, events, COLLECTIVE_NAMES, device_of)
    out = out.drop("launch_end_ns", "prev_launch_ns", "_dev")
    out = out.with_columns(_at=once_each(out[key], core_of))

    def place(lane: pl.Expr) -> pl.Expr:  # where a copy or sync counts, at this key
        return core_of(lane if key == "lane" else device_of(lane))

    for kind in ("transfer", "sync"):  # the columns a mark needs, not every event's width
        marks = (
            events.lazy()
            .filter(pl.col("lane_kind") == kind)
            .select("lane", "start_ns", "end_ns", "name")
            .collect()
        )
        marks = marks.with_columns(_at=once_each(marks["lane"], place))
        out = covered(out, marks, kind, by="_at")
    comm = comm_lanes(events)["lane"]
    on_comm = pl.col(key).is_in(comm.implode()) if key == "lane" else pl.lit(False)
    out = out.with_columns(comm_lane=on_comm).with_columns(cause=cause(latency_ns))
    # the evidence a null placeholder in its place: written for the rows read (evidence.Worded)
    unworded = pl.lit(None, pl.String).alias("evidence")
    out = host_split(out, events, numbered)
    out = in_compiled(in_data_loader(out, events), events)
    return out.with_columns(unworded).drop("_at")


def _neighbours(
    gaps: pl.DataFrame,
    events: pl.DataFrame,
    chain: pl.DataFrame,
    launch: pl.DataFrame,
    numbered: bool,
) -> pl.DataFrame:
    """Return ``gaps`` with the names, ops, runtime calls and launches of the executions
    before and after each; ``numbered``: the events are numbered by row (``by_row``)."""
    nxt = chain.select(
        next_event="hw_event_id",
        next_op="op",
        next_runtime="runtime",
        link_method="link_method",
        next_dispatch_ns=pl.coalesce("dispatch_start_ns", "op_start_ns"),
        next_op_event="op_event_id",
    )
    out = (
        _names(gaps, events, numbered)
        .join(nxt, on="next_event", how="left")
        .join(chain.select(prev_event="hw_event_id", prev_op="op"), on="prev_event", how="left")
        .join(launch.rename({"event_id": "next_event"}), on="next_event", how="left")
        .join(
            launch.select(
                prev_event="event_id", prev_launch="launch_event", prev_launch_ns="launch_start_ns"
            ),
            on="prev_event",
            how="left",
        )
    )
    # the launch call's own time inside the gap (the next execution was not queued yet); the
    # horizontal min and max pass a null over: none where no launch call is recorded
    inside = pl.min_horizontal("launch_end_ns", "end_ns") - pl.max_horizontal(
        "launch_start_ns", "start_ns"
    )
    call = pl.when(pl.col("launch_end_ns").is_not_null()).then(inside.clip(lower_bound=0))
    return out.with_columns(
        launch_ns=pl.coalesce("launch_start_ns", "next_dispatch_ns"),
        launch_call_ns=call,
        neuron=(pl.col("next_source") == "neuron_hw").fill_null(False),
        same_graph=(
            pl.col("launch_is_graph") & (pl.col("launch_event") == pl.col("prev_launch"))
        ).fill_null(False),
        next_collective=matching(out["next_name"], COLLECTIVE_NAMES).fill_null(False),
    ).drop("next_source", "prev_launch", "launch_start_ns", "launch_is_graph")


def _names(gaps: pl.DataFrame, events: pl.DataFrame, numbered: bool) -> pl.DataFrame:
    """Return ``gaps`` with the names of the executions around each (``prev_name``,
    ``next_name``) and the next one's source: found by row where the events are numbered by
    row (a gather, not a join against every event), else joined."""
    if numbered:
        name, source = events["name"], events["source"]
        prev, nxt = gaps["prev_event"], gaps["next_event"]
        return gaps.with_columns(
            prev_name=name.gather(prev), next_name=name.gather(nxt), next_source=source.gather(nxt)
        )
    names = events.select("event_id", "name", "source")
    return gaps.join(
        names.select(prev_event="event_id", prev_name="name"), on="prev_event", how="left"
    ).join(
        names.select(next_event="event_id", next_name="name", next_source="source"),
        on="next_event",
        how="left",
    )


def by_op(t: Tally) -> pl.DataFrame:
    """Return per op the idle time before its executions (the run's device gaps, tallied:
    ``tally.tally``), in all and by cause, and the copies that held its ``transfer`` gaps."""
    schema = {
        "op": pl.String,
        "idle_before_ns": pl.Int64,
        "gaps": pl.UInt32,
        **{f"{c}_ns": pl.Int64 for c in CAUSES},
        "transfers": pl.String,
    }
    if not t.gaps:
        return pl.DataFrame(schema=schema)
    op = pl.col("next_op").fill_null(UNLINKED).alias("op")
    per_cause = [
        pl.col("idle_ns").filter(pl.col("cause") == c).sum().alias(f"{c}_ns") for c in CAUSES
    ]
    ops = t.sums.group_by(op).agg(
        pl.col("idle_ns").sum().alias("idle_before_ns"), pl.col("n").sum().alias("gaps"), *per_cause
    )
    names = pl.col("transfer_event").unique().sort().cast(pl.String).str.join(", ")
    transfers = (
        t.copies.filter(pl.col("cause") == "transfer").group_by(op).agg(names.alias("transfers"))
    )
    return (
        ops.join(transfers, on="op", how="left")
        .with_columns(pl.col("transfers").fill_null(""))
        .sort("idle_before_ns", "op", descending=[True, False])
        .cast(schema)  # type: ignore[arg-type]
        .select(list(schema))
    )


STEP = r"^ProfilerStep#(\d+)$"


def by_step(t: Tally) -> pl.DataFrame:
    """Return per ProfilerStep the device gaps before the executions it launched (a gap
    belongs to the step its next execution was launched in; the device may run behind the
    host, past the step's end: ``tally.steps_of``): ``idle_ns``, ``gaps`` and the idle per
    cause (``--by step``). Gaps whose next execution no step launched are left out."""
    schema = {
        "step": pl.Int64,
        "idle_ns": pl.Int64,
        "gaps": pl.UInt32,
        **{f"{c}_ns": pl.Int64 for c in CAUSES},
    }
    placed = t.sums.filter(pl.col("step").is_not_null()) if t.gaps else pl.DataFrame()
    if placed.is_empty():
        return pl.DataFrame(schema=schema)
    per_cause = [
        pl.col("idle_ns").filter(pl.col("cause") == c).sum().alias(f"{c}_ns") for c in CAUSES
    ]
    out = placed.group_by("step").agg(
        pl.col("idle_ns").sum(), pl.col("n").sum().alias("gaps"), *per_cause
    )
    return out.sort("step").cast(schema).select(list(schema))  # type: ignore[arg-type]
