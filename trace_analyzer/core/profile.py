"""A loaded profile: one run's sources read into one events table, duplicates removed.

When a run holds the same events twice, one copy is kept (docs/formats.md, "Duplicates"):
- Explorer Parquet and legacy JSON of the same process: the Parquet rows;
- framework events in trace.json and in an Explorer export: trace.json's (it keeps the Kineto
  categories and args; Explorer's copy is derived from it);
- device events of a Neuron trace.json and Explorer's ``neuron_hw`` lane: Explorer's.
"""

from __future__ import annotations

import contextvars
import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from trace_analyzer import cache
from trace_analyzer.core.link import link
from trace_analyzer.core.schema import check_events, empty_events
from trace_analyzer.errors import InputError, UsageError
from trace_analyzer.inputs.discover import Run, discover, pb_hint
from trace_analyzer.readers import ReadResult, read_source

FRAMEWORK_KINDS = ("framework_op", "framework_dispatch", "framework_stream", "annotation")
MODEL_NTFF = re.compile(r"^(\d+)_instid_(\d+)_vnc_(\d+)\.ntff$")
MODEL_NEFF = re.compile(r"^neff_(\d+)\.neff$")
SESSION_NTFF = re.compile(r"^profile_nc_(\d+)_session_(\d+)\.ntff$")


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
    edges: pl.DataFrame | None = field(default=None, repr=False)  # see links()
    cached: bool = False  # read back from the analysis cache
    cache_ref: cache.Ref | None = field(default=None, repr=False)  # where results may be cached

    @property
    def root(self) -> Path:
        return self.run.root

    def links(self) -> pl.DataFrame:
        """Return the edges table (link.py) of the events, computed once."""
        if self.edges is None:
            self.edges = link(self.events)
        return self.edges


def load_runs(path: str | Path, args: bool = False) -> list[Profile]:
    """Return every run found under ``path``, each loaded."""
    folder = cache.folder_for(path)
    return [load_run(run, args, folder) for run in discover(path)]


def load(path: str | Path, args: bool = False) -> Profile:
    """Return the one run under ``path``; several runs are a UsageError (use load_runs).

    ``args``: keep each Kineto record's args as JSON text in ``args_json`` (Explorer
    exports always keep theirs); off by default, since no analysis reads them.
    """
    runs = discover(path)
    if len(runs) > 1:
        names = ", ".join(str(r.root) for r in runs[:3]) + (", ..." if len(runs) > 3 else "")
        raise UsageError(f"{path}: {len(runs)} runs found ({names}); name one of them")
    return load_run(runs[0], args, cache.folder_for(path))


# --strict: a run with malformed events dropped is an error rather than a warning.
STRICT: contextvars.ContextVar[bool] = contextvars.ContextVar("strict", default=False)


def load_run(run: Run, args: bool = False, cache_folder: Path | None = None) -> Profile:
    """Read every source of one run and return the profile.

    With a ``cache_folder`` (cache.py), an unchanged run is read back from it, and a run
    read afresh is linked and written there. Under ``STRICT``, dropped events raise.
    """
    profile = _load_run(run, args, cache_folder)
    if profile.dropped and STRICT.get():
        detail = ", ".join(f"{n} with {why}" for why, n in profile.dropped.items())
        raise InputError(run.root, f"malformed events dropped (--strict): {detail}")
    return profile


def _load_run(run: Run, args: bool, cache_folder: Path | None) -> Profile:
    k = cache.key(run, args) if cache_folder is not None else None
    if k is not None:
        hit = cache.load(cache_folder, run, args, k)
        if hit is not None:
            profile = _from_cache(run, hit)
            profile.cache_ref = cache.ref(cache_folder, run, args, k)
            return profile
    profile = _read_run(run, args)
    if k is not None and cache.store(
        cache_folder, run, args, k, _cache_meta(profile), profile.events, profile.links()
    ):
        profile.cache_ref = cache.ref(cache_folder, run, args, k)
    return profile


def _cache_meta(p: Profile) -> dict:
    return {
        "reads": cache.reads_meta(p.reads),
        "warnings": p.warnings,
        "notes": p.notes,
        "dropped": p.dropped,
        "pairs": p.pairs,
    }


