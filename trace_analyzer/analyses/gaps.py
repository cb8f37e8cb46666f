"""Idle gaps on the hardware lanes, each attributed to the op that ended it and to a cause.

Definitions (docs/gaps.md):
- A hardware lane is one execution resource (a physical NeuronCore, a GPU stream); a device is
  the union of its lanes (a logical NeuronCore, a GPU).
- Busy is the union of the hardware executions in the window, overlaps merged. A gap is the
  time between two consecutive busy intervals. Idle before the first and after the last busy
  interval is leading and trailing idle, reported apart, not gaps. So, per lane or device:
  busy + idle + leading + trailing = window, and idle % = idle / window.
- Every gap's cause comes from ``cause()``, the one place the rules live.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from trace_analyzer import cache
from trace_analyzer.analyses.chain import chains
from trace_analyzer.analyses.rows import Rows
from trace_analyzer.core.link import link
from trace_analyzer.errors import UsageError
from trace_analyzer.units import failed, glob_regex

CAUSES = ("host_dispatch", "transfer", "sync", "runtime", "uncorrelated", "other")
# A transfer or sync explains a gap when it covers at least this share of it.
COVER_SHARE = 0.5
SYNC_NAMES = r"(?i)synchroni[sz]e"
UNLINKED = "(unlinked)"


@dataclass(frozen=True)
class Window:
    start_ns: int
    end_ns: int
    origin: str  # "hardware span", "ProfilerStep#3", "--window"

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


def cause() -> pl.Expr:
    """Return the cause of each gap; every rule is here, in order of precedence.

    Columns used: transfer_ns and sync_ns (how much of the gap a host<->device transfer or a
    synchronisation covers), next_op (the framework op the next execution links to) and
    next_dispatch_ns (when the host dispatched it: the PrivateUse1 dispatch or runtime launch,
    else the op's start).
    """
    gap = pl.col("duration_ns")
    return (
        pl.when(pl.col("transfer_ns") >= COVER_SHARE * gap)
        .then(pl.lit("transfer"))
        .when(pl.col("sync_ns") >= COVER_SHARE * gap)
        .then(pl.lit("sync"))
        .when(pl.col("next_op").is_null())
        .then(pl.lit("uncorrelated"))
        .when(pl.col("next_dispatch_ns") >= pl.col("start_ns"))
        .then(pl.lit("host_dispatch"))
        .when(pl.col("next_dispatch_ns") < pl.col("start_ns"))
        .then(pl.lit("runtime"))
        .otherwise(pl.lit("other"))
    )


def window_of(
    events: pl.DataFrame, *, step: int | None = None, span: tuple[int, int] | None = None
) -> Window | None:
    """Return the analysis window: one ProfilerStep, an offset span, or the hardware span.

    ``span`` is (start, end) in ns after the run's first event. None when nothing ran on
    hardware and no step or span was asked for.
    """
    if step is not None:
        s = events.filter(pl.col("name") == f"ProfilerStep#{step}")
        if s.is_empty():
            raise UsageError(f"no ProfilerStep#{step} in this profile")
        return Window(s["start_ns"].min(), s["end_ns"].max(), f"ProfilerStep#{step}")
    if span is not None:
        origin = events["start_ns"].min()
        if span[1] <= span[0]:
            raise UsageError("--window START:END needs START < END")
        return Window(origin + span[0], origin + span[1], "--window")
    hw = events.filter(pl.col("lane_kind") == "hardware")
    if hw.is_empty():
        return None
    return Window(hw["start_ns"].min(), hw["end_ns"].max(), "hardware span")


def device_of(lane: pl.Expr) -> pl.Expr:
    """Return the device label of a lane: its NeuronCore (NC<lnc>) or GPU, without the stream."""
    return lane.str.replace(r"/stream:[^/]+$", "").str.replace(r"(/neuron_hw/NC\d+):\d+$", "$1")


def merge(iv: pl.DataFrame, key: str) -> pl.DataFrame:
    """Return the union of intervals per key: start, end, first and last event, event count."""
    iv = iv.sort(key, "start_ns", "end_ns")
    reach = pl.col("end_ns").cum_max().shift(1).over(key)
    block = (pl.col("start_ns") > reach).fill_null(True).cast(pl.Int32).cum_sum().over(key)
    pid = [] if key == "pid" else [pl.col("pid").first()]
    return (
        iv.with_columns(block=block)
        .group_by(key, "block", maintain_order=True)
        .agg(
            pl.col("start_ns").min(),
            pl.col("end_ns").max(),
            *pid,
            first_event=pl.col("event_id").first(),
            last_event=pl.col("event_id").sort_by("end_ns").last(),
            events=pl.len(),
        )
        .drop("block")
    )


def between(merged: pl.DataFrame, key: str) -> pl.DataFrame:
    """Return the gaps between consecutive busy intervals of each key."""
    return (
        merged.sort(key, "start_ns")
        .with_columns(
            gap_end=pl.col("start_ns").shift(-1).over(key),
            next_event=pl.col("first_event").shift(-1).over(key),
        )
        .filter(pl.col("gap_end").is_not_null())
        .select(
            key,
            "pid",
            start_ns="end_ns",
            end_ns="gap_end",
            prev_event="last_event",
            next_event="next_event",
        )
        .with_columns(duration_ns=pl.col("end_ns") - pl.col("start_ns"))
    )


def covered(gaps: pl.DataFrame, marks: pl.DataFrame, name: str) -> pl.DataFrame:
    """Return gaps with ``<name>_ns``: how much of each gap the mark intervals cover (per pid),
    and ``<name>_event``: the name of the last mark that starts before the gap ends."""
    if marks.is_empty():
        return gaps.with_columns(
            pl.lit(0, pl.Int64).alias(f"{name}_ns"), pl.lit(None, pl.String).alias(f"{name}_event")
        )
    m = (
        merge(marks, "pid")
        .sort("pid", "start_ns")
        .with_columns(length=pl.col("end_ns") - pl.col("start_ns"))
    )
    m = m.with_columns(before=(pl.col("length").cum_sum() - pl.col("length")).over("pid"))

    def upto(t: str) -> pl.DataFrame:  # covered time from the pid's first mark up to t
        probe = gaps.with_row_index("_g").select("_g", "pid", t=pl.col(t)).sort("t")
        hit = probe.join_asof(
            m.sort("start_ns"), left_on="t", right_on="start_ns", by="pid", check_sortedness=False
        )
        value = pl.col("before") + (pl.col("t") - pl.col("start_ns")).clip(0, pl.col("length"))
        return hit.select("_g", value.fill_null(0).alias("c")).sort("_g")

    cover = (upto("end_ns")["c"] - upto("start_ns")["c"]).alias(f"{name}_ns")
    last = (
        gaps.with_row_index("_g")
        .sort("end_ns")
        .join_asof(
            marks.select("pid", "start_ns", "end_ns", "name").sort("start_ns"),
            left_on="end_ns",
            right_on="start_ns",
            by="pid",
            suffix="_m",
            check_sortedness=False,
        )
        .sort("_g")
        .select(
            pl.when(pl.col("end_ns_m") > pl.col("start_ns"))
            .then(pl.col("name"))
            .alias(f"{name}_event")
        )
    )
    return gaps.with_columns(cover, last.to_series())


def attribute(gaps: pl.DataFrame, events: pl.DataFrame, chain: pl.DataFrame) -> pl.DataFrame:
    """Return gaps with the executions around them, the next op, its dispatch, and a cause."""
    names = events.select("event_id", "name")
    nxt = chain.select(
        next_event="hw_event_id",
        next_op="op",
        next_runtime="runtime",
        link_method="link_method",
        next_dispatch_ns=pl.coalesce("dispatch_start_ns", "op_start_ns"),
    )
    kind = pl.col("lane_kind")
    transfers = events.filter(kind == "transfer")
    syncs = events.filter(
        (kind == "sync")
        | (
            kind.is_in(["runtime", "framework_op", "framework_dispatch"])
            & pl.col("name").str.contains(SYNC_NAMES)
        )
    )
    out = (
        gaps.join(
            names.rename({"event_id": "prev_event", "name": "prev_name"}),
            on="prev_event",
            how="left",
        )
        .join(
            names.rename({"event_id": "next_event", "name": "next_name"}),
            on="next_event",
            how="left",
        )
        .join(nxt, on="next_event", how="left")
        .join(chain.select(prev_event="hw_event_id", prev_op="op"), on="prev_event", how="left")
    )
    out = covered(out, transfers, "transfer")
    out = covered(out, syncs, "sync")
    return out.with_columns(cause=cause())


def stats(
    merged: pl.DataFrame, gaps: pl.DataFrame, keys: pl.DataFrame, key: str, w: Window
) -> pl.DataFrame:
    """Return per key: busy, idle, leading, trailing, idle %, executions, gap statistics.

    ``gaps`` are the gaps that count (at least --min-gap long); idle counts all of them.
    """
    busy = merged.group_by(key).agg(
        busy_ns=(pl.col("end_ns") - pl.col("start_ns")).sum(),
        first_ns=pl.col("start_ns").min(),
        last_ns=pl.col("end_ns").max(),
        executions=pl.col("events").sum(),
    )
    g = gaps.group_by(key).agg(
        gap_count=pl.len(),
        gap_p50_ns=pl.col("duration_ns").quantile(0.5, "linear"),
        gap_p90_ns=pl.col("duration_ns").quantile(0.9, "linear"),
        gap_p99_ns=pl.col("duration_ns").quantile(0.99, "linear"),
        gap_max_ns=pl.col("duration_ns").max(),
    )
    out = keys.join(busy, on=key, how="left").join(g, on=key, how="left")
    W = w.duration_ns
    out = out.with_columns(
        pl.col("busy_ns", "executions", "gap_count").fill_null(0),
        leading_ns=(pl.col("first_ns") - w.start_ns).fill_null(W),
        trailing_ns=(w.end_ns - pl.col("last_ns")).fill_null(0),
        window_ns=pl.lit(W, pl.Int64),
    ).with_columns(
        idle_ns=pl.col("window_ns")
        - pl.col("busy_ns")
        - pl.col("leading_ns")
        - pl.col("trailing_ns")
    )
    return (
        out.with_columns(
            idle_pct=(100 * pl.col("idle_ns") / W).round(2) if W else pl.lit(None, pl.Float64),
            *(
                pl.col(c).round(0).cast(pl.Int64)
                for c in ("gap_p50_ns", "gap_p90_ns", "gap_p99_ns")
            ),
        )
        .drop("first_ns", "last_ns")
        .sort(key)
    )


def by_op(device_gaps: pl.DataFrame) -> pl.DataFrame:
    """Return per op the idle time before its executions (device gaps), in all and by cause."""
    if device_gaps.is_empty():
        return pl.DataFrame(
            schema={
                "op": pl.String,
                "idle_before_ns": pl.Int64,
                "gaps": pl.UInt32,
                **{f"{c}_ns": pl.Int64 for c in CAUSES},
            }
        )
    per_cause = [
        pl.col("duration_ns").filter(pl.col("cause") == c).sum().alias(f"{c}_ns") for c in CAUSES
    ]
    evidence = (
        pl.col("transfer_event")
        .filter(pl.col("cause") == "transfer")
        .drop_nulls()
        .unique()
        .sort()
        .str.join(", ")
        .alias("transfers")
    )
    return (
        device_gaps.group_by(op=pl.col("next_op").fill_null(UNLINKED))
        .agg(
            pl.col("duration_ns").sum().alias("idle_before_ns"),
            pl.len().alias("gaps"),
            *per_cause,
            evidence,
        )
        .sort("idle_before_ns", "op", descending=[True, False])
    )


@dataclass
class GapsResult:
    """The gaps of one run: window, per-lane and per-device statistics, gaps, per-op idle."""

    window: Window | None
    lanes: pl.DataFrame
    devices: pl.DataFrame
    gaps: pl.DataFrame  # per lane, attributed
    device_gaps: pl.DataFrame  # per device (union of lanes), attributed
    ops: pl.DataFrame
    summary: dict
    chain: pl.DataFrame | None = None  # the chains the gaps were attributed with (reuse them)


FRAMES = ("lanes", "devices", "gaps", "device_gaps", "ops")


def gaps(
    profile,
    *,
    step: int | None = None,
    span: tuple[int, int] | None = None,
    min_gap_ns: int = 0,
    lanes: str | None = None,
) -> GapsResult:
    """Return the idle gaps of one run (a Profile, or its events table).

    A profile loaded with the analysis cache keeps its result there, per set of options.
    """
    ref = getattr(profile, "cache_ref", None)
    options = {"step": step, "span": span, "min_gap_ns": min_gap_ns, "lanes": lanes}
    if ref is not None:
        hit = cache.load_result(ref, "gaps", options)
        if hit is not None:
            meta, frames = hit
            w = meta["window"]
            return GapsResult(
                window=None if w is None else Window(**w), summary=meta["summary"], **frames
            )
    result = _gaps(profile, step=step, span=span, min_gap_ns=min_gap_ns, lanes=lanes)
    if ref is not None and result.summary["executions"]:
        w = result.window
        cache.store_result(
            ref,
            "gaps",
            options,
            {
                "window": None
                if w is None
                else {"start_ns": w.start_ns, "end_ns": w.end_ns, "origin": w.origin},
                "summary": result.summary,
            },
            {f: getattr(result, f) for f in FRAMES},
        )
    return result


def _gaps(profile, *, step, span, min_gap_ns, lanes) -> GapsResult:
    events = getattr(profile, "events", profile)
    hw = events.filter(pl.col("lane_kind") == "hardware")
    if min_gap_ns < 0:
        raise UsageError("--min-gap must not be negative")
    if lanes:
        hw = hw.filter(pl.col("lane").str.contains(glob_regex(lanes)))
        if hw.is_empty():
            raise UsageError(f"no hardware lane matches --lane {lanes!r}")
    w = window_of(events, step=step, span=span)
    if w is None or hw.is_empty():
        return _empty(w)
    # In the window: an execution overlapping it, or a zero-length one inside it (edges too).
    inside = ((pl.col("end_ns") > w.start_ns) & (pl.col("start_ns") < w.end_ns)) | (
        (pl.col("start_ns") == pl.col("end_ns"))
        & pl.col("start_ns").is_between(w.start_ns, w.end_ns)
    )
    clipped = (
        hw.filter(inside)
        .select(
            "event_id",
            "lane",
            "pid",
            start_ns=pl.col("start_ns").clip(w.start_ns),
            end_ns=pl.col("end_ns").clip(upper_bound=w.end_ns),
        )
        .with_columns(device=device_of(pl.col("lane")))
    )
    chain = chains(events, profile.links() if hasattr(profile, "links") else link(events))
    keys = hw.select("lane", device=device_of(pl.col("lane"))).unique()
    parts = {}
    for key in ("lane", "device"):
        merged = merge(clipped.select(key, "pid", "event_id", "start_ns", "end_ns"), key)
        found = attribute(between(merged, key), events, chain)
        if key == "lane":
            found = found.join(keys, on="lane", how="left")
        kept = found.filter(pl.col("duration_ns") >= max(min_gap_ns, 1))
        parts[key] = (
            stats(merged, kept, keys.select(key).unique(), key, w),
            kept.sort("start_ns", key),
            found,
        )
    lanes_t = parts["lane"][0].join(keys, on="lane", how="left")
    devices_t, device_gaps, all_device_gaps = parts["device"]
    # Idle sums (per cause, per op) count every gap, as idle does; --min-gap trims lists only.
    return GapsResult(
        window=w,
        lanes=lanes_t,
        devices=devices_t,
        gaps=parts["lane"][1],
        device_gaps=device_gaps,
        ops=by_op(all_device_gaps),
        summary=_summary(devices_t, device_gaps, all_device_gaps, lanes_t.height),
        chain=chain,
    )


def _summary(
    devices: pl.DataFrame, device_gaps: pl.DataFrame, all_gaps: pl.DataFrame, n_lanes: int
) -> dict:
    """Return the totals over devices: what --fail-on and the verdict read."""
    total = {
        c: int(devices[c].sum())
        for c in (
            "busy_ns",
            "idle_ns",
            "leading_ns",
            "trailing_ns",
            "window_ns",
            "executions",
            "gap_count",
        )
    }
    d = device_gaps["duration_ns"]

    def q(p: float) -> int | None:
        return int(round(d.quantile(p, "linear"))) if len(d) else None

    by_cause = {c: int(all_gaps.filter(pl.col("cause") == c)["duration_ns"].sum()) for c in CAUSES}
    return {
        **total,
        "idle_pct": round(100 * total["idle_ns"] / total["window_ns"], 2)
        if total["window_ns"]
        else None,
        "gap_p50_ns": q(0.5),
        "gap_p90_ns": q(0.9),
        "gap_p99_ns": q(0.99),
        "gap_max_ns": int(d.max()) if len(d) else None,
        "idle_by_cause_ns": by_cause,
        "devices": devices.height,
        "lanes": n_lanes,
    }


def _empty(w: Window | None) -> GapsResult:
    none = pl.DataFrame()
    summary = {
        "busy_ns": 0,
        "idle_ns": 0,
        "leading_ns": 0,
        "trailing_ns": 0,
        "window_ns": 0,
        "executions": 0,
        "gap_count": 0,  # the window × 0 devices
        "idle_pct": None,
        "gap_p50_ns": None,
        "gap_p90_ns": None,
        "gap_p99_ns": None,
        "gap_max_ns": None,
        "idle_by_cause_ns": dict.fromkeys(CAUSES, 0),
        "devices": 0,
        "lanes": 0,
    }
    return GapsResult(
        window=w,
        lanes=none,
        devices=none,
        gaps=none,
        device_gaps=none,
        ops=by_op(none),
        summary=summary,
    )


# --fail-on metrics, read from a run's summary (µs for people, like the reports).
METRICS = {
    "idle_pct": "idle % of the window (gaps only; leading and trailing idle apart)",
    "busy_us": "busy time",
    "idle_us": "idle time in gaps",
    "leading_us": "leading idle",
    "trailing_us": "trailing idle",
    "gap_count": "number of gaps",
    "executions": "executions",
    "gap_p50_us": "median gap",
    "gap_p90_us": "90th percentile gap",
    "gap_p99_us": "99th percentile gap",
    "gap_max_us": "longest gap",
    **{f"idle_{c}_us": f"idle time in gaps caused by {c}" for c in CAUSES},
}


def metrics(summary: dict) -> dict:
    """Return the --fail-on metrics of a summary (None where there is nothing to measure)."""

    def us(ns: int | None) -> float | None:
        return None if ns is None else ns / 1000

    out = {
        "idle_pct": summary["idle_pct"],
        "gap_count": summary["gap_count"],
        "executions": summary["executions"],
    }
    for name in ("busy", "idle", "leading", "trailing", "gap_p50", "gap_p90", "gap_p99", "gap_max"):
        out[f"{name}_us"] = us(summary[f"{name}_ns"])
    for c, ns in summary["idle_by_cause_ns"].items():
        out[f"idle_{c}_us"] = us(ns)
    return out


def to_dict(r: GapsResult, root: str) -> dict:
    """Return one run's gaps as plain data: the JSON output's shape (docs/gaps.md)."""
    w = r.window
    return {
        "root": root,
        "window": None
        if w is None
        else {
            "start_ns": w.start_ns,
            "end_ns": w.end_ns,
            "duration_ns": w.duration_ns,
            "origin": w.origin,
        },
        "summary": r.summary,
        "devices": r.devices.to_dicts(),
        "lanes": r.lanes.to_dicts(),
        "gaps": Rows(r.gaps),
        "device_gaps": Rows(r.device_gaps),
        "ops": r.ops.to_dicts(),
    }


def gaps_result(profiles: list, path: str, *, conditions=(), **options) -> dict:
    """Return the ``gaps`` result of every run, with the --fail-on conditions that failed."""
    runs = []
    for p in profiles:
        run = to_dict(gaps(p, **options), str(p.root))
        run["failed"] = failed(list(conditions), metrics(run["summary"]))
        runs.append(run)
    return {
        "schema_version": 1,
        "path": str(path),
        "min_gap_ns": options.get("min_gap_ns", 0),
        "runs": runs,
    }
