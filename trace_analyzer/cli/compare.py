"""One way to compare (issue 39; docs/output.md, "Conventions"): ``traceana diff BASE HEAD``.

Two device-profile sides are compared NEFF by NEFF (``compare_devices``: window, MFU/HFU/MBU,
engines, DMA; questions/engines/diff.py's ``compare_runs``), by ``diff --engines``, or by
``diff`` alone where the sides hold device-profile exports and not both a system profile
(``device_sides``). The older spellings stay, each the same command, and say the one on
stderr (``say_spelled``): ``traceana baseline compare FILE HEAD`` is ``traceana diff FILE
HEAD``, ``traceana engines HEAD --base BASE`` is ``traceana diff BASE HEAD --engines``.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from trace_analyzer.cli.common import Loading, emit, exit_on_failures
from trace_analyzer.cli.messages import plain
from trace_analyzer.errors import InputError

if TYPE_CHECKING:
    from trace_analyzer.model.device import DeviceRun

CAPTURE = (
    "capture one with the device profile on (torch_neuronx's NeuronConfig with "
    "ProfileMode.DEVICE, or NEURON_RT_INSPECT_DEVICE_PROFILE=1; docs/capture.md), then export "
    "each NEFF/NTFF pair with: neuron-explorer view -n X.neff -s X.ntff --output-format parquet"
)


def say_spelled(old: str, new: str) -> None:
    """Say on stderr that this comparison, asked for by its older spelling ``old``
    (``engines --base``), is spelled ``new`` (the command line, its paths quoted for a
    shell): the same comparison, options and output; one line."""
    click.echo(
        f"traceana: note: the one spelling of this comparison is: {plain(new)} ({old}, its "
        'older one, stays; docs/output.md, "Conventions")',
        err=True,
    )


def words(*parts: object) -> str:
    """``parts`` as a shell would take them: ``traceana diff 'a b' c``."""
    return " ".join(shlex.quote(str(p)) for p in parts)


def device_loaded(loading: Loading, path: Path) -> DeviceRun:
    """The device profiles under ``path``, as ``loading`` reads them (``Loading.device``);
    none is exit 2, saying what to do."""
    run = loading.device(path)
    if not run.profiles:
        raise InputError(path, nothing_found(run))
    return run


def nothing_found(run: DeviceRun) -> str:
    """What to do when ``run`` holds no device-profile export: export each NEFF/NTFF pair it
    has (their commands), else capture one."""
    commands = [p["command"] for p in run.unexported if p.get("command")]
    if commands:
        return (
            "no device-profile export (Instruction.parquet) under it; export each NEFF/NTFF "
            f"pair with: {'; '.join(str(c) for c in commands)}"
        )
    return (
        f"no device-profile export (Instruction.parquet) and no NEFF/NTFF pair under it; {CAPTURE}"
    )


def compare_devices(
    loading: Loading,
    base: Path,
    head: Path,
    *,
    top: int,
    neff: str | None,
    fail_on: tuple[str, ...],
    allow_empty_gate: bool,
    fmt: str | None,
    output: Path | None,
) -> None:
    """Print ``head`` against ``base``, two device-profile sides, NEFF by NEFF, and exit 1
    when a --fail-on condition holds: `traceana diff BASE HEAD --engines`."""
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.questions.engines.diff import ENGINES_DIFF_METRICS, compare_runs
    from trace_analyzer.questions.engines.matching import ops_beside
    from trace_analyzer.render.view import View
    from trace_analyzer.units import parse_condition

    conditions = [parse_condition(c, ENGINES_DIFF_METRICS) for c in fail_on]
    runs = [device_loaded(loading, p) for p in (base, head)]
    ops = [ops_beside(r.root, loading.beside(r.root)) for r in runs]
    result = compare_runs(
        runs[0], runs[1], neff=neff, ops=ops, conditions=conditions, allow_empty=allow_empty_gate
    )
    emit(RunResults(str(head), (result,), header={"base": str(base)}), fmt, output, View(top=top))
    exit_on_failures(RunResults(str(head), (result,)))


def device_sides(base: Path, head: Path, max_bytes: int | None = None) -> bool:
    """Whether `traceana diff BASE HEAD` compares device profiles: both sides hold
    device-profile exports and they do not both hold a system profile (that comparison
    ``diff --engines`` asks for)."""
    if not all(holds_exports(p) for p in (base, head)):
        return False
    return not all(holds_system(p, max_bytes) for p in (base, head))


def holds_exports(path: Path) -> bool:
    """Whether ``path`` is, or holds, a device-profile export (what ``load_device`` reads)."""
    from trace_analyzer.inputs.device import (
        DEVICE_JSON_KEYS,
        JSON_NAME,
        find_exports,
        find_json_exports,
        first_key,
        table_pattern,
    )

    if path.is_file():
        if table_pattern("Instruction").match(path.name):
            return True
        return bool(JSON_NAME.search(path.name)) and first_key(path) in DEVICE_JSON_KEYS
    return path.is_dir() and bool(find_exports(path) or find_json_exports(path))


def holds_system(path: Path, max_bytes: int | None) -> bool:
    """Whether ``path`` holds a run `diff` reads: a source that is not a device-profile export
    (discovery finds runs; a neuron-profile JSON export is one of their sources, not a run)."""
    from trace_analyzer.errors import TraceanaError
    from trace_analyzer.inputs.discover import discover

    try:
        runs = discover(path, max_bytes=max_bytes)
    except TraceanaError:
        return False
    return any(not holds_exports(Path(str(s.path))) for r in runs for s in r.sources)
