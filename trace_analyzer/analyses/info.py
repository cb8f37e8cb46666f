"""What a path holds: sources, processes, lanes by kind, NEFF/NTFF files, warnings."""

from __future__ import annotations

import polars as pl

from trace_analyzer.analyses.chain import chains, coverage
from trace_analyzer.core.profile import Profile, undecoded_hardware
from trace_analyzer.inputs.capture import read_capture_json

SCHEMA_VERSION = 1


def info(profiles: list[Profile], path: str) -> dict:
    """Return the description of every run, as plain data (the JSON output's shape)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "path": str(path),
        "runs": [run_info(p) for p in profiles],
    }


def run_info(p: Profile) -> dict:
    """Return the description of one loaded run."""
    lanes = lane_table(p.events)
    by_kind: dict[str, list[str]] = {}
    for row in lanes.iter_rows(named=True):
        for kind in row["kinds"]:
            by_kind.setdefault(kind, []).append(row["lane"])
    hardware = len(by_kind.get("hardware", []))
    links = coverage(chains(p.events, p.links()))
    notes = list(p.notes)
    if links["unlinked"]:
        notes.append(
            f"{links['unlinked']} hardware executions reach no framework op; "
            f"`traceana chain {p.root} --unlinked` lists them"
        )
    if not hardware and undecoded_hardware(p):
        notes.append(
            "no hardware lanes read: they are in the NTFF/ntrace.pb files, which need an "
            "Explorer export (see warnings)"
        )
    elif len(p.events) and not hardware:
        notes.append("no hardware lanes: this profile records host activity only")
    ev = p.events
    return {
        "root": str(p.root),
        "layouts": sorted(p.run.layouts),
        "sources": [_source(r) for r in p.reads],
        "processes": _processes(p),
        "events": ev.height,
        "start_ns": ev["start_ns"].min() if ev.height else None,
        "end_ns": ev["end_ns"].max() if ev.height else None,
        "hardware_lanes": hardware,
        "links": links,
        "lanes": lanes.to_dicts(),
        "lanes_by_kind": dict(sorted(by_kind.items())),
        "neff_ntff": p.pairs,
        "captures": [_capture(f) for f in p.run.captures],
        "raw_system_traces": [str(f) for f in p.run.raw],
        "dropped": p.dropped,
        "warnings": p.warnings,
        "notes": notes,
    }


def lane_table(events: pl.DataFrame) -> pl.DataFrame:
    """Return one row per lane: its event kinds, sources, count and time span."""
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


def _capture(path) -> dict:
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


def _source(r) -> dict:
    return {
        "path": str(r.source.path),
        "format": r.format,
        "schema_version": r.schema_version,
        "read": r.read,
        "events": r.count,
        "notes": r.notes,
    }


def _processes(p: Profile) -> list[dict]:
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
        origins = {origin.get(f) for f in row["files"]} - {None}
        row["rank_origin"] = sorted(origins)[0] if row["rank"] is not None and origins else None
        out.append(row)
    return out
