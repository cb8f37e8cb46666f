"""A loaded profile: one run's sources read into one events table, duplicates removed.

When a run holds the same events twice, one copy is kept (docs/formats.md, "Duplicates"):
- Explorer Parquet and legacy JSON of the same process: the Parquet rows;
- framework events in trace.json and in an Explorer export: trace.json's (it keeps the Kineto
  categories and args; Explorer's copy is derived from it);
- device events of a Neuron trace.json and Explorer's ``neuron_hw`` lane: Explorer's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from .discover import Run, discover, pb_hint
from .errors import UsageError
from .readers import ReadResult, read_source
from .schema import check_events, empty_events

FRAMEWORK_KINDS = ("framework_op", "framework_dispatch", "framework_stream", "annotation")
MODEL_NTFF = re.compile(r"^(\d+)_instid_(\d+)_vnc_(\d+)\.ntff$")
MODEL_NEFF = re.compile(r"^neff_(\d+)\.neff$")


@dataclass
class Profile:
    """One run: its sources, its events table, and what was noticed on the way."""

    run: Run
    events: pl.DataFrame
    reads: list[ReadResult]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    pairs: list[dict] = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.run.root


def load_runs(path: str | Path) -> list[Profile]:
    """Return every run found under ``path``, each loaded."""
    return [load_run(run) for run in discover(path)]


def load(path: str | Path) -> Profile:
    """Return the one run under ``path``; several runs are a UsageError (use load_runs)."""
    runs = discover(path)
    if len(runs) > 1:
        names = ", ".join(str(r.root) for r in runs[:3]) + (", ..." if len(runs) > 3 else "")
        raise UsageError(f"{path}: {len(runs)} runs found ({names}); name one of them")
    return load_run(runs[0])


def load_run(run: Run) -> Profile:
    """Read every source of one run and return the profile."""
    reads = [r for r in (read_source(s) for s in run.sources) if r is not None]
    events, notes = deduplicate(reads)
    events, dropped = check_events(events)
    events = events.sort("start_ns", "end_ns").with_columns(
        event_id=pl.int_range(pl.len(), dtype=pl.Int64)
    )
    profile = Profile(run=run, events=events, reads=reads, notes=notes, dropped=dropped)
    for r in reads:
        profile.warnings.extend(r.warnings)
    if dropped:
        detail = ", ".join(f"{n} with {why}" for why, n in dropped.items())
        profile.warnings.append(f"{run.root}: malformed events dropped: {detail}")
    for path, why in run.skipped:
        profile.notes.append(f"{path}: {why}")
    profile.pairs = neff_pairs(run, profile.warnings)
    _raw_without_export(run, reads, profile.warnings)
    return profile


def deduplicate(reads: list[ReadResult]) -> tuple[pl.DataFrame, list[str]]:
    """Return the union of the reads' events with the duplicate copies removed, and notes."""
    frames = [r.events.with_columns(_fmt=pl.lit(r.format)) for r in reads if r.read and len(r.events)]
    if not frames:
        return empty_events(), []
    df = pl.concat(frames)
    notes: list[str] = []

    def pids(fmt: str, cond: pl.Expr) -> list[int]:
        return df.filter((pl.col("_fmt") == fmt) & cond)["pid"].unique().drop_nulls().to_list()

    def drop(cond: pl.Expr, what: str) -> None:
        nonlocal df
        n = df.filter(cond).height
        if n:
            df = df.filter(~cond)
            notes.append(f"{n} {what}")

    fmt = pl.col("_fmt")
    parquet_pids = pids("explorer-parquet", pl.lit(True))
    drop((fmt == "explorer-json") & pl.col("pid").is_in(parquet_pids),
         "events of the legacy JSON export also in the Parquet export: kept the Parquet copy")
    kineto_fw = pids("kineto-json", pl.col("lane_kind").is_in(FRAMEWORK_KINDS))
    drop(fmt.str.starts_with("explorer") & (pl.col("source") == "framework")
         & pl.col("pid").is_in(kineto_fw),
         "framework events of the Explorer export also in trace.json: kept trace.json's")
    hw_pids = pids("explorer-parquet", pl.col("source") == "neuron_hw") + pids(
        "explorer-json", pl.col("source") == "neuron_hw")
    drop((fmt == "kineto-json") & (pl.col("source") == "privateuse1")
         & pl.col("pid").is_in(hw_pids),
         "device events of trace.json also on Explorer's neuron_hw lanes: kept Explorer's")
    return df.drop("_fmt"), notes


def neff_pairs(run: Run, warnings: list[str]) -> list[dict]:
    """Return the NEFF/NTFF files of a run, paired by numeric hash in model mode.

    Session-mode NTFFs (``profile_nc_<n>_session_<s>.ntff``) hold every execution on a core
    and have no 1:1 NEFF; they are listed with ``mode: session``.
    """
    neffs = {m[1]: p for p in run.neffs if (m := MODEL_NEFF.match(p.name))}
    pairs = []
    for ntff in run.ntffs:
        m = MODEL_NTFF.match(ntff.name)
        if m is None:
            pairs.append({"ntff": str(ntff), "neff": None, "mode": "session"})
            continue
        neff = neffs.get(m[1])
        pairs.append({"ntff": str(ntff), "neff": str(neff) if neff else None, "mode": "model"})
        if neff is None:
            warnings.append(f"{ntff}: no neff_{m[1]}.neff beside it; model-mode NTFF and NEFF "
                            "must share the numeric hash")
    paired = {p["neff"] for p in pairs}
    pairs += [{"ntff": None, "neff": str(p), "mode": None} for p in run.neffs if str(p) not in paired]
    return pairs


def _raw_without_export(run: Run, reads: list[ReadResult], warnings: list[str]) -> None:
    has_export = any(r.format.startswith("explorer") and r.read for r in reads)
    if has_export:
        return
    for folder in sorted({p.parent for p in run.raw if p.name == "ntrace.pb"}):
        warnings.append(pb_hint(folder))
