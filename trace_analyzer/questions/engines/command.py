"""The command below the gaps: `traceana engines` (questions/engines/analysis.py), over the
device-profile exports under a path (readers/device_profile.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from trace_analyzer.cli.common import (
    ALLOW_EMPTY_GATE,
    Loading,
    cli,
    emit,
    exit_on_failures,
    run_command,
    top_option,
)
from trace_analyzer.errors import UsageError

if TYPE_CHECKING:
    from trace_analyzer.model.device import DeviceRun

CAPTURE = (
    "capture one with the device profile on (torch_neuronx's NeuronConfig with "
    "ProfileMode.DEVICE, or NEURON_RT_INSPECT_DEVICE_PROFILE=1; docs/capture.md), then export "
    "each NEFF/NTFF pair with: neuron-explorer view -n X.neff -s X.ntff --output-format parquet"
)


@cli.command()
@top_option("opcodes, HLO ops and NKI source lines per NEFF and core (and HLO ops on the roofline)")
@click.option(
    "--neff",
    metavar="GLOB",
    help="Only the NEFFs this glob matches (e.g. '*rmsnorm*'); the Summary comparison keeps "
    "them all.",
)
@click.option(
    "--base",
    type=click.Path(path_type=Path),
    help="Compare PATH (head) with this device profile, NEFF by NEFF: window, MFU/HFU/MBU, "
    "engines, DMA (docs/device.md).",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="EXPR",
    help="With --base: exit 1 when EXPR holds or cannot be measured, e.g. 'window_pct_delta>5'.",
)
@ALLOW_EMPTY_GATE
@run_command
def engines(
    path: Path,
    top: int,
    neff: str | None,
    base: Path | None,
    fail_on: tuple[str, ...],
    allow_empty_gate: bool,
    fmt: str | None,
    output: Path | None,
    loading: Loading,
) -> None:
    """Per NEFF and physical core: each engine's busy time, DMA, MFU/HFU/MBU and roofline.

    Reads the device-profile exports under PATH (Neuron Explorer's Parquet tables, one
    folder per NEFF/NTFF pair) and says, per engine, its active time and %, its instruction
    time, the idle between its instructions and its semaphore waits; the DMA's active time
    and transfer sizes; the top opcodes, HLO ops and NKI source lines; MFU, HFU, MBU and
    arithmetic intensity with the roofline verdict and headroom; hints; and the export's own
    Summary beside traceana's figures, every mismatch named (docs/device.md).

    With --base BASE: PATH (head) against BASE, NEFF by NEFF (matched by name, else across a
    rename by the network name in the NEFF header, by the op that launched it in the system
    profile beside the export, or by its position in the step; each pair says how): the
    changes of window, MFU/HFU/MBU, intensity, verdict, DMA and each engine's times; NEFFs
    left unmatched listed, and then the whole profiles compared too. --fail-on metrics:
    mfu_pct_delta, hfu_pct_delta, mbu_pct_delta (pp), window_pct_delta,
    tensor_active_pct_delta, vector_active_pct_delta, scalar_active_pct_delta,
    gpsimd_active_pct_delta, dma_active_pct_delta (%, the largest over the matched NEFFs and,
    with a NEFF unmatched, the whole profiles). Exit 1 after printing when one holds or its
    metric is undefined; a gate that compared nothing is exit 2 unless --allow-empty-gate.

    The loading options are every run command's (docs/output.md, "Conventions"): --run NAME
    the exports below PATH/NAME, --rank the profiles of those ranks' processes (the system
    profile beside them gives the ranks), --max-bytes the cap on a .json.gz export and each
    Parquet table; the cache options reach the system profile beside the exports (ranks, the
    ops that launched each NEFF), and --strict has nothing to drop in an export.

    \b
    Example:
        traceana engines ./device_export --top 5 --format markdown
        traceana engines ./head_export --base ./base_export --fail-on 'window_pct_delta>5'
    """
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.questions.engines.analysis import engines as engines_of
    from trace_analyzer.render.view import View

    if base is not None:
        compare(loading, base, path, top, neff, fail_on, allow_empty_gate, fmt, output)
        return
    if fail_on:
        raise UsageError("--fail-on needs --base (the profile to compare with)")
    result = engines_of(loaded(loading, path), neff=neff)  # every row: the text shows --top
    emit(RunResults(str(path), (result,)), fmt, output, View(top=top))


def loaded(loading: Loading, path: Path) -> DeviceRun:
    """The device profiles under ``path``, as ``loading`` reads them (exit 2 saying what to do
    when it holds none)."""
    from trace_analyzer.errors import InputError

    run = loading.device(path)
    if not run.profiles:
        raise InputError(path, nothing_found(run))
    return run


def compare(
    loading: Loading,
    base: Path,
    head: Path,
    top: int,
    neff: str | None,
    fail_on: tuple[str, ...],
    allow_empty_gate: bool,
    fmt: str | None,
    output: Path | None,
) -> None:
    """`traceana engines HEAD --base BASE`: head against base, gated (questions/engines/diff.py)."""
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.questions.engines.analysis import engines as engines_of
    from trace_analyzer.questions.engines.diff import ENGINES_DIFF_METRICS, engines_diff, gate
    from trace_analyzer.questions.engines.matching import match, neff_keys, ops_beside
    from trace_analyzer.render.view import View
    from trace_analyzer.units import parse_condition

    conditions = [parse_condition(c, ENGINES_DIFF_METRICS) for c in fail_on]
    runs = [loaded(loading, p) for p in (base, head)]
    sides = [engines_of(r, neff=neff) for r in runs]
    ops = [ops_beside(r.root, loading.beside(r.root)) for r in runs]
    keys = [neff_keys(r, o) for r, o in zip(runs, ops, strict=True)]
    compared = engines_diff(sides[0], sides[1], match(keys[0], keys[1]))
    result = gate(compared, conditions, allow_empty=allow_empty_gate)
    emit(RunResults(str(head), (result,), header={"base": str(base)}), fmt, output, View(top=top))
    exit_on_failures(RunResults(str(head), (result,)))


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
