"""``traceana diff``: compare two sides, base then head, and gate on the change; and
``traceana baseline``, which saves a side's summary to compare against later.

Each side is one run or several (samples): a profile folder or trace file, a folder of
runs, a quoted glob, or a saved summary (``traceana gaps --format json`` or ``traceana
baseline save``). A side with no hardware executions, or far fewer than the other, is
refused (exit 2) unless ``--allow-empty``; two sides that record host activity only are
compared on the host: step time and self CPU time (docs/diff.md).

``baseline save PATH -o FILE.json`` writes, per run of PATH, the metrics ``diff`` compares
and per op its calls, device time and idle before (no gap rows: a few kB); ``traceana diff
FILE.json HEAD`` (or ``traceana baseline compare FILE.json HEAD``, the same command) reads it
back as the base side (docs/diff.md).
"""

from __future__ import annotations

import copy
import functools
import glob
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from trace_analyzer import atomic
from trace_analyzer._version import __version__
from trace_analyzer.cli.common import (
    ALLOW_EMPTY_GATE,
    PATH,
    Loading,
    cli,
    emit,
    exit_on_failures,
    handle_errors,
    load_options,
    output_file,
    run_options,
    top_option,
    writing,
)
from trace_analyzer.cli.compare import compare_devices, device_sides, say_spelled, words
from trace_analyzer.cli.loading import file_identity
from trace_analyzer.cli.messages import plain
from trace_analyzer.errors import InputError, UsageError
from trace_analyzer.units import parse_condition, parse_duration

# The analyses are imported when a side is loaded: declaring diff imports no polars, so that
# its --help and usage errors are said without it (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from trace_analyzer.questions.diff.sides import Sample, Side

F = TypeVar("F", bound=Callable[..., Any])
MIN_EXECUTIONS_SHARE = 10.0  # % of the other side's hardware executions
ALLOW_EMPTY = "--allow-empty to compare anyway"
ALLOW_MISMATCH = "--allow-mismatch to gate anyway"


def expand(spec: Path, role: str) -> list[Path]:
    """Return the paths a side names: the path itself, or the matches of a glob in it
    (sorted; none is a usage error naming the side)."""
    text = str(spec)
    if spec.exists() or not any(c in text for c in "*?["):
        return [spec]
    matches = sorted(glob.glob(text))
    if not matches:
        raise UsageError(f"{role} {text!r}: no path matches")
    return [Path(m) for m in matches]


def is_summary(path: Path) -> bool:
    """True for a .json file that holds traceana's own JSON rather than a trace (by its
    first bytes: ``questions.diff.sides.looks_like_summary``)."""
    from trace_analyzer.questions.diff.sides import looks_like_summary

    if not (path.suffix.lower() == ".json" and path.is_file()):
        return False
    try:
        with path.open("rb") as f:
            return looks_like_summary(f.read(4096))
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from e


def _saved(path: Path, step: int | None, min_gap_ns: int) -> list[Sample]:
    """The runs of a summary file, measured as the diff measures (else exit 2)."""
    import orjson

    from trace_analyzer.questions.diff.sides import read_summary

    try:
        doc = orjson.loads(path.read_bytes())
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from e
    except orjson.JSONDecodeError as e:
        raise InputError(path, f"not valid JSON: {e}") from e
    saved = read_summary(doc, str(path))

    def window(s: int | None) -> str:
        return "the hardware span" if s is None else f"--step {s}"

    if saved.step != step:
        raise InputError(
            path, f"measured over {window(saved.step)}, not {window(step)}: give the same --step"
        )
    if saved.min_gap_ns != min_gap_ns:
        raise InputError(
            path,
            f"measured with --min-gap {saved.min_gap_ns}ns, not {min_gap_ns}ns: "
            "give the same --min-gap",
        )
    return [replace(s, root=f"{path}: {s.root}") for s in saved.samples]


def load_side(
    spec: Path, role: str, loading: Loading, *, step: int | None, min_gap_ns: int
) -> Side:
    """Return the side ``spec`` names (``role``: base or head, for the messages): every run
    under each path it names, each summary file's runs, measured with ``step`` and
    ``min_gap_ns``."""
    from trace_analyzer.questions.diff.sides import TRACE, Side, sample_of

    samples: list[Sample] = []
    for path in expand(spec, role):
        if is_summary(path):
            samples += _saved(path, step, min_gap_ns)
            continue
        for profile in loading.runs(path):
            try:
                g = loading.cache.gaps(profile, step=step, min_gap_ns=min_gap_ns)
            except UsageError as e:  # e.g. no ProfilerStep#N: name the run
                raise InputError(profile.name, e.template, param=e.param) from e
            first = role == "head" and not any(s.source == TRACE for s in samples)
            samples.append(sample_of(profile, g, fix=first))  # the head's first run: its fix
    return Side(str(spec), tuple(samples))


