"""The command below the gaps: `traceana engines` (questions/engines/analysis.py), over the
device-profile exports under a path (readers/device_profile.py). Its ``--base BASE`` is the
older spelling of ``traceana diff BASE PATH --engines`` (cli/compare.py): the same comparison,
which says so on stderr."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer.cli.common import (
    ALLOW_EMPTY_GATE,
    Loading,
    cli,
    emit,
    run_command,
    top_option,
)
from trace_analyzer.cli.compare import compare_devices, device_loaded, say_spelled, words
from trace_analyzer.errors import UsageError


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
    "engines, DMA (docs/device.md); the same as: traceana diff BASE PATH --engines.",
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

    With --base BASE (the same as `traceana diff BASE PATH --engines`, the one spelling of a
    comparison, which a note on stderr names): PATH (head) against BASE, NEFF by NEFF
    (matched by name, else across a rename by the network name in the NEFF header, by the op
    that launched it in the system profile beside the export, or by its position in the
    step; each pair says how): the changes of window, MFU/HFU/MBU, intensity, verdict, DMA
    and each engine's times; NEFFs left unmatched listed, and then the whole profiles
    compared too. --fail-on metrics: mfu_pct_delta, hfu_pct_delta, mbu_pct_delta (pp),
    window_pct_delta, tensor_active_pct_delta, vector_active_pct_delta,
    scalar_active_pct_delta, gpsimd_active_pct_delta, dma_active_pct_delta (%, the largest
    over the matched NEFFs and, with a NEFF unmatched, the whole profiles). Exit 1 after
    printing when one holds or its metric is undefined; a gate that compared nothing is exit
    2 unless --allow-empty-gate.

    The loading options are every run command's (docs/output.md, "Conventions"): --run NAME
    the exports below PATH/NAME, --rank the profiles of those ranks' processes (the system
    profile beside them gives the ranks), --max-bytes the cap on a .json.gz export and each
    Parquet table; the cache options reach the system profile beside the exports (ranks, the
    ops that launched each NEFF), and --strict has nothing to drop in an export.

    \b
    Example:
        traceana engines ./device_export --top 5 --format markdown
        traceana diff ./base_export ./head_export --engines --fail-on 'window_pct_delta>5'
    """
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.questions.engines.analysis import engines as engines_of
    from trace_analyzer.render.view import View

    if base is not None:
        say_spelled("engines --base", words("traceana", "diff", base, path, "--engines"))
        compare_devices(loading, base, path, top=top, neff=neff, fail_on=fail_on,
                        allow_empty_gate=allow_empty_gate, fmt=fmt, output=output)  # fmt: skip
        return
    if fail_on:
        raise UsageError("--fail-on needs --base (the profile to compare with)")
    result = engines_of(device_loaded(loading, path), neff=neff)  # every row: text shows --top
    emit(RunResults(str(path), (result,)), fmt, output, View(top=top))
