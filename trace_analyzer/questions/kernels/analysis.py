"""The kernel breakdown: per rank, the kernels (Neuron: the NEFFs) that took the device's
time, with their count and the spread of their durations (docs/kernels.md).

Definitions:
- The **work** counted is ``distributed.work``'s: every event that occupies a device
  (kernels, memsets, device copies, Neuron executions and collectives), of one **kind**:
  ``communication`` (``COLLECTIVE_NAMES``), ``memory`` (copies and sets) or ``compute``. An
  event of no length is not work.
- A **kernel** row is every piece of work of one name on one rank (and process: ``pid``,
  which keeps two processes apart when the run has no ranks). On Neuron every execution is
  named ``nc_exec_running``, so an execution is named after its NEFF instead (the
  ``model_name`` it carries, in ``neff``): the file's name, after its folder when it has
  one (``MODULE_abc/model.neff``: the compile cache names every NEFF ``model.neff``). One
  Neuron execution on two physical cores (LNC=2, one ``exec_id``) counts once, from the
  first start to the last end.
- ``total_ns`` is the summed durations; ``share_pct`` is it as a share of the rank's summed
  work (not of a window: overlapping kernels add up); ``mean_ns`` the total over the count;
  ``p50_ns`` and ``p95_ns`` polars' ``quantile`` with ``interpolation="linear"`` (between
  the two nearest ranks: numpy's default, what pandas' ``describe`` gives), rounded to the ns.
- ``step``: only the work launched in that ProfilerStep (``distributed.work``'s step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.loading.profile import Profile
from trace_analyzer.questions.ranks.analysis import work_in_step

EXECUTION = "nc_exec_running"  # a Neuron execution: named after its NEFF here
OWNER = ["rank", "pid"]
KERNEL_COLUMNS = {
    "rank": pl.Int64, "pid": pl.Int64, "neff": pl.String, "name": pl.String,
    "kind": pl.String, "count": pl.UInt32, "total_ns": pl.Int64, "share_pct": pl.Float64,
    "mean_ns": pl.Int64, "p50_ns": pl.Int64, "p95_ns": pl.Int64, "max_ns": pl.Int64,
    "min_ns": pl.Int64,
}  # fmt: skip
KIND_COLUMNS = {
    "rank": pl.Int64, "pid": pl.Int64, "kind": pl.String, "count": pl.UInt32,
    "total_ns": pl.Int64, "share_pct": pl.Float64,
}  # fmt: skip
NO_ARGS = (
    "Neuron executions are not told apart by NEFF: their model_name is in the events' args, "
    "not loaded (load with args=True)"
)


@dataclass(frozen=True, repr=False)
class KernelsResult(RunResult):
    """The kernel breakdown of one run: ``kernels`` (per rank and kernel or NEFF: count,
    total, share and durations, ns), ``kinds`` (per rank and kind) and ``notes``."""

    root: str
    step: int | None
    kernels: pl.DataFrame
    kinds: pl.DataFrame
    notes: tuple[str, ...] = ()

    csv_table = "kernels"

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "step": self.step,
            "kernels": self.kernels.to_dicts(),
            "kinds": self.kinds.to_dicts(),
            "notes": list(self.notes),
        }

    def main_frame(self) -> pl.DataFrame:
        return self.kernels

    @property
    def work_ns(self) -> int:
        """The device work of every rank, summed (ns): the kinds' totals."""
        return int(self.kinds["total_ns"].sum())

    def summary_rows(self) -> list[tuple[str, object]]:
        top = self.kernels.sort("total_ns", descending=True, maintain_order=True).head(1).to_dicts()
        return [
            ("run", self.root),
            ("ranks", self.kinds.select(OWNER).n_unique() if self.kinds.height else 0),
            ("kernels", self.kernels.height),
            ("device work (ns)", self.work_ns),
            ("top kernel", top[0]["name"] if top else None),
        ]

    def __repr__(self) -> str:
        return frame_repr("KernelsResult", run=self.root, kernels=self.kernels, kinds=self.kinds)