def refuse(sides: dict[str, Side], *, min_runs: int, min_share: float, allow_empty: bool) -> None:
    """Raise a UsageError when a side has fewer than ``min_runs`` runs, or (unless
    ``allow_empty``) a run without hardware executions, or fewer executions than
    ``min_share`` % of the other side's; two sides that record host activity only are
    compared on the host, not refused."""
    n = {role: len(side.samples) for role, side in sides.items()}
    if min(n.values()) < min_runs:
        raise UsageError(
            f"--min-runs {min_runs}: "
            + ", ".join(
                f"{r} ({s.label}) has {n[r]} run{'s' * (n[r] != 1)}" for r, s in sides.items()
            )
        )
    if allow_empty or all(side.host_only for side in sides.values()):
        return  # two host-only sides are compared on the host (docs/diff.md)
    mean = {}
    for role, side in sides.items():
        for s in side.samples:
            if not s.metrics["executions"]:
                run = "" if n[role] == 1 else f", run {s.root},"
                raise UsageError(
                    f"{role} ({side.label}){run} has no hardware executions: nothing to "
                    f"compare ({ALLOW_EMPTY})"
                )
        mean[role] = sum(s.metrics["executions"] or 0 for s in side.samples) / n[role]
    for role, other in (("base", "head"), ("head", "base")):
        if 100 * mean[role] < min_share * mean[other]:
            raise UsageError(
                f"{role} ({sides[role].label}) has {mean[role]:g} hardware executions, "
                f"{100 * mean[role] / mean[other]:.1f} % of {other}'s {mean[other]:g}, under "
                f"--min-executions-share {min_share:g}: not the same work? ({ALLOW_EMPTY})"
            )


def differ(root: str, mismatch: str | None, *, gated: bool) -> None:
    """Say that the sides ``root`` differ (``mismatch``: in what; questions/diff/shape.py):
    a warning on stderr, or, under a gate (``gated``), a UsageError (exit 2)."""
    if not mismatch:
        return
    said = f"{root}: the sides differ in {mismatch}"
    if gated:
        raise UsageError(f"{said}: a gate on them compares different work ({ALLOW_MISMATCH})")
    click.echo(f"traceana: warning: {plain(said)}: not the same work?", err=True)


def side_options(fn: F) -> F:
    """--step and --min-gap: how each run of a side is measured."""
    fn = click.option(
        "--min-gap",
        default="0ns",
        show_default=True,
        metavar="DURATION",
        help="Leave shorter gaps out of the gap counts.",
    )(fn)
    return click.option("--step", type=int, help="Compare ProfilerStep#N of each run.")(fn)


