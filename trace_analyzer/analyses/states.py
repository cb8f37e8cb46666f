"""One state per device at every instant: computing, communicating only, copying only, idle.

Every command that says how a device spent its time takes it from here (docs/gaps.md, "The
device's states"; docs/distributed.md):

- **Work** is every event on a device lane that keeps it occupied: hardware executions
  (kernels, Neuron executions and collectives, memsets) and device copies. Its **kind** is
  ``communication`` when its name is a collective's (``COLLECTIVE_NAMES``: NCCL and RCCL
  kernels, Neuron's ``cc_running``), ``memory`` for copies (lane kind ``transfer``) and sets
  (``gpu_memset``, ``Memset`` in Kineto's format until 2021), else ``compute``. An event of
  no length is not work.
- Each kind's intervals on a device are merged, those at most ``RESOLUTION_NS`` apart as one
  (the clock's resolution, as the gaps merge them). At each instant the device is in one
  **state**, in this order: ``compute`` (some compute runs), ``exposed_communication``
  (collectives and no compute), ``memory`` (copies or sets alone), else ``idle``. Over a
  window the four add up to it; ``communication_ns`` and ``overlap_ns`` (communication
  beside compute) are counted as well.
"""

from __future__ import annotations

import polars as pl

from trace_analyzer.analyses.busy import Window, merge
from trace_analyzer.model.schema import matching

# Communication kernels: NCCL/RCCL, and Neuron's collectives on the hardware lane.
COLLECTIVE_NAMES = r"(?i)(nccl|rccl|^cc_running$)"
# Busy intervals at most this many ns apart are one: the clock's resolution (docs/gaps.md).
RESOLUTION_NS = 1
KINDS = ("compute", "communication", "memory")
# A memset's category: Kineto's, and that of the format it wrote until 2021.
MEMSETS = ("gpu_memset", "Memset")
# The states, in the order an instant is given to the first that holds.
STATES = ("compute", "exposed_communication", "memory", "idle")
# Where a state's time is summed: the breakdown's columns (``communication`` and ``overlap``
# are measures beside the states, not states).
SUMS = (
    "compute_ns", "communication_ns", "overlap_ns", "exposed_communication_ns", "memory_ns",
)  # fmt: skip


def on_device(events: pl.DataFrame) -> pl.Expr:
    """An event that occupies a device: a hardware execution or a device copy, not a host
    call (the framework's or the Neuron runtime's)."""
    return pl.col("lane_kind").is_in(["hardware", "transfer"]) & ~pl.col("source").is_in(
        ["framework", "neuron_rt"]
    )


def kind_of(rows: pl.DataFrame) -> pl.Expr:
    """The kind of each of ``rows`` (events on a device: ``on_device``): communication,
    memory or compute (module doc)."""
    collective = matching(rows["name"], COLLECTIVE_NAMES)
    memory = (pl.col("lane_kind") == "transfer") | pl.col("category").is_in(MEMSETS)
    return (
        pl.when(collective)
        .then(pl.lit("communication"))
        .when(memory)
        .then(pl.lit("memory"))
        .otherwise(pl.lit("compute"))
    )


