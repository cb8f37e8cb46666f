"""Many ranks: each device's time per step broken down, communication against compute, the
ranks' clocks compared, and the rank the others wait for (docs/distributed.md).

Definitions:
- **Work**, its **kind** (compute, communication, memory) and the device's **states**
  (compute, exposed communication, memory alone, idle) are ``analyses/states.py``'s, the same
  as ``traceana gaps`` reads.
- A piece of work belongs to the **step** its launch ran in (the launching runtime call's
  ProfilerStep, else its own start's): the device may run behind the host.
- A device's **window** for a step is the step's span on its rank's host, extended to the
  end of the last work launched in it (``states.step_end``, as ``traceana gaps --step``
  extends its window). Without ProfilerStep annotations it is the device's first start to
  its last end, step null. All the work that runs in a window counts in its breakdown,
  whichever step launched it: where the device runs behind the host, consecutive windows
  overlap, and the work of the step before is what the device was doing.
- The **breakdown** of a window is its time in each state (``states.breakdown``), with the
  communication time in all and its **overlap** with compute; the four states add up to the
  window.
- **Collectives** (collectives.py, matching.py): each collective piece of work with its kind,
  process group, size and place in its group, matched across ranks by (group, seq), else by
  name (the n-th of each name); per matched collective its skew, latency, waits and
  bandwidths, per group the totals and the worst.
- **Clocks**: a collective ends on every rank at once, so one collective matched on a rank
  and on the first rank ends at the same instant there; a rank's offset is the median of
  those differences, and is taken off its times before ranks are compared
  (``offset_from`` ``collectives``). Without collectives in common, ranks whose steps share
  a number are compared on their own clocks, each offset measured on the step's start
  (``steps``, applied only where the ranks' hosts differ: a shared host has one clock, and
  a late start is what is to be found). Ranks with neither are not compared.
- The **straggler** of a step is the rank the others wait for: with collectives, the one
  that spent the least time in exposed communication; without, the one with the longest
  window. ``behind_ns``: the other ranks' median wait (or window) less its own; it
  ``computes more`` when its compute exceeds the others' median by more than its step
  started after theirs, it ``started late`` when the other way round, and neither when it
  has no more compute and no later start than they (its collectives took less, say).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from trace_analyzer.analyses import states
from trace_analyzer.analyses.busy import device_of, window_of
from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.analyses.states import kind_of, launched, on_device
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import matching

STEP = r"^ProfilerStep#(\d+)$"
# Offsets measured on step starts are applied only across hosts; on collectives always.
STEP_COLUMNS = {
    "rank": pl.Int64,
    "pid": pl.Int64,
    "device": pl.String,
    "step": pl.Int64,
    "start_ns": pl.Int64,
    "window_ns": pl.Int64,
    "compute_ns": pl.Int64,
    "communication_ns": pl.Int64,
    "overlap_ns": pl.Int64,
    "exposed_communication_ns": pl.Int64,
    "memory_ns": pl.Int64,
    "idle_ns": pl.Int64,
}


@dataclass(frozen=True, repr=False)
class RanksResult(RunResult):
    """The ranks of one run: ``ranks`` (each with its clock offset), ``steps`` (per rank,
    device and step: the window and its breakdown, ns), ``stragglers`` (per step), ``notes``
    (what could not be compared, and why), ``collectives`` (each matched across ranks),
    ``collective_groups`` (per process group) and ``collective_links`` (per pair of ranks
    that sent to each other)."""

    root: str
    ranks: pl.DataFrame
    steps: pl.DataFrame
    stragglers: pl.DataFrame
    notes: tuple[str, ...] = ()
    collectives: pl.DataFrame = field(default_factory=pl.DataFrame)
    collective_groups: pl.DataFrame = field(default_factory=pl.DataFrame)
    collective_links: pl.DataFrame = field(default_factory=pl.DataFrame)

    csv_table = "steps"

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "ranks": self.ranks.to_dicts(),
            "steps": self.steps.to_dicts(),
            "stragglers": self.stragglers.to_dicts(),
            "notes": list(self.notes),
            "collectives": self.collectives.to_dicts(),
            "collective_groups": self.collective_groups.to_dicts(),
            "collective_links": self.collective_links.to_dicts(),
        }

    def main_frame(self) -> pl.DataFrame:
        return self.steps

    def summary_rows(self) -> list[tuple[str, object]]:
        slow = self.stragglers.head(1).to_dicts()
        return [
            ("run", self.root),
            ("ranks", self.ranks.height),
            ("steps", self.steps["step"].n_unique() if self.steps.height else 0),
            ("straggler", slow[0]["rank"] if slow else None),
        ]

    def __repr__(self) -> str:
        return frame_repr("RanksResult", run=self.root, ranks=self.ranks, steps=self.steps)


def ranks(profile: Profile, *, step: int | None = None) -> RanksResult:
    """Return the ranks of one run (``profile``) compared; ``step``: that ProfilerStep only.

    The run read whole is one part of ``per_rank.combine`` (``per_rank.rank_part``); a run
    read a rank at a time gives the same result from a part per file."""
    from trace_analyzer.questions.ranks.per_rank import combine, rank_part

    return combine([rank_part(profile, step=step)], root=profile.name, step=step)


def without_args(events: pl.DataFrame) -> bool:
    """Whether ``events`` were read with no args at all (``load(args=False)``)."""
    n = events.height
    return events["args_json"].null_count() == n and events["args_at"].null_count() == n


def work(events: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Return the device work of ``events`` (``states.on_device``; its kind:
    ``states.kind_of``): its event_id, pid, device, name, start, end, kind and step (of its
    launch); with its ``lane``, ``source`` and ``launch`` (the launching event's id, null
    when none is linked)."""
    rows = events.filter(on_device(events))
    if rows.is_empty():
        return pl.DataFrame(
            schema={"event_id": pl.Int64, "pid": pl.Int64, "device": pl.String, "name": pl.String,
                    "start_ns": pl.Int64, "end_ns": pl.Int64, "kind": pl.String,
                    "step": pl.Int64, "lane": pl.String, "source": pl.String,
                    "launch": pl.Int64}
        )  # fmt: skip
    return (
        launched(rows, events, edges)
        .select(
            "event_id",
            "pid",
            "start_ns",
            "end_ns",
            device=device_of(pl.col("lane")),
            name=pl.col("name").cast(pl.String),
            kind=kind_of(rows),
            step="step",
            lane=pl.col("lane").cast(pl.String),
            source=pl.col("source").cast(pl.String),
            launch="launch",
        )
        .filter(pl.col("end_ns") > pl.col("start_ns"))
    )


