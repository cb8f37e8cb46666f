"""The command below the gaps: `traceana engines` (analyses/engines.py), over the device-profile
exports under a path (readers/device_profile.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from trace_analyzer.cli.common import ROWS, check_output, cli, emit, handle_errors, output_options

if TYPE_CHECKING:
    from trace_analyzer.core.device import DeviceRun

CAPTURE = (
    "capture one with the device profile on (torch_neuronx's NeuronConfig with "
    "ProfileMode.DEVICE, or NEURON_RT_INSPECT_DEVICE_PROFILE=1; docs/capture.md), then export "
    "each NEFF/NTFF pair with: neuron-explorer view -n X.neff -s X.ntff --output-format parquet"
)


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--top",
    type=ROWS,
    default=10,
    show_default=True,
    help="How many opcodes, HLO ops and NKI source lines per NEFF and core (and HLO ops on "
    "the roofline).",
)
@click.option(
    "--neff",
    metavar="GLOB",
    help="Only the NEFFs this glob matches (e.g. '*rmsnorm*'); the Summary comparison keeps "
    "them all.",
)
@output_options
@handle_errors
def engines(path: Path, top: int, neff: str | None, fmt: str | None, output: Path | None) -> None:
    """Per NEFF and physical core: each engine's busy time, DMA, MFU/HFU/MBU and roofline.

    Reads the device-profile exports under PATH (Neuron Explorer's Parquet tables, one
    folder per NEFF/NTFF pair) and says, per engine, its active time and %, its instruction
    time, the idle between its instructions and its semaphore waits; the DMA's active time
    and transfer sizes; the top opcodes, HLO ops and NKI source lines; MFU, HFU, MBU and
    arithmetic intensity with the roofline verdict and headroom; hints; and the export's own
    Summary beside traceana's figures, every mismatch named (docs/device.md).

    \b
    Example:
        traceana engines ./device_export --top 5 --format markdown
    """
    from trace_analyzer.analyses.engines import engines as engines_of
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.errors import InputError
    from trace_analyzer.readers.device_profile import load_device
    from trace_analyzer.render.view import View

    check_output(fmt, output)
    run = load_device(path)
    if not run.profiles:
        raise InputError(path, nothing_found(run))
    result = engines_of(run, top=top, neff=neff)
    emit(RunResults(str(path), (result,)), fmt, output, View(top=top))


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


def device_of(path: Path) -> tuple[DeviceRun | None, str | None]:
    """The device-profile exports under ``path`` for ``traceana report``, and why they could
    not be read: only a folder is searched (a trace or an archive has none), and an export
    that cannot be read is a note on the page, not an error (the report is about the system
    view first)."""
    from trace_analyzer.errors import InputError
    from trace_analyzer.readers.device_profile import load_device

    if not path.is_dir():
        return None, None
    try:
        return load_device(path), None
    except InputError as e:
        return None, f"the device-profile export could not be read: {e}"
