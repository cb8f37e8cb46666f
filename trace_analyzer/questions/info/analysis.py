"""What a path holds: sources, processes, lanes by kind, NEFF/NTFF files, warnings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from trace_analyzer.analyses.absent import no_hardware, nothing_found, undecoded
from trace_analyzer.analyses.results import RunResult, frame_repr
from trace_analyzer.inputs.archive import AnyPath, MemberPath
from trace_analyzer.inputs.capture import read_capture_json
from trace_analyzer.inputs.neff import Pair as Pair  # the NEFF/NTFF pairs info lists (its layout)
from trace_analyzer.inputs.neff import device_export, unpaired
from trace_analyzer.loading.profile import Profile, ReadResult
from trace_analyzer.questions.chain.analysis import chain_table, coverage


@dataclass(frozen=True, repr=False)
class InfoResult(RunResult):
    """What one run holds: its sources, processes, lanes by kind, NEFF/NTFF files, warnings.

    ``lanes``: one row per lane (its event kinds, source, count and span). ``links``: how many
    hardware executions reach an op (``questions.chain.analysis.coverage``). ``details``: the rest
    of the JSON output's fields (layouts, sources, processes, captures, …) as plain data."""

    root: str
    events: int
    hardware_lanes: int
    links: dict[str, Any]
    lanes: pl.DataFrame
    details: dict[str, Any]

    csv_table = "lanes"

    def to_json(self) -> dict[str, Any]:
        d = self.details
        return {
            "root": self.root,
            "layouts": d["layouts"],
            "sources": d["sources"],
            "processes": d["processes"],
            "events": self.events,
            "start_ns": d["start_ns"],
            "end_ns": d["end_ns"],
            "hardware_lanes": self.hardware_lanes,
            "links": self.links,
            "lanes": self.lanes.to_dicts(),
            **{k: d[k] for k in DETAILS_AFTER},
        }

    def main_frame(self) -> pl.DataFrame:
        return self.lanes

    def summary_rows(self) -> list[tuple[str, object]]:
        return [
            ("run", self.root),
            ("events", self.events),
            ("lanes", self.lanes.height),
            ("hardware lanes", self.hardware_lanes),
            ("linked %", self.links.get("linked_pct")),
            ("warnings", len(self.details["warnings"])),
        ]

    def __repr__(self) -> str:
        return frame_repr("InfoResult", run=self.root, events=self.events, lanes=self.lanes)


DETAILS_AFTER = (
    "lanes_by_kind", "neff_ntff", "unpaired", "device_export", "captures", "raw_system_traces",
    "dropped", "warnings", "notes",
)  # fmt: skip


def info(p: Profile) -> InfoResult:
    """Return the description of one loaded run ``p``."""
    lanes = lane_table(p.events)
    by_kind: dict[str, list[str]] = {}
    for row in lanes.iter_rows(named=True):
        for kind in row["kinds"]:
            by_kind.setdefault(kind, []).append(row["lane"])
    hardware = len(by_kind.get("hardware", []))
    links = coverage(chain_table(p.keyed, p.edges))
    ev = p.events
    commands = device_export(p.run, p.pairs, p.has_export)
    details = {
        "layouts": sorted(p.run.layouts),
        "sources": [_source(r) for r in p.reads],
        "processes": _processes(p),
        "start_ns": ev["start_ns"].min() if ev.height else None,
        "end_ns": ev["end_ns"].max() if ev.height else None,
        "lanes_by_kind": dict(sorted(by_kind.items())),
        "neff_ntff": p.pairs,
        "unpaired": unpaired(p.pairs),
        "device_export": commands,
        "captures": [_capture(f) for f in p.run.captures],
        "raw_system_traces": [str(f) for f in p.run.raw],
        "dropped": p.dropped,
        "warnings": p.warnings,
        "notes": _notes(p, links, hardware, commands),
    }
    return InfoResult(p.name, ev.height, hardware, links, lanes, details)


def _notes(p: Profile, links: dict[str, Any], hardware: int, commands: list[str]) -> list[str]:
    notes = list(p.notes) if p.events.height else [nothing_found(p), *p.notes]
    if links["unlinked"]:
        notes.append(
            f"{links['unlinked']} hardware executions reach no framework op; "
            f"`traceana chain {p.root}{_picked(p)} --unlinked` lists them"
        )
    if len(p.events) and not hardware:  # why none (analyses/absent.py), as gaps says it
        notes.append(no_hardware(p, listed=True))
    elif not hardware and p.undecoded_hardware:
        notes.append(undecoded(p, commands, listed=True))
    if commands and isinstance(p.root, MemberPath):
        notes.append(
            f"the export commands name the members of {p.root.archive.path}: "
            "run them in the folder it is extracted to"
        )
    return notes


def _picked(p: Profile) -> str:
    """The option that names a part of a folder of traces recorded apart, for a command."""
    return "" if p.run.part is None else f" --run {p.run.part}"


def lane_table(events: pl.DataFrame) -> pl.DataFrame:
    """Return one row per lane of ``events``: its event kinds, source, count and time span."""
    return (
        events.group_by("lane")
        .agg(
            kinds=pl.col("lane_kind").cast(pl.String).unique().sort(),
            source=pl.col("source").first(),
            events=pl.len(),
            start_ns=pl.col("start_ns").min(),
            end_ns=pl.col("end_ns").max(),
        )
        .with_columns(span_ns=pl.col("end_ns") - pl.col("start_ns"))
        .sort("lane")
    )


def _capture(path: AnyPath) -> dict[str, Any]:
    doc = read_capture_json(path) or {}
    keep = (
        "backend",
        "device",
        "workload",
        "variant",
        "torch_version",
        "torch_neuronx_version",
        "started_at",
        "host",
        "shape",
        "dtype",
        "schedule",
    )
    return {"path": str(path), **{k: doc.get(k) for k in keep}}


def _source(r: ReadResult) -> dict[str, Any]:
    return {
        "path": str(r.source.path),
        "format": r.format,
        "schema_version": r.schema_version,
        "read": r.read,
        "events": r.count,
        "notes": r.notes,
    }


def _processes(p: Profile) -> list[dict[str, Any]]:
    origin = {str(r.source.path): r.rank_origin for r in p.reads}
    if not p.events.height:
        return []
    procs = (
        p.events.group_by("host", "pid")
        .agg(
            rank=pl.col("rank").drop_nulls().first(),
            files=pl.col("file").unique().sort(),
            events=pl.len(),
        )
        .sort("host", "pid", nulls_last=True)
    )
    out = []
    for row in procs.iter_rows(named=True):
        origins = {o for f in row["files"] if (o := origin.get(f)) is not None}
        row["rank_origin"] = sorted(origins)[0] if row["rank"] is not None and origins else None
        out.append(row)
    return out