def _from_cache(run: Run, hit: dict) -> Profile:
    meta = hit["meta"]
    sources = {str(s.path): s for s in run.sources}
    reads = [
        ReadResult(
            source=sources[r["source"]],
            format=r["format"],
            schema_version=r["schema_version"],
            rank=r["rank"],
            rank_origin=r["rank_origin"],
            notes=r["notes"],
            warnings=r["warnings"],
            read=r["read"],
            n_events=r["n_events"],
        )
        for r in meta["reads"]
        if r["source"] in sources
    ]
    return Profile(
        run=run,
        events=hit["events"],
        reads=reads,
        warnings=meta["warnings"],
        notes=meta["notes"],
        dropped=meta["dropped"],
        pairs=meta["pairs"],
        edges=hit["edges"],
        cached=True,
    )


def _read_run(run: Run, args: bool) -> Profile:
    reads = [r for r in (read_source(s, args) for s in run.sources) if r is not None]
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
    frames = [
        r.events.with_columns(_fmt=pl.lit(r.format)) for r in reads if r.read and len(r.events)
    ]
    if not frames:
        return empty_events(), []
    df = pl.concat(frames)
    notes: list[str] = []

    def procs(fmt: str, cond: pl.Expr) -> pl.Expr:
        """Return a mask of rows whose process also has rows of ``fmt`` matching ``cond``.

        A process is (host, pid); a missing host (a trace.json outside a capture folder)
        matches any host with that pid.
        """
        keys = df.filter((pl.col("_fmt") == fmt) & cond).select("host", "pid").unique().rows()
        mask = pl.lit(False)
        for host, pid in keys:
            if pid is None:  # no process to match (comparing with null matches nothing)
                continue
            same_host = pl.col("host").is_null() | (
                pl.lit(host).is_null() if host is None else pl.col("host") == host
            )
            mask = mask | ((pl.col("pid") == pid) & same_host)
        return mask

    def drop(cond: pl.Expr, what: str) -> None:
        nonlocal df
        n = df.filter(cond).height
        if n:
            df = df.filter(~cond)
            notes.append(f"{n} {what}")

    fmt, src = pl.col("_fmt"), pl.col("source")
    drop(
        (fmt == "explorer-json") & procs("explorer-parquet", pl.lit(True)),
        "events of the legacy JSON export also in the Parquet export: kept the Parquet copy",
    )
    drop(
        fmt.str.starts_with("explorer")
        & (src == "framework")
        & procs("kineto-json", pl.col("lane_kind").is_in(FRAMEWORK_KINDS)),
        "framework events of the Explorer export also in trace.json: kept trace.json's",
    )
    drop(
        (fmt == "kineto-json")
        & (src == "privateuse1")
        & (
            procs("explorer-parquet", src == "neuron_hw")
            | procs("explorer-json", src == "neuron_hw")
        ),
        "device events of trace.json also on Explorer's neuron_hw lanes: kept Explorer's",
    )
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
            pairs.append(_unhashed(ntff, run))
            continue
        neff = neffs.get(m[1])
        pairs.append({"ntff": str(ntff), "neff": str(neff) if neff else None, "mode": "model"})
        if neff is None:
            warnings.append(
                f"{ntff}: no neff_{m[1]}.neff beside it; model-mode NTFF and NEFF "
                "must share the numeric hash"
            )
    paired = {p["neff"] for p in pairs}
    pairs += [
        {"ntff": None, "neff": str(p), "mode": None} for p in run.neffs if str(p) not in paired
    ]
    return pairs


def _unhashed(ntff: Path, run: Run) -> dict:
    """Return the entry of an NTFF whose name carries no NEFF hash.

    ``profile_nc_<n>_session_<s>.ntff`` is a session profile (no 1:1 NEFF). Any other name
    (``neuron-explorer capture -s profile.ntff``) is paired with the one NEFF in its folder.
    """
    if SESSION_NTFF.match(ntff.name):
        return {"ntff": str(ntff), "neff": None, "mode": "session"}
    beside = [n for n in run.neffs if n.parent == ntff.parent]
    neff = str(beside[0]) if len(beside) == 1 else None
    return {"ntff": str(ntff), "neff": neff, "mode": "capture"}


def undecoded_hardware(p: Profile) -> bool:
    """Return True when a run's hardware activity sits only in files traceana does not decode."""
    has_export = any(r.format.startswith("explorer") and r.read for r in p.reads)
    return not has_export and bool(p.run.ntffs or any(f.name == "ntrace.pb" for f in p.run.raw))


def _raw_without_export(run: Run, reads: list[ReadResult], warnings: list[str]) -> None:
    has_export = any(r.format.startswith("explorer") and r.read for r in reads)
    if has_export:
        return
    for folder in sorted({p.parent for p in run.raw if p.name == "ntrace.pb"}):
        warnings.append(pb_hint(folder))