def launched(rows: pl.DataFrame, events: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Return ``rows`` (work of ``events``, with their ``step``) with ``launch``, the event that
    launched each (its ``device`` or ``hardware`` link in ``edges``; null where none is
    linked), and ``step`` the ProfilerStep it was launched in (else its own): the device may
    run behind the host."""
    launch = edges.filter(pl.col("hop").is_in(["device", "hardware"])).select(
        event_id="dst", launch="src"
    )
    steps = launch.join(
        events.select(launch="event_id", launch_step="step"), on="launch", how="left"
    )
    return (
        rows.join(steps, on="event_id", how="left")
        .with_columns(step=pl.coalesce("launch_step", "step"))
        .drop("launch_step")
    )


def step_end(events: pl.DataFrame, edges: pl.DataFrame, step: int) -> int | None:
    """Return the end of the last work launched in ProfilerStep#``step`` (``launched``), or
    None where it launched none: a step's window runs to it (docs/gaps.md, "--step")."""
    rows = events.filter(on_device(events) & (pl.col("end_ns") > pl.col("start_ns")))
    done = launched(rows.select("event_id", "step", "end_ns"), events, edges)
    end = done.filter(pl.col("step") == step)["end_ns"].max()
    return None if end is None else int(end)  # type: ignore[arg-type]


def clip(work: pl.DataFrame, windows: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """Return the ``work`` in each of ``windows`` (``on`` and any other key columns, start_ns,
    end_ns), clipped to it: a piece of work counts in every window of its device it
    overlaps, whatever launched it (the device's state is what runs on it)."""
    window = windows.rename({"start_ns": "w0", "end_ns": "w1"})
    return (
        work.drop([c for c in window.columns if c in work.columns and c not in on])
        .join(window, on=on, how="inner", nulls_equal=True)
        .with_columns(
            start_ns=pl.max_horizontal("start_ns", "w0"), end_ns=pl.min_horizontal("end_ns", "w1")
        )
        .filter(pl.col("end_ns") > pl.col("start_ns"))
        .drop("w0", "w1")
    )


def segments(clipped: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """Return the instants of ``clipped`` (work with ``kind``, per ``key``) cut where any
    kind starts or ends: ``key``, start_ns, end_ns (positive), and per kind whether some of
    it runs there (``compute``, ``communication``, ``memory``: booleans). Each kind is
    merged first, at the clock's resolution."""
    pid = [] if "pid" in key else ["pid"]
    merged = [
        merge(
            clipped.filter(pl.col("kind") == k).select(
                *key, *pid, "event_id", "start_ns", "end_ns"
            ),
            key,
            RESOLUTION_NS,
        ).select(*key, "start_ns", "end_ns", kind=pl.lit(k))
        for k in KINDS
    ]
    runs = pl.concat(merged)
    flags = {k: pl.col("kind") == k for k in KINDS}
    edges = pl.concat(
        [
            runs.select(*key, t="start_ns", **{k: f.cast(pl.Int32) for k, f in flags.items()}),
            runs.select(*key, t="end_ns", **{k: -f.cast(pl.Int32) for k, f in flags.items()}),
        ]
    ).sort(*key, "t", nulls_last=True)
    running = edges.with_columns(
        *(pl.col(k).cum_sum().over(key) > 0 for k in KINDS),
        end_ns=pl.col("t").shift(-1).over(key),
    )
    return running.select(*key, pl.col("t").alias("start_ns"), "end_ns", *KINDS).filter(
        pl.col("end_ns") > pl.col("start_ns")
    )


def state_of() -> pl.Expr:
    """The state of a segment (``segments``): the first of STATES that holds."""
    c, m, x = (pl.col(k) for k in KINDS)
    return (
        pl.when(c)
        .then(pl.lit("compute"))
        .when(m)
        .then(pl.lit("exposed_communication"))
        .when(x)
        .then(pl.lit("memory"))
        .otherwise(pl.lit("idle"))
    )


def breakdown(clipped: pl.DataFrame, windows: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """Return ``windows`` (``key``, start_ns, end_ns) with the time of each state in them
    (``SUMS``, ``idle_ns``) and ``window_ns``, from the work ``clipped`` to them (``clip``)."""
    cut = segments(clipped, key).with_columns(length=pl.col("end_ns") - pl.col("start_ns"))
    c, m, x = (pl.col(k) for k in KINDS)
    during = {
        "compute_ns": c,
        "communication_ns": m,
        "overlap_ns": c & m,
        "exposed_communication_ns": m & ~c,
        "memory_ns": x & ~c & ~m,
    }
    sums = cut.group_by(key).agg(
        **{name: pl.col("length").filter(cond).sum() for name, cond in during.items()}
    )
    out = windows.join(sums, on=key, how="left", nulls_equal=True).with_columns(
        pl.col(*during).fill_null(0), window_ns=pl.col("end_ns") - pl.col("start_ns")
    )
    busy = pl.col("compute_ns") + pl.col("exposed_communication_ns") + pl.col("memory_ns")
    return out.with_columns(idle_ns=pl.col("window_ns") - busy)


# The states a gap in a device's compute is made of, besides idle.
APART = ("exposed_communication", "memory")


def alone(compute: pl.DataFrame, other: pl.DataFrame, key: str) -> pl.DataFrame:
    """Return the instants per ``key`` at which ``other`` work (collectives, copies, sets:
    ``key``, pid, event_id, start, end, kind) runs and no compute does: ``key``, start_ns,
    end_ns and its state (``exposed_communication``, ``memory``). ``compute``: the merged
    compute intervals (``busy.merge``: ``key``, pid, first_event, start, end)."""
    columns = [key, "pid", "event_id", "start_ns", "end_ns", "kind"]
    runs = pl.concat(
        [
            compute.select(key, "pid", "start_ns", "end_ns", event_id="first_event")
            .with_columns(kind=pl.lit("compute"))
            .select(columns),
            other.select(columns),
        ]
    )
    cut = segments(runs, [key]).with_columns(state=state_of())
    return cut.filter(pl.col("state").is_in(APART)).select(key, "start_ns", "end_ns", "state")


def totals(apart: pl.DataFrame, key: str) -> pl.DataFrame:
    """Return per ``key`` the time of each state in ``apart`` (``alone``): ``key``,
    exposed_communication_ns, memory_ns."""
    length = pl.col("end_ns") - pl.col("start_ns")
    return apart.group_by(key).agg(
        **{f"{s}_ns": length.filter(pl.col("state") == s).sum() for s in APART}
    )


def placed_in(gaps: pl.DataFrame, apart: pl.DataFrame, key: str) -> pl.DataFrame:
    """Return the instants of ``apart`` (``alone``) that lie in one of ``gaps`` (per ``key``),
    each with its gap's start (``gap_start``) and pid."""
    return (
        apart.sort("start_ns")
        .join_asof(
            gaps.select(key, "pid", gap_start="start_ns", gap_end="end_ns").sort("gap_start"),
            left_on="start_ns",
            right_on="gap_start",
            by=key,
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("end_ns") <= pl.col("gap_end"))
        .drop("gap_end")
    )


def within(gaps: pl.DataFrame, apart: pl.DataFrame, key: str) -> pl.DataFrame:
    """Return ``gaps`` (intervals per ``key`` with no compute) with the time of each state in
    them: exposed_communication_ns, memory_ns, and idle_ns (the rest: nothing at all). Each
    of ``apart``'s instants (``alone``) lies inside one gap or outside all."""
    names = [f"{s}_ns" for s in APART]
    if apart.is_empty() or gaps.is_empty():
        return gaps.with_columns(
            *(pl.lit(0, pl.Int64).alias(n) for n in names), idle_ns=pl.col("duration_ns")
        )
    placed = placed_in(gaps, apart, key)
    parts = placed.group_by(key, "gap_start").agg(
        **{
            f"{s}_ns": (pl.col("end_ns") - pl.col("start_ns")).filter(pl.col("state") == s).sum()
            for s in APART
        }
    )
    out = gaps.join(
        parts.rename({"gap_start": "start_ns"}),
        on=[key, "start_ns"],
        how="left",
        maintain_order="left",
    ).with_columns(pl.col(*names).fill_null(0))
    return out.with_columns(idle_ns=pl.col("duration_ns") - sum(pl.col(n) for n in names))


# A device gap's time by state (``within``); they add up to its duration.
STATE_COLUMNS = ("exposed_communication_ns", "memory_ns", "idle_ns")


def device_states(
    table: pl.DataFrame,
    apart: pl.DataFrame,
    compute: pl.DataFrame,
    other: pl.DataFrame,
    w: Window,
) -> pl.DataFrame:
    """Return the devices' ``table`` (``busy.stats`` of their compute in ``w``) with the time
    each spent communicating alone and copying alone (``exposed_communication_ns``,
    ``memory_ns``, from ``apart``: ``alone``), and its leading, trailing and idle time
    counted as nothing at all: before its first work of any kind, after its last, and
    between (``compute``: the merged compute; ``other``: the rest of the work). So busy,
    exposed communication, memory, idle, leading and trailing add up to the window, and the
    active span runs from the first work to the last. Its ``executions`` are all its hardware
    executions (``other``'s ``execution``), the collectives' and memsets' too."""
    names = [f"{s}_ns" for s in APART]
    if other.is_empty():
        return table.with_columns(*(pl.lit(0, pl.Int64).alias(n) for n in names))
    # the work's edges: the compute's blocks and the instants other work ran alone (merged
    # as the compute is: two instants 1 ns apart are 1 ns of work, one instant is none)
    spans = pl.concat([t.select("device", "start_ns", "end_ns") for t in (compute, apart)])
    edges = spans.group_by("device").agg(
        first_ns=pl.col("start_ns").min(), last_ns=pl.col("end_ns").max()
    )
    ran = other.group_by("device").agg(more=pl.col("execution").sum().cast(pl.Int64))
    out = (
        table.drop("first_ns", "last_ns")
        .join(edges, on="device", how="left")
        .join(
            totals(apart, "device")
            if apart.height
            else pl.DataFrame(schema={"device": pl.String, **dict.fromkeys(names, pl.Int64)}),
            on="device",
            how="left",
        )
        .join(ran, on="device", how="left")
        .with_columns(pl.col(*names).fill_null(0))
        .with_columns(executions=pl.col("executions") + pl.col("more").fill_null(0))
    )
    W = w.duration_ns
    out = out.with_columns(
        leading_ns=(pl.col("first_ns") - w.start_ns).fill_null(W),
        trailing_ns=(w.end_ns - pl.col("last_ns")).fill_null(0),
        active_ns=(pl.col("last_ns") - pl.col("first_ns")).fill_null(0),
    ).with_columns(
        idle_ns=pl.col("window_ns")
        - pl.col("busy_ns")
        - sum(pl.col(n) for n in names)
        - pl.col("leading_ns")
        - pl.col("trailing_ns")
    )
    active, idle = pl.col("active_ns"), pl.col("idle_ns").cast(pl.Float64)
    return out.with_columns(
        idle_pct=(100 * idle / W).round(2) if W else pl.lit(None, pl.Float64),
        active_idle_pct=pl.when(active > 0).then((100 * idle / active).round(2)),
    ).select(*table.columns, *names)
