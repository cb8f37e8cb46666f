"""What a queued execution waited for on the device (docs/gaps.md, "The device's side").

An execution is queued when its launch call returns. Where it then sat queued for most of
its gap (``device_wait_ns``: from the later of the call's end and the moment the lane fell
idle, to its start), the host was not what held it, whenever it was launched: something on
the device was. Two recorded dependencies are looked for:

- **communication** on the same device (``comm_ns``, ``comm_event``): how much of the wait
  (of the gap, where no launch call is recorded) collective kernels on the device's other
  lanes cover (a compute stream made to wait for a collective's stream: exposed
  communication, as ``traceana ranks`` counts it);
- **a stream wait** on the launching thread (``wait_call``, ``wait_call_ns``): the last
  ``cudaStreamWaitEvent``/``hipStreamWaitEvent`` called before the launch and after the
  previous execution's launch, and when, from the moment the lane fell idle.

Where the launch call's end is not recorded (Neuron's dispatch has none) there is no
``device_wait_ns`` and no stream wait, and the gap model is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from trace_analyzer.analyses.busy import once_each
from trace_analyzer.model.schema import matching
from trace_analyzer.questions.gaps.evidence import covered

STREAM_WAITS = r"(?i)^(cuda|hip|cu)StreamWaitEvent"


def waited(latency_ns: int) -> pl.Expr:
    """Whether a gap's next execution sat queued on the device for most of it, and longer
    than ``latency_ns``: then the device, not the host, held it."""
    wait = pl.col("device_wait_ns")
    return ((2 * wait >= pl.col("duration_ns")) & (wait > latency_ns)).fill_null(False)


def device_side(
    gaps: pl.DataFrame,
    events: pl.DataFrame,
    collectives: str,
    device_of: Callable[[pl.Expr], pl.Expr],
) -> pl.DataFrame:
    """Return ``gaps`` (with ``launch_end_ns``, ``prev_launch_ns`` and the launching thread)
    with ``device_wait_ns``, ``comm_ns``, ``comm_event``, ``wait_call`` and ``wait_call_ns``;
    ``collectives``: the regex of communication kernels' names;
    ``device_of``: a lane's device, as the gaps' key says it (``_dev`` is made of ``_key``)."""
    queued = pl.max_horizontal("launch_end_ns", "start_ns")
    out = gaps.with_columns(
        device_wait_ns=pl.when(pl.col("launch_end_ns").is_not_null()).then(
            (pl.col("end_ns") - queued).clip(lower_bound=0)
        ),
        _wait_from=queued,
    )
    out = _communication(out, events, collectives, device_of)
    return _stream_wait(out, events).drop("_wait_from")


def _communication(
    gaps: pl.DataFrame,
    events: pl.DataFrame,
    collectives: str,
    device_of: Callable[[pl.Expr], pl.Expr],
) -> pl.DataFrame:
    """Return ``gaps`` with ``comm_ns`` and ``comm_event``: the time collective kernels on
    the gap's device cover of its wait on the device (of the whole gap where no launch call
    says when the wait began), and the last of them."""
    hw = events.lazy().filter(pl.col("lane_kind") == "hardware")
    marks = (
        hw.filter(matching(events["name"], collectives))
        .select("lane", "start_ns", "end_ns", "name")
        .collect()
    )
    none = {"comm_ns": pl.lit(None, pl.Int64), "comm_event": pl.lit(None, pl.String)}
    if marks.is_empty() or gaps.is_empty():
        return gaps.with_columns(**none)
    marks = marks.with_columns(_dev=once_each(marks["lane"], device_of))
    asked = gaps.select("_dev", "end_ns", start_ns="_wait_from")
    found = covered(asked, marks, "comm", by="_dev")
    return gaps.with_columns(found["comm_ns"], found["comm_event"])


def _stream_wait(gaps: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Return ``gaps`` with ``wait_call`` and ``wait_call_ns``: the last stream wait the
    launching thread called before the launch and after the previous execution's launch
    (else after the gap's start), and when, from the gap's start (negative: before it)."""
    calls = (
        events.lazy()
        .filter((pl.col("lane_kind") == "runtime") & matching(events["name"], STREAM_WAITS))
        .select(_pid="pid", _tid="tid", _at="start_ns", _call=pl.col("name").cast(pl.String))
        .sort("_at")
        .collect()
    )
    none = {"wait_call": pl.lit(None, pl.String), "wait_call_ns": pl.lit(None, pl.Int64)}
    if calls.is_empty() or gaps.is_empty():
        return gaps.with_columns(**none)
    probes = (
        gaps.select(
            _pid="launch_pid",
            _tid="launch_tid",
            _t=pl.col("launch_ns") - 1,
            _from=pl.coalesce("prev_launch_ns", "start_ns"),
            _g0="start_ns",
            _ok=pl.col("device_wait_ns").is_not_null(),
        )
        .with_row_index("_g")
        .sort("_t")
        .join_asof(calls, left_on="_t", right_on="_at", by=["_pid", "_tid"], check_sortedness=False)
        .sort("_g")
    )
    hit = pl.col("_ok") & (pl.col("_at") >= pl.col("_from"))
    return gaps.with_columns(
        wait_call=probes.select(pl.when(hit).then("_call")).to_series(),
        wait_call_ns=probes.select(pl.when(hit).then(pl.col("_at") - pl.col("_g0"))).to_series(),
    )


