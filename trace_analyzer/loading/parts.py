"""A folder of traces recorded far apart: several runs, one per time (docs/formats.md, "Layouts
and runs"), and ``--run NAME``, which picks runs by name.

Discovery makes a folder's trace files one run by their names alone; once read, their times
say whether that holds (``clocks.groups``: files whose spans lie more than a minute apart were
not recorded by one job). Such a run is split into *parts*, one per group of files, in time
order. A part is a ``Run`` of its own (``Run.part``: the path in the root of its first file,
in path order), named ``<root>#<part>`` wherever a run is named (``Run.name``), read, cached,
analysed and batched as any run. The files of the folder that are not traces (NEFF/NTFF
pairs, raw system traces, capture.json, files passed by) carry no time, and go with the first
part in time. Every part's warnings open with the line that says the folder was split, so
that whichever part a user looks at says it.

``--run NAME`` (``run=`` in the library) keeps the runs NAME names: a run's name, its root's
path below the path given, a part's name, or one of its files (its path below the root or
the path given, or its file name). Runs are picked before they are read where the name says
which (``pick``); the parts of a run read whole, after (``picked``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from trace_analyzer.errors import UsageError
from trace_analyzer.inputs.archive import AnyPath, relative_parts
from trace_analyzer.inputs.discover import PART_SEP, Run, Source
from trace_analyzer.loading.clocks import far_words, groups

if TYPE_CHECKING:
    from trace_analyzer.loading.profile import Profile
    from trace_analyzer.readers import ReadResult

SHOWN = 3  # parts named in the line that says a folder was split, the rest counted


def split(run: Run, reads: list[ReadResult]) -> list[tuple[Run, list[ReadResult], list[str]]]:
    """Return the parts of ``run`` (read as ``reads``): each sub-run, its reads and the lines
    its warnings open with; the run itself, all its reads and no line when its traces were
    recorded as one (or it holds fewer than two)."""
    if sum(1 for r in reads if r.read and len(r.events)) < 2:
        return [(run, reads, [])]
    found, widest = groups(reads)
    if len(found) < 2:
        return [(run, reads, [])]
    group_of = {path: i for i, group in enumerate(found) for path in group}
    parts: list[tuple[Run, list[ReadResult], list[str]]] = []
    for i, group in enumerate(found):  # a read without a timed event: the first part's
        sources = [s for s in run.sources if group_of.get(str(s.path), 0) == i]
        part = min((_inside(p, run) for p in group), key=_path_order)
        sub = part_run(run, sources, part, first=i == 0)
        held = [r for r in reads if group_of.get(str(r.source.path), 0) == i]
        parts.append((sub, held, []))
    line = _split_line(run, [p for p, _, _ in parts], widest)
    return [(sub, held, [line]) for sub, held, _ in parts]


def part_run(run: Run, sources: list[Source], part: str, *, first: bool) -> Run:
    """Return the part ``part`` of ``run``, made of ``sources``: the first part in time keeps
    the run's files that carry no time (NEFF/NTFF, raw traces, capture.json, files passed by)."""
    if first:
        return replace(run, sources=sources, part=part)
    return Run(root=run.root, sources=sources, layouts=set(run.layouts), part=part)


def _inside(path: str, run: Run) -> str:
    """Return the path of a run's source (as text) below its root, or its name when it is not
    below it."""
    source = next((s.path for s in run.sources if str(s.path) == path), None)
    if source is None:
        return path
    try:
        return "/".join(relative_parts(source, run.root)) or source.name
    except ValueError:
        return source.name


def _split_line(run: Run, parts: list[Run], widest: int) -> str:
    """The line that says ``run`` was split into ``parts``, each named with its files."""
    shown = "; ".join(f"{p.name} ({_files(p)})" for p in parts[:SHOWN]) + (
        f"; and {len(parts) - SHOWN} more" if len(parts) > SHOWN else ""
    )
    return (
        f"{run.root}: its traces were recorded up to {far_words(widest)} apart, so they are "
        f"{len(parts)} runs, each analysed on its own: {shown} (--run NAME picks one)"
    )


def _files(part: Run) -> str:
    names = sorted(_inside(str(s.path), part) for s in part.sources)
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def names(run: Run, top: AnyPath | None) -> set[str]:
    """Every name ``--run`` may give ``run`` by, ``top`` being the path the user named."""
    out = {run.name, str(run.root)}
    if run.part is not None:
        out.add(run.part)
    files: list[AnyPath] = [s.path for s in run.sources]
    for path in [run.root, *files]:
        for base in (top, run.root):
            if base is None:
                continue
            try:
                inside = "/".join(relative_parts(path, base))
            except ValueError:
                continue
            if inside:
                out.add(inside)
    out.update(f.name for f in files)
    for f in files:  # the name of the part a file would lead: picked before its run is read
        try:
            out.add(f"{run.root}{PART_SEP}{'/'.join(relative_parts(f, run.root))}")
        except ValueError:
            continue
    return out


def pick(runs: list[Run], name: str | None, top: AnyPath | None) -> list[Run]:
    """Return the runs ``name`` names (all of them for None); none is a UsageError that
    names the runs there are (``{param}``: ``run``)."""
    if name is None:
        return runs
    chosen = [r for r in runs if name in names(r, top)]
    if not chosen:
        raise UsageError(f"{{param}} {name}: {_none_named(runs, top)}", param="run")
    return chosen


def picked(profiles: list[Profile], name: str | None, top: AnyPath | None) -> list[Profile]:
    """Return the profiles whose runs ``name`` names, after their runs were read (and split);
    all of them for None. ``pick`` chose their runs: one of them at least is named."""
    if name is None:
        return profiles
    return [p for p in profiles if name in names(p.run, top)] or profiles


def _none_named(runs: list[Run], top: AnyPath | None) -> str:
    shown = ", ".join(_short(r, top) for r in runs[:SHOWN])
    more = f" and {len(runs) - SHOWN} more" if len(runs) > SHOWN else ""
    return f"no run or file of a run is named so; the runs here are {shown}{more}"


def _short(run: Run, top: AnyPath | None) -> str:
    try:
        inside = "/".join(relative_parts(run.root, top)) if top is not None else ""
    except ValueError:
        inside = ""
    return inside or str(run.root)


def _path_order(inside: str) -> tuple[str, ...]:
    return tuple(inside.split("/"))
