"""``traceana baseline``: save a side's summary, to diff against later without its traces.

``baseline save PATH -o FILE.json`` writes, per run of PATH, the metrics ``diff`` compares
and per op its calls, device time and idle before (no gap rows: a few kB); ``traceana diff
FILE.json HEAD`` (or ``traceana baseline compare FILE.json HEAD``, the same command) reads it
back as the base side (docs/diff.md).
"""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer._version import __version__
from trace_analyzer.cli.common import Loading, cli, handle_errors, load_options, writing
from trace_analyzer.errors import UsageError
from trace_analyzer.questions.diff.command import ALLOW_EMPTY, diff, expand, load_side, side_options
from trace_analyzer.units import parse_duration


@cli.group()
def baseline() -> None:
    """Save a profile's summary (the numbers diff compares), to compare against later.

    \b
    Example:
        traceana baseline save runs/main -o base.json
        traceana diff base.json runs/pr --fail-on 'idle_pct_delta>2'
    """


@baseline.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The summary file to write (JSON).",
)
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

    given = {p.resolve() for p in expand(path, "PATH")}
    if output.resolve() in given:
        raise UsageError(f"-o {output} is the input itself: name another file")
    min_gap_ns = parse_duration(min_gap)
    side = load_side(path, "PATH", loading, step=step, min_gap_ns=min_gap_ns)
    empty = [s.root for s in side.samples if not s.metrics["executions"]]
    if empty and not allow_empty:
        raise UsageError(
            f"{empty[0]} has no hardware executions: nothing to save "
            f"({ALLOW_EMPTY.replace('compare', 'save')})"
        )
    text = dumps(summary_doc(side, step=step, min_gap_ns=min_gap_ns, version=__version__))
    with writing(output):
        output.write_text(text)
    runs, size = len(side.samples), len(text.encode())
    click.echo(f"saved {runs} run{'s' * (runs != 1)} of {path} to {output} ({size:,} bytes)")


baseline.add_command(diff, "compare")