@cli.command()
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("head", type=click.Path(path_type=Path))
@side_options
@top_option("changed ops")
@click.option(
    "--engines",
    "devices",
    is_flag=True,
    help="Compare the sides' device-profile exports, NEFF by NEFF (window, MFU/HFU/MBU, "
    "engines, DMA), not their system profiles; without it, so when the sides hold exports and "
    "not both a system profile.",
)
@click.option(
    "--neff",
    metavar="GLOB",
    help="With --engines: only the NEFFs this glob matches on each side.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="EXPR",
    help="Exit 1 when EXPR holds or cannot be measured, e.g. 'idle_pct_delta>2'.",
)
@click.option(
    "--min-runs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Each side needs at least N runs (else exit 2); from 2, a _delta or _pct_delta "
    "gate holds only when the change is also significant (Welch's t-test, 95 %).",
)
@click.option(
    "--min-executions-share",
    type=click.FloatRange(0, 100),
    default=MIN_EXECUTIONS_SHARE,
    show_default=True,
    metavar="PCT",
    help="Refuse (exit 2) a side with fewer hardware executions than PCT % of the other's.",
)
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Compare even a side with no hardware executions, or too few; the verdict is then "
    "inconclusive.",
)
@ALLOW_EMPTY_GATE
@click.option(
    "--allow-mismatch",
    is_flag=True,
    help="Gate even sides that differ in platform, ranks, devices or steps (else, with "
    "--fail-on, exit 2); without --fail-on they are compared with a warning.",
)
@run_options
def diff(
    base: Path,
    head: Path,
    step: int | None,
    min_gap: str,
    top: int,
    devices: bool,
    neff: str | None,
    fail_on: tuple[str, ...],
    min_runs: int,
    min_executions_share: float,
    allow_empty: bool,
    allow_empty_gate: bool,
    allow_mismatch: bool,
    fmt: str | None,
    output: Path | None,
    loading: Loading,
) -> None:
    """Compare two sides (BASE, then HEAD): window, device time, idle, gaps, ops, causes.

    Each side is a profile folder or trace file (one run), a folder of runs or a quoted glob
    ('runs/base-*': each run one sample), or a summary saved by `traceana gaps --format
    json` or `traceana baseline save`. With two runs or more per side, changes are tested
    for significance (Welch's t-test, 95 %). --fail-on metrics: every compared metric
    (idle_pct, device_time, window_us, step_time_us, self_cpu_us, idle_us, executions, gap_count,
    gap_p50_us, gap_p90_us, gap_max_us, idle_<cause>_us) alone (head's value) or with
    _delta (head − base; pp for idle_pct), _pct_delta (relative %), _base or _head. Exit 1
    after printing when one holds or its metric is undefined; a gate that compared nothing
    (every metric undefined) is exit 2 unless --allow-empty-gate.

    Two device-profile exports (--engines, or sides that hold exports and not both a system
    profile) are compared NEFF by NEFF as `traceana engines` measures them (docs/device.md,
    "Comparing two device profiles"); their --fail-on metrics: mfu_pct_delta, hfu_pct_delta,
    mbu_pct_delta (pp), window_pct_delta, tensor_active_pct_delta, vector_active_pct_delta,
    scalar_active_pct_delta, gpsimd_active_pct_delta, dma_active_pct_delta (%). `traceana
    engines HEAD --base BASE` and `traceana baseline compare` are older spellings of diff.

    \b
    Example:
        traceana diff base/ head/ --format markdown --fail-on 'idle_pct_delta>2'
        traceana diff 'runs/main-*' 'runs/pr-*' --min-runs 3 --fail-on 'idle_pct_delta>2'
        traceana diff ./base_export ./head_export --engines --fail-on 'window_pct_delta>5'
    """
    if compares_devices(devices, neff, base, head, loading):
        compare_devices(loading, base, head, top=top, neff=neff, fail_on=fail_on,
                        allow_empty_gate=allow_empty_gate, fmt=fmt, output=output)  # fmt: skip
        return
    compare_sides(
        loading, base, head, step=step, min_gap=min_gap, top=top, fail_on=fail_on,
        min_runs=min_runs, min_executions_share=min_executions_share, allow_empty=allow_empty,
        allow_empty_gate=allow_empty_gate, allow_mismatch=allow_mismatch, fmt=fmt, output=output,
    )  # fmt: skip


def compare_sides(
    loading: Loading,
    base: Path,
    head: Path,
    *,
    step: int | None,
    min_gap: str,
    top: int,
    fail_on: tuple[str, ...],
    min_runs: int,
    min_executions_share: float,
    allow_empty: bool,
    allow_empty_gate: bool,
    allow_mismatch: bool,
    fmt: str | None,
    output: Path | None,
) -> None:
    """Print BASE against HEAD, two sides of runs (diff's options as it takes them), and exit
    1 when a --fail-on condition holds."""
    from trace_analyzer.questions.diff.analysis import (
        DIFF_METRICS,
        DIFF_METRICS_HINT,
        diff_runs,
        diff_sides,
        host_gates,
    )
    from trace_analyzer.questions.diff.analysis import gate as gate_diff
    from trace_analyzer.render import View

    conditions = [parse_condition(c, DIFF_METRICS, DIFF_METRICS_HINT) for c in fail_on]
    min_gap_ns = parse_duration(min_gap)
    sides = {
        role: load_side(spec, role, loading, step=step, min_gap_ns=min_gap_ns)
        for role, spec in (("base", base), ("head", head))
    }
    refuse(sides, min_runs=min_runs, min_share=min_executions_share, allow_empty=allow_empty)
    if not allow_empty_gate:  # allowed, the judge says the gate compared nothing, and passes
        host_gates(sides["base"], sides["head"], conditions)
    compared = diff_sides(
        sides["base"], sides["head"], step=step, min_executions_share=min_executions_share
    )
    differ(compared.root, compared.mismatch, gated=bool(conditions) and not allow_mismatch)
    gated = gate_diff(compared, conditions, significant=min_runs >= 2, allow_empty=allow_empty_gate)
    result = diff_runs(gated)
    emit(result, fmt, output, View(top=top))
    exit_on_failures(result)