# The launch latency measured from the trace (docs/gaps.md, "launch_latency"): the delay of
# each queued back-to-back start on a lane, up to this long (a longer one waited for more
# than the device's own latency), from this many of them at least.
QUEUED_CAP_NS = 100_000
QUEUED_LEAST = 20


def launch_latency(
    hw: pl.DataFrame, events: pl.DataFrame, edges: pl.DataFrame, floor_ns: int
) -> int:
    """Return the launch-latency threshold of a run on GPUs: 1.5 × the median delay of its
    queued back-to-back starts (``queued``), and at least ``floor_ns``; ``floor_ns`` where
    fewer than ``QUEUED_LEAST`` were queued. ``hw``: the run's hardware executions (event_id,
    lane, start, end, and ``kind``: the compute ones count)."""
    return latency_of(queued(hw, events, edges), floor_ns)


def latency_of(delays: pl.Series, floor_ns: int) -> int:
    """Return ``launch_latency`` from the queued delays ``delays`` (a run's, or its ranks'
    together)."""
    if delays.len() < QUEUED_LEAST:
        return floor_ns
    median = delays.median()
    return max(floor_ns, round(1.5 * float(median)))  # type: ignore[arg-type]


def queued(hw: pl.DataFrame, events: pl.DataFrame, edges: pl.DataFrame) -> pl.Series:
    """Return the delay of each queued back-to-back start of ``hw``: an execution whose launch
    call returned before the previous one on its lane ended, started that long after that
    end, up to ``QUEUED_CAP_NS``."""
    launch = edges.filter(pl.col("hop").is_in(["device", "hardware"])).select(
        event_id="dst", call="src"
    )
    ends = events.select(call="event_id", call_end="end_ns")
    runs = (
        hw.filter(pl.col("kind") == "compute")
        .select("event_id", "lane", "start_ns", "end_ns")
        .sort("lane", "start_ns", "end_ns")
        .with_columns(prev_end=pl.col("end_ns").cum_max().shift(1).over("lane"))
        .join(launch, on="event_id", how="inner")
        .join(ends, on="call", how="inner")
    )
    delay = pl.col("start_ns") - pl.col("prev_end")
    return runs.filter(
        (pl.col("call_end") < pl.col("prev_end")) & delay.is_between(0, QUEUED_CAP_NS)
    ).select(delay=delay)["delay"]
