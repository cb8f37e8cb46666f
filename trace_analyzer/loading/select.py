"""Some ranks of a run: ``--rank N|GLOB`` on every analysing command (docs/distributed.md).

A process's rank is the rank its events carry (Kineto's ``distributedInfo``, a rank in the
file name, Neuron's worker id); a process whose events carry none has no rank and is never
selected. The selected processes' events are numbered again from 0 in their order, as a
loaded run's are (``core/schema.numbered``), and the links between two selected events kept.
"""

from __future__ import annotations

import fnmatch
from dataclasses import replace
from typing import TYPE_CHECKING

import polars as pl

from trace_analyzer.errors import UsageError

if TYPE_CHECKING:
    from trace_analyzer.loading.profile import Profile


def rank_matches(spec: str, rank: int) -> bool:
    """True when ``rank`` is the rank ``spec`` names: a number (``3``, ``03``) or a glob over
    the rank's decimal digits (``1*``, ``[0-3]``, ``?``)."""
    text = spec.strip()
    if text.isdigit():
        return int(text) == rank
    return fnmatch.fnmatchcase(str(rank), text)


def process_ranks(profile: Profile) -> pl.DataFrame:
    """Return each process of ``profile`` (``pid`` as ``keyed`` numbers it) and its rank, the
    first its events carry (null: none)."""
    return (
        profile.keyed.lazy()
        .filter(pl.col("pid").is_not_null())
        .group_by("pid")
        .agg(rank=pl.col("rank").drop_nulls().first())
        .collect()
    )


def ranks_of(profile: Profile) -> list[int]:
    """Return the ranks ``profile`` holds, in order."""
    return sorted(process_ranks(profile)["rank"].drop_nulls().unique().to_list())


def select_ranks(profile: Profile, spec: str) -> Profile:
    """Return ``profile`` with only the processes whose rank ``spec`` names (``rank_matches``).

    Raises a UsageError (``{param}``: ``ranks``) naming the run's ranks when none matches, or
    saying that the run has none."""
    held = ranks_of(profile)
    chosen = [r for r in held if rank_matches(spec, r)]
    if not chosen:
        raise UsageError(f"{{param}} {spec}: {what_it_holds(profile.name, held)}", param="ranks")
    pids = process_ranks(profile).filter(pl.col("rank").is_in(chosen))["pid"]
    keep = profile.keyed.select(pl.col("pid").is_in(pids.implode())).to_series()
    old_ids = profile.events.filter(keep)["event_id"]
    events = profile.events.filter(keep).with_columns(
        event_id=pl.int_range(pl.len(), dtype=pl.Int64)
    )
    new_id = pl.DataFrame({"old": old_ids, "new": events["event_id"]})
    edges = (
        profile.edges.join(new_id.rename({"old": "src", "new": "_src"}), on="src", how="inner")
        .join(new_id.rename({"old": "dst", "new": "_dst"}), on="dst", how="inner")
        .with_columns(src="_src", dst="_dst")
        .select(profile.edges.columns)
    )
    selected = spec if profile.selected is None else f"{profile.selected} & {spec}"
    return replace(profile, events=events, edges=edges, selected=selected)


def select_in_runs(profiles: list[Profile], spec: str) -> list[Profile]:
    """Return each run of ``profiles`` with the ranks ``spec`` names, the runs without any of
    them left out; when no run has one, the first run's UsageError (``select_ranks``)."""
    kept, first_error = [], None
    for p in profiles:
        try:
            kept.append(select_ranks(p, spec))
        except UsageError as e:
            first_error = first_error or e
    if first_error is not None and not kept:
        raise first_error
    return kept


def what_it_holds(name: str, held: list[int]) -> str:
    """What the run ``name``, holding the ranks ``held``, has to say to a --rank none of
    them matches."""
    if not held:
        return (
            f"{name} has no rank numbers (none in distributedInfo, in its file names "
            "or as a Neuron worker id): leave --rank out"
        )
    return f"no rank of {name} matches; it has {', '.join(map(str, held))}"