def work_in_step(events: pl.DataFrame, edges: pl.DataFrame, step: int | None) -> pl.DataFrame:
    """Return ``work`` of ``events``; ``step``: only the work launched in that ProfilerStep (a
    UsageError naming the run's steps when it has none such)."""
    if step is not None:
        window_of(events, step=step)  # a step the run lacks is a usage error naming its steps
    done = work(events, edges)
    return done if step is None else done.filter(pl.col("step") == step)


def step_windows(events: pl.DataFrame, done: pl.DataFrame) -> pl.DataFrame:
    """Return per pid, device and step the window: the step's span on the pid's host,
    extended to its work's last end (``start_ns``, ``end_ns``); without steps, the device's
    span (step null)."""
    host = pl.col("source") == "framework"  # not a GPU's copy of the annotation
    steps = events.filter(matching(events["name"], STEP) & host).select(
        "pid",
        step=pl.col("name").cast(pl.String).str.extract(STEP).cast(pl.Int64, strict=False),
        s0="start_ns",
        s1="end_ns",
    )
    spans = done.group_by("pid", "device", "step").agg(
        w0=pl.col("start_ns").min(), w1=pl.col("end_ns").max()
    )
    stepped = spans.join(steps, on=["pid", "step"], how="inner").select(
        "pid", "device", "step", start_ns="s0", end_ns=pl.max_horizontal("s1", "w1")
    )
    stepless = set(done["pid"].unique().to_list()) - set(steps["pid"].unique().to_list())
    alone = (
        done.filter(pl.col("pid").is_in(list(stepless)))
        .group_by("pid", "device")
        .agg(start_ns=pl.col("start_ns").min(), end_ns=pl.col("end_ns").max())
        .with_columns(step=pl.lit(None, pl.Int64))
        .select("pid", "device", "step", "start_ns", "end_ns")
    )
    return pl.concat([stepped, alone])


