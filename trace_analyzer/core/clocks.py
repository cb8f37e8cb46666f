"""Traces whose clocks are far apart are not one run (docs/formats.md, "Layouts and runs").

Discovery makes a folder's trace files one run by their names alone (the ranks of one job).
Once they are read, their times say whether that holds: the files of one run overlap in time,
or nearly so (hosts' clocks differ by milliseconds under NTP). Files whose spans leave more
than ``FAR_APART_NS`` between them were recorded at different times, not by one job; merged,
they would make one window mostly made of a hole, with devices idle in it, and no warning.
Such a run is refused with one line that names the files, so that each is analysed on its own.
"""

from __future__ import annotations

from trace_analyzer.errors import InputError
from trace_analyzer.readers import ReadResult

FAR_APART_NS = 60 * 1_000_000_000  # one minute: far above clock skew, far below a day


def spans(reads: list[ReadResult]) -> list[tuple[int, int, str]]:
    """Return each read's time span (first start, last end, ns) and its path, in start order;
    reads without a timed event are left out."""
    out = []
    for r in reads:
        if not r.read or not len(r.events):
            continue
        start, end = r.events["start_ns"].min(), r.events["end_ns"].max()
        if isinstance(start, int) and isinstance(end, int):
            out.append((start, max(start, end), str(r.source.path)))
    return sorted(out)


def groups(reads: list[ReadResult]) -> tuple[list[list[str]], int]:
    """Return the reads' files grouped by time (a group: spans that overlap or lie within
    ``FAR_APART_NS`` of each other), and the widest space between two groups, ns."""
    found: list[list[str]] = []
    widest, reach = 0, None
    for start, end, path in spans(reads):
        if reach is None or start - reach > FAR_APART_NS:
            widest = widest if reach is None else max(widest, start - reach)
            found.append([])
        found[-1].append(path)
        reach = end if reach is None else max(reach, end)
    return found, widest


def refuse_far_apart(root: object, reads: list[ReadResult]) -> None:
    """Raise an InputError, one line naming the files, when the reads of the run at ``root``
    fall into groups more than ``FAR_APART_NS`` apart in time."""
    found, widest = groups(reads)
    if len(found) < 2:
        return
    named = " | ".join(_names(g) for g in found)
    raise InputError(
        str(root),
        f"its traces were recorded {_duration(widest)} apart, so they are not one run: "
        f"{named}; analyse each on its own (name the file, or give each a folder)",
    )


def _names(paths: list[str]) -> str:
    shown = ", ".join(paths[:3])
    return shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def _duration(ns: int) -> str:
    s = ns / 1e9
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if s >= size:
            return f"{s / size:.1f} {unit}"
    return f"{s:.1f} s"
