"""An Explorer export whose clock is off its trace.json's is put back onto it (docs/formats.md,
"Layouts and runs").

A Neuron run read with its Explorer export holds the framework events twice: trace.json's, and
Explorer's copies of them (docs/formats.md, "Duplicates"). The copies should start when the
originals do; Explorer keeps the runtime and hardware events, trace.json the framework ops, so
an export whose clock is off (a host clock stepped between capture and export, a timezone
applied to epoch times) puts every op hours before or after the executions it launched: hop
latencies turn negative, the flow ids the copies carry reach no event (they are matched within
a microsecond), and gaps change cause. The offset is measured on the copies themselves: the
k-th copy of an op in a process is matched with the k-th original of the same name and lane
kind, wherever in time they lie, and the median of the differences is the export's offset.
When it is larger than the matching tolerance the export's events are shifted onto
trace.json's clock, with a warning that says by how much. With no copy to match, nothing is
said and nothing moved.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from trace_analyzer.loading.clocks import far_words
from trace_analyzer.readers import ReadResult

# The framework lanes Explorer copies from trace.json (loading/profile.py FRAMEWORK_KINDS).
COPIED_KINDS = ("framework_op", "framework_dispatch", "framework_stream", "annotation")
TOLERANCE_NS = 1_000  # trace.json's µs with three decimals against Explorer's ns


def align_exports(reads: list[ReadResult]) -> tuple[list[ReadResult], list[str], list[str]]:
    """Return ``reads`` with each Explorer export whose clock is off trace.json's shifted onto
    it, the warnings that say by how much, and the notes that say what moved.

    An export of several processes whose offsets differ (hosts with clocks of their own) is
    shifted process by process, each by its own offset; a process with nothing to match
    takes the export's offset, where one holds for most of its matches. A run with no
    export has nothing to align: trace.json's framework events are not gathered."""
    if not any(r.format.startswith("explorer") and r.read for r in reads):
        return reads, [], []
    originals = _framework([r for r in reads if r.format == "kineto-json"])
    if originals.is_empty():
        return reads, [], []
    out, warnings, notes = [], [], []
    for r in reads:
        found = _offsets(originals, r) if r.format.startswith("explorer") and r.read else None
        whole, per = found if found is not None else (None, {})
        if whole is not None and all(abs(o - whole[0]) <= TOLERANCE_NS for o, _ in per.values()):
            per = {}  # one clock for the whole export: said once
        own = {pid: o for pid, (o, _) in per.items()}  # every matched process keeps its own
        moved = {pid: held for pid, held in per.items() if abs(held[0]) > TOLERANCE_NS}
        default = whole[0] if whole is not None and abs(whole[0]) > TOLERANCE_NS else 0
        if not moved and not default:
            out.append(r)
            continue
        out.append(replace(r, events=_shifted(r.events, own, default)))
        said = sorted(moved.items()) if per else [(None, whole)] if whole else []
        warnings += [_warning(r, pid, held) for pid, held in said if held is not None]
        each = [f"process {p} by {o:+d} ns" for p, (o, _) in sorted(moved.items())]
        each += [f"the others by {default:+d} ns"] if per and default else []
        how = f"({', '.join(each)})" if per else f"by {default:+d} ns"
        notes.append(
            f"{r.source.path}: {r.events.height} events shifted {how} onto trace.json's clock"
        )
    return out, warnings, notes


def _warning(r: ReadResult, pid: int | None, held: tuple[int, int]) -> str:
    """The warning that an export's clock (``pid``: one process's) is off by ``held``."""
    shift, matched = held
    way = "behind" if shift > 0 else "ahead of"
    whose = "its clock" if pid is None else f"process {pid}'s clock"
    return (
        f"{r.source.path}: {whose} runs {far_words(abs(shift))} {way} trace.json's (the median "
        f"over {matched} framework events both hold): aligned onto trace.json's clock"
    )


def _framework(reads: list[ReadResult]) -> pl.DataFrame:
    """Return the framework events of ``reads`` that a copy can match: process, lane kind,
    name, start and duration, with each one's rank among its namesakes (k-th by start)."""
    frames = [
        r.events.filter(
            (pl.col("source") == "framework")
            & pl.col("lane_kind").cast(pl.String).is_in(COPIED_KINDS)
        ).select(
            "pid",
            pl.col("lane_kind").cast(pl.String),
            "name",
            "start_ns",
            "duration_ns",
        )
        for r in reads
        if r.read and len(r.events)
    ]
    if not frames:
        return pl.DataFrame()
    keys = ["pid", "lane_kind", "name"]
    df = pl.concat(frames).drop_nulls().sort("start_ns")
    return df.with_columns(k=pl.int_range(pl.len()).over(keys), n=pl.len().over(keys))


def _offsets(
    originals: pl.DataFrame, export: ReadResult
) -> tuple[tuple[int, int] | None, dict[int, tuple[int, int]]] | None:
    """Return the export's offset from trace.json (ns to add to its times, and how many copies
    it was measured on; None when the matches disagree) and each process's own; None when no
    copy matches.

    A namesake group is matched only when both sides hold it the same number of times (a
    group the export holds only in part would pair the wrong copies), and a pair only when
    the two durations agree within the tolerance (a duration is the same on any clock).
    """
    copies = _framework([export])
    if copies.is_empty():
        return None
    pairs = originals.join(copies, on=["pid", "lane_kind", "name", "k", "n"], suffix="_c").filter(
        (pl.col("duration_ns") - pl.col("duration_ns_c")).abs() <= TOLERANCE_NS
    )
    if pairs.is_empty():
        return None
    diff = pairs.select("pid", diff=pl.col("start_ns") - pl.col("start_ns_c"))
    per = {}
    for (pid,), group in diff.group_by("pid"):
        held = _held(group["diff"])
        if held is not None:
            per[int(pid)] = held
    return _held(diff["diff"]), per


def _held(diff: pl.Series) -> tuple[int, int] | None:
    """Return the median of ``diff`` (start differences, ns) and how many agree with it within
    the tolerance; None when they are not most of them (not one clock)."""
    diff = diff.sort()
    median = int(diff[len(diff) // 2])  # exact in ns, where a float median of epoch ns is not
    agree = int(((diff - median).abs() <= TOLERANCE_NS).sum())
    if 2 * agree <= len(diff):  # no one offset holds most of the matches: not one clock
        return None
    return median, agree


def _shifted(events: pl.DataFrame, per: dict[int, int], default: int) -> pl.DataFrame:
    """Return ``events`` with their start and end moved by their process's shift in ``per``,
    else by ``default`` ns."""
    if not per:
        return events.with_columns(pl.col("start_ns") + default, pl.col("end_ns") + default)
    shift = pl.col("pid").replace_strict(per, default=default, return_dtype=pl.Int64)
    return events.with_columns(pl.col("start_ns") + shift, pl.col("end_ns") + shift)