def kernels(profile: Profile, *, step: int | None = None) -> KernelsResult:
    """Return the kernel breakdown of one run (``profile``); ``step``: the work launched in
    that ProfilerStep only (a UsageError naming the run's steps when it has none such)."""
    events = profile.keyed  # ranks sharing a pid are numbered apart
    done = work_in_step(events, profile.edges, step)
    notes: list[str] = []
    pieces = named(done, events, notes)
    return KernelsResult(
        root=profile.name,
        step=step,
        kernels=per_kernel(pieces),
        kinds=per_kind(pieces),
        notes=tuple(notes),
    )


def named(done: pl.DataFrame, events: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """Return the work ``done`` with its rank, NEFF and the name it is counted under, one row
    per execution (the physical cores of one Neuron execution as one)."""
    extra = events.select(
        "event_id",
        "rank",
        "exec_id",
        neuron=pl.col("source").cast(pl.String) == "neuron_hw",
        neff=pl.col("args_json").str.json_path_match("$.model_name"),
    )
    rows = done.join(extra, on="event_id", how="left")
    neuron = rows.filter(pl.col("neuron"))
    if neuron.height and neuron["neff"].is_null().all():
        notes.append(NO_ARGS)
    neff = pl.when(pl.col("neuron")).then("neff")
    path = neff.str.replace_all(r"\\", "/").str.split("/").list.tail(2).list.join("/")
    rows = rows.with_columns(
        neff=neff,
        name=pl.when(pl.col("neuron") & (pl.col("name") == EXECUTION) & neff.is_not_null())
        .then(path)
        .otherwise("name"),
        key=pl.when(pl.col("neuron") & pl.col("exec_id").is_not_null())
        .then(pl.format("exec:{}:{}", "pid", "exec_id"))
        .otherwise(pl.format("event:{}", "event_id")),
    )
    return rows.group_by("key").agg(
        pl.col("rank", "pid", "neff", "name", "kind").first(),
        start_ns=pl.col("start_ns").min(),
        end_ns=pl.col("end_ns").max(),
    )


def per_kernel(pieces: pl.DataFrame) -> pl.DataFrame:
    """Return one row per rank, process, NEFF, name and kind: count, total, share and the
    spread of the durations (module doc)."""
    if pieces.is_empty():
        return pl.DataFrame(schema=KERNEL_COLUMNS)
    d = pl.col("duration_ns")
    table = (
        pieces.with_columns(duration_ns=pl.col("end_ns") - pl.col("start_ns"))
        .group_by(*OWNER, "neff", "name", "kind")
        .agg(
            count=pl.len(),
            total_ns=d.sum(),
            mean_ns=d.mean().round(0).cast(pl.Int64),
            p50_ns=d.quantile(0.5, interpolation="linear").round(0).cast(pl.Int64),
            p95_ns=d.quantile(0.95, interpolation="linear").round(0).cast(pl.Int64),
            max_ns=d.max(),
            min_ns=d.min(),
        )
        .with_columns(share_pct=_share())
    )
    order = table.sort(  # a named tie-break: the groups come in no order
        *OWNER, "total_ns", "name", "neff", "kind",
        descending=[False, False, True, False, False, False], nulls_last=True,
    )  # fmt: skip
    return order.select(*KERNEL_COLUMNS).cast(KERNEL_COLUMNS)  # type: ignore[arg-type]


def per_kind(pieces: pl.DataFrame) -> pl.DataFrame:
    """Return per rank and process the count, total and share of each kind of work."""
    if pieces.is_empty():
        return pl.DataFrame(schema=KIND_COLUMNS)
    table = (
        pieces.group_by(*OWNER, "kind")
        .agg(count=pl.len(), total_ns=(pl.col("end_ns") - pl.col("start_ns")).sum())
        .with_columns(share_pct=_share())
    )
    order = table.sort(
        *OWNER, "total_ns", "kind", descending=[False, False, True, False], nulls_last=True
    )
    return order.select(*KIND_COLUMNS).cast(KIND_COLUMNS)  # type: ignore[arg-type]


def _share() -> pl.Expr:
    """A row's total as % of its rank's (and process's) summed work, to 2 decimals."""
    whole = pl.col("total_ns").sum().over(OWNER)  # a null rank is one group, as in group_by
    return (100 * pl.col("total_ns") / whole).round(2)