# The options of a comparison of system profiles, which one of device profiles refuses.
SYSTEM_ONLY = (
    "step",
    "min_gap",
    "min_runs",
    "min_executions_share",
    "allow_empty",
    "allow_mismatch",
)


def compares_devices(
    devices: bool, neff: str | None, base: Path, head: Path, loading: Loading
) -> bool:
    """Whether `traceana diff` compares the sides' device-profile exports (``devices``:
    --engines; else ``compare.device_sides``). A system profiles' option given to such a
    comparison, or --neff to the other, is a usage error."""
    if not (devices or device_sides(base, head, loading.max_bytes)):
        if neff is not None:
            raise UsageError("--neff picks the NEFFs of device profiles: add --engines")
        return False
    ctx = click.get_current_context()
    default = (click.core.ParameterSource.DEFAULT, None)
    given = [p for p in ctx.command.params if p.name in SYSTEM_ONLY
             and ctx.get_parameter_source(p.name or "") not in default]  # fmt: skip
    if given:
        flag = max(given[0].opts, key=len)
        raise UsageError(
            f"{flag} does not apply to a comparison of device profiles (--engines), NEFF by "
            "NEFF: leave it out"
        )
    return True


@cli.group()
def baseline() -> None:
    """Save a profile's summary (the numbers diff compares), to compare against later.

    \b
    Example:
        traceana baseline save runs/main -o base.json
        traceana diff base.json runs/pr --fail-on 'idle_pct_delta>2'
    """


@baseline.command()
@PATH
@output_file("The summary file to write (JSON).")
@side_options
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Save even a run with no hardware executions (diff refuses it unless --allow-empty).",
)
@load_options
@handle_errors
def save(
    path: Path,
    output: Path,
    step: int | None,
    min_gap: str,
    allow_empty: bool,
    loading: Loading,
) -> None:
    """Write the summary of every run under PATH (a profile, a folder of runs, a quoted glob
    or a gaps JSON): per run the compared metrics, per op calls, device time and idle before.

    \b
    Example:
        traceana baseline save 'runs/main-*' -o base.json --step 3
    """
    from trace_analyzer.questions.diff.sides import summary_doc  # polars: only when it runs
    from trace_analyzer.render.json import dumps

    given = {file_identity(p) for p in expand(path, "PATH")} - {None}
    if file_identity(output) in given:  # (as files: a link to it, or a mount, is it too)
        raise UsageError(f"-o {output} is the input itself: name another file")
    min_gap_ns = parse_duration(min_gap)
    side = load_side(path, "PATH", loading, step=step, min_gap_ns=min_gap_ns)
    empty = [s.root for s in side.samples if not (s.metrics["executions"] or s.host_only)]
    if empty and not allow_empty:
        raise UsageError(
            f"{empty[0]} has no hardware executions: nothing to save "
            f"({ALLOW_EMPTY.replace('compare', 'save')})"
        )
    text = dumps(summary_doc(side, step=step, min_gap_ns=min_gap_ns, version=__version__))
    with writing(output):
        atomic.replace(output, text.encode())
    runs, size = len(side.samples), len(text.encode())
    click.echo(f"saved {runs} run{'s' * (runs != 1)} of {path} to {output} ({size:,} bytes)")


def _spelled_diff(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (diff's callback), saying first on stderr that it is `traceana diff`."""

    @functools.wraps(fn)
    def noted(*args: Any, **kwargs: Any) -> Any:
        say_spelled("baseline compare", words("traceana", "diff", kwargs["base"], kwargs["head"]))
        return fn(*args, **kwargs)

    return noted


# `traceana baseline compare FILE HEAD`: diff under its older name, saying so (cli/compare.py).
compare = copy.copy(diff)
compare.name = "compare"
compare.callback = _spelled_diff(diff.callback) if diff.callback else None
compare.help = (
    "The same as `traceana diff BASE HEAD` (its older spelling, kept; a note on stderr says "
    "so): BASE is typically a summary saved by `traceana baseline save`.\n\n"
    + (diff.help or "").split("\n\n", 1)[1]
)
compare.short_help = "The same as traceana diff BASE HEAD (its older spelling)."
baseline.add_command(compare, "compare")
