"""Why a run has no hardware lanes to measure: one answer, said alike by ``gaps``, ``report``
and ``info`` (docs/gaps.md, "No hardware lanes").

In order: the run's hardware activity is in files traceana does not decode (NTFF, ``ntrace.pb``
without an Explorer export: the export command); it records nothing (an empty trace or table);
the host launched device work that the profiler did not record (runtime calls that launch a
kernel, copy or set, ``LAUNCHING``, each with the correlation id its device record would
carry, and no device record: the device's activity was not captured); else it records host
activity only (naming the files beside it that were not read: a foreign trace, say), and
what to run instead (``traceana ops``, ``traceana critical``).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from trace_analyzer.inputs.archive import AnyPath
from trace_analyzer.inputs.neff import device_export, raw_without_export, unpaired
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import text
from trace_analyzer.questions.gaps.host_summary import step_lengths

NOTHING = "no events: this profile records nothing (an empty trace or table)"
HOST_ONLY = "no hardware lanes: this profile records host activity only"
SHOWN = 3  # launch calls named by their count
# The runtime calls that put work on the device: kernel and graph launches, copies and sets
# (cudaLaunchKernel, hipLaunchKernel, cudaGraphLaunch, cudaMemcpyAsync, cudaMemsetAsync, ...);
# a synchronize or an event record launches nothing.
LAUNCHING = r"(?i)launch|memcpy|memset"

# What a source's device activity is called, and how to record it, where launches were seen
# and no device record (the profiler's own activity switch for it, and what stops it).
NOT_RECORDED = {
    "cuda": "enable ProfilerActivity.CUDA in torch.profiler; CUPTI may also be unavailable "
    "(WSL, a container without the GPU's counters) or its buffers not flushed",
    "rocm": "enable ProfilerActivity.CUDA in torch.profiler (ROCm's device activity goes "
    "through it, via roctracer); check that roctracer is available",
    "mtia": "enable the MTIA activity in torch.profiler",
}


def why_none(p: Profile | pl.DataFrame) -> str:
    """``no_hardware`` of a run, or of a bare events table (nothing, or host only)."""
    if isinstance(p, Profile):
        return no_hardware(p)
    return NOTHING if not p.height else HOST_ONLY + host_next(p)


def no_hardware(p: Profile, *, listed: bool = False) -> str:
    """Return why the run ``p``, which has no hardware lanes, has none (module text);
    ``listed``: the export commands are listed beside it (``info``), so not in it."""
    if p.undecoded_hardware:
        return undecoded(p, device_export(p.run, p.pairs, p.has_export), listed=listed)
    if not p.events.height:  # what its files held, where one was not read; else nothing
        return nothing_found(p) if any(not r.read for r in p.reads) else NOTHING
    launched = _launches(p.events)
    if launched is not None:
        return launched
    passed = [f"{_name(r.source.path, p.root)} ({r.notes[0] if r.notes else r.format})"
              for r in p.reads if not r.read]  # fmt: skip
    return HOST_ONLY + host_next(p.events) + ("; not read: " + "; ".join(passed) if passed else "")


def host_next(events: pl.DataFrame) -> str:
    """Return what to run instead on a run that records host activity only: ``ops`` where it
    has ops, ``critical`` where it has steps to replay (``gaps`` shows the host's figures too:
    questions/gaps/host_summary.py), else ``info``."""
    said = []
    if events.select((pl.col("lane_kind") == "framework_op").any()).item():
        said.append("`traceana ops` for each op's self CPU time")
    if step_lengths(events).height:
        said.append("`traceana critical` for each step's critical path on the host")
    return ": run " + (" and ".join(said) or "`traceana info` for what it holds")


def _launches(events: pl.DataFrame) -> str | None:
    """The line for runtime calls that launched device work no record shows, or None."""
    calls = events.filter(
        (pl.col("lane_kind") == "runtime")
        & pl.col("correlation").is_not_null()
        & text("name").str.contains(LAUNCHING)
    )
    if not calls.height:
        return None
    counts = calls.group_by(name=text("name")).len().sort(["len", "name"], descending=[True, False])
    named = ", ".join(f"{n} ×{k:,}" for n, k in counts.head(SHOWN).iter_rows())
    more = f" and {counts.height - SHOWN} more" if counts.height > SHOWN else ""
    source = calls.select(text("source").mode().first()).item()
    how = NOT_RECORDED.get(source, "enable the device's activity in the profiler")
    return (
        f"no device activity recorded, though the host launched device work: "
        f"{calls.height:,} runtime calls that launch a kernel, copy or set ({named}{more}) and "
        f"no device record of any: the profiler did not capture the device ({how})"
    )


def undecoded(p: Profile, commands: list[str], *, listed: bool = False) -> str:
    """Return the line of a run whose hardware lanes are only in NTFF/ntrace.pb files: where
    they are, and how to export them, or where that is said (``listed``: under "device
    export", beside the line), or why it cannot be."""
    ntrace = bool(raw_without_export(p.run, p.has_export))
    held = " and ".join(k for k, has in (("NTFF", p.run.ntffs), ("ntrace.pb", ntrace)) if has)
    line = f"no hardware lanes read: they are in the {held} files, which need an Explorer export"
    how = []
    if commands and listed:
        how.append('"device export" lists the command for each NTFF and its NEFF')
    elif len(commands) == 1:
        how.append(f"export it with `{commands[0]}`")
    elif commands:
        how.append(f'`traceana info` lists under "device export" the command for each of the '
                   f"{len(commands)} NTFFs and its NEFF")  # fmt: skip
    if ntrace:
        how.append("the warnings say how to export ntrace.pb")
    lone = unpaired(p.pairs)["ntff"]
    if lone:
        how.append(f"{len(lone)} NTFF(s) have no NEFF paired with them, which Explorer needs")
    if any(pair["mode"] == "session" for pair in p.pairs) and not ntrace:
        how.append(
            "session-mode NTFFs are exported with their capture folder "
            "(`neuron-explorer view -d <folder> --output-format parquet`)"
        )
    return line + ("; " + "; ".join(how) if how else "")


def nothing_found(p: Profile) -> str:
    """Return the note of a run without events: what its files are and what each held, so
    that "0 events" says why (an empty trace, every event dropped, files traceana does not
    read for events)."""
    held = []
    for r in p.reads:
        what = f"{r.count} events" if r.read else f"not read: {'; '.join(r.notes) or r.format}"
        held.append(f"{_name(r.source.path, p.root)} ({r.format}, {what})")
    others = {
        "capture.json": p.run.captures,
        "NEFF": p.run.neffs,
        "NTFF": p.run.ntffs,
        "raw system trace": p.run.raw,
    }
    for kind, files in others.items():
        if files:
            held.append(", ".join(_name(f, p.root) for f in files[:3]) + _more(files, kind))
    text = "no events: the run holds " + ("; ".join(held) if held else "no file traceana reads")
    read = sum(r.count for r in p.reads if r.read)
    if read and p.dropped:
        text += f"; the {read} events read were all dropped as malformed (see the warnings)"
    elif any(r.read for r in p.reads) and not read:
        text += "; its traces hold no events"
    return text


def _name(path: AnyPath, root: AnyPath) -> str:
    """Return ``path`` relative to the run's ``root`` where it lies inside it."""
    try:
        return str(Path(str(path)).relative_to(str(root)))
    except ValueError:
        return str(path)


def _more(files: list[AnyPath], kind: str) -> str:
    """Return the words after the first three ``files`` of a ``kind`` (their count)."""
    extra = len(files) - 3
    return f" and {extra} more {kind} files" if extra > 0 else ""