def breakdown(done: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Return per window its compute, communication, overlap, exposed communication, memory
    and idle time (ns; ``states.breakdown``; ``shares`` adds the percentages)."""
    key = ["pid", "device", "step"]
    return states.breakdown(states.clip(done, windows, key[:2]), windows, key)


def shares() -> list[pl.Expr]:
    """The breakdown's parts as % of the window, and the overlap as % of communication (HTA's
    comm/comp overlap)."""
    of = pl.col("window_ns").cast(pl.Float64)
    parts = ("compute", "exposed_communication", "memory", "idle")
    comm = pl.col("communication_ns").cast(pl.Float64)
    return [
        *((100 * pl.col(f"{p}_ns") / of).round(2).alias(f"{p}_pct") for p in parts),
        pl.when(comm > 0).then((100 * pl.col("overlap_ns") / comm).round(2)).alias("overlap_pct"),
    ]


def who(events: pl.DataFrame) -> pl.DataFrame:
    """Return per pid its rank and host."""
    return (
        events.filter(pl.col("pid").is_not_null())
        .group_by("pid")
        .agg(rank=pl.col("rank").drop_nulls().first(), host=pl.col("host").drop_nulls().first())
        .with_columns(pl.col("host").cast(pl.String))
    )


def _why(extra_compute: int, late_start: int) -> str:
    """Return why a straggler is behind: the larger of its extra compute and its late start,
    or neither when it has no more of either than the others."""
    if max(extra_compute, late_start) <= 0:
        return "neither: no more compute, no later start"
    return "computes more" if extra_compute >= late_start else "started late"


def _median(column: pl.Series) -> int:
    """Return a column's median as a whole number of ns (the lower of two middle values'
    mean, rounded down), in integers: polars' median is a float, which holds an epoch time
    in ns only to 256 ns (a step start 250 µs late came out 250.064 µs late)."""
    values: list[int] = sorted(int(v) for v in column.to_list() if v is not None)
    if not values:
        return 0
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) // 2


def stragglers(table: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """Return per step with two ranks or more the rank the others wait for (module doc)."""
    schema = {
        "step": pl.Int64, "rank": pl.Int64, "pid": pl.Int64, "ranks": pl.UInt32,
        "wait_ns": pl.Int64, "others_wait_ns": pl.Int64, "behind_ns": pl.Int64,
        "extra_compute_ns": pl.Int64, "late_start_ns": pl.Int64, "why": pl.String,
    }  # fmt: skip
    per = (
        table.filter(pl.col("step").is_not_null())
        .group_by("step", "rank", "pid")
        .agg(
            window_ns=pl.col("window_ns").max(),
            compute_ns=pl.col("compute_ns").sum(),
            wait_ns=pl.col("exposed_communication_ns").sum(),
            comm_ns=pl.col("communication_ns").sum(),
            start_ns=pl.col("start_ns").min(),
        )
    )
    rows = []
    for (step,), group in per.sort("step", "rank", "pid").group_by("step", maintain_order=True):
        if group.height < 2:
            continue
        collectives = group["comm_ns"].sum() > 0
        measure = "wait_ns" if collectives else "window_ns"
        slow = group.sort(measure, descending=not collectives).row(0, named=True)
        others = group.filter(pl.col("pid") != slow["pid"])
        median = {c: _median(others[c]) for c in (measure, "compute_ns", "start_ns")}
        extra, late = (
            slow["compute_ns"] - median["compute_ns"],
            slow["start_ns"] - median["start_ns"],
        )
        rows.append(
            {
                "step": step, "rank": slow["rank"], "pid": slow["pid"], "ranks": group.height,
                "wait_ns": slow[measure], "others_wait_ns": median[measure],
                "behind_ns": abs(median[measure] - slow[measure]),
                "extra_compute_ns": extra, "late_start_ns": late,
                "why": _why(extra, late),
            }
        )  # fmt: skip
    if not rows and per["pid"].n_unique() > 1:
        notes.append("no ProfilerStep is on two ranks: no straggler per step")
    return pl.DataFrame(rows, schema=schema)
