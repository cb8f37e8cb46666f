"""The ``traceana`` command: wires discovery, analyses and renderers, and owns exit codes.

Exit codes: 0 success, 1 a requested threshold failed, 2 bad usage or unusable input.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path

import click

from trace_analyzer import cache
from trace_analyzer._version import __version__
from trace_analyzer.analyses.chain import chain_result
from trace_analyzer.analyses.diff import DIFF_METRICS, DIFF_METRICS_HINT
from trace_analyzer.analyses.diff import diff as diff_profiles
from trace_analyzer.analyses.gaps import METRICS, gaps_result
from trace_analyzer.analyses.info import info as info_analysis
from trace_analyzer.analyses.ops import ops_result
from trace_analyzer.core.profile import STRICT, load, load_runs
from trace_analyzer.errors import InputError, TraceanaError, UsageError
from trace_analyzer.inputs import limits
from trace_analyzer.render import RENDERERS, for_output
from trace_analyzer.units import parse_condition, parse_duration, parse_size


def output_options(fn):
    """The options every command that prints results shares: --format and -o."""
    fn = click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Write to this file instead of standard output.",
    )(fn)
    fn = click.option(
        "--format",
        "fmt",
        type=click.Choice(list(RENDERERS)),
        help="Output format (default: from the -o extension, else table).",
    )(fn)
    return fn


def limit_options(fn):
    """--max-bytes, for every command that reads inputs (limits.py)."""

    @functools.wraps(fn)
    def wrapper(*args, max_bytes: str | None, **kwargs):
        if max_bytes is None:
            return fn(*args, **kwargs)
        try:
            parse_size(max_bytes)  # a bad size is a usage error now, not in a worker later
        except UsageError as e:
            click.echo(f"traceana: error: {e}", err=True)
            sys.exit(2)
        before = os.environ.get(limits.ENV)
        os.environ[limits.ENV] = max_bytes  # read by the readers, inherited by workers
        try:
            return fn(*args, **kwargs)
        finally:
            if before is None:
                os.environ.pop(limits.ENV, None)
            else:
                os.environ[limits.ENV] = before

    return click.option(
        "--max-bytes",
        metavar="SIZE",
        envvar=limits.ENV,
        show_envvar=False,
        help="Cap on what one compressed input (a .gz trace, an archive) may inflate to, "
        "e.g. 4G [default: 16GiB].",
    )(wrapper)


def strict_option(fn):
    """--strict, for the commands that analyse one path (profile.STRICT)."""

    @functools.wraps(fn)
    def wrapper(*args, strict: bool, **kwargs):
        token = STRICT.set(strict)
        try:
            return fn(*args, **kwargs)
        finally:
            STRICT.reset(token)

    return click.option(
        "--strict", is_flag=True, help="Malformed events are an error (exit 2), not a warning."
    )(wrapper)


def cache_options(fn):
    """--no-cache and --cache-dir, for every command that loads profiles (cache.py)."""

    @functools.wraps(fn)
    def wrapper(*args, no_cache: bool, cache_dir: Path | None, **kwargs):
        with cache.configured(enabled=not no_cache, folder=cache_dir):
            return fn(*args, **kwargs)

    wrapper = click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="TRACEANA_CACHE_DIR",
        help="Keep the analysis cache here [default: .traceana-cache/ inside a named folder; "
        "none for a named file or archive].",
    )(wrapper)
    return click.option(
        "--no-cache",
        is_flag=True,
        envvar="TRACEANA_NO_CACHE",
        help="Neither read nor write the analysis cache.",
    )(wrapper)


@contextmanager
def writing(path: Path):
    """Turn an OSError while writing ``path`` into an InputError that names it."""
    try:
        yield
    except OSError as e:
        raise InputError(path, f"cannot write: {e.strerror or e}") from e


def emit(kind: str, data: dict, fmt: str | None, output: Path | None) -> None:
    """Render a result and print it, or write it to the one file the user named."""
    text = for_output(fmt, str(output) if output else None).render(kind, data)
    if output is None:
        click.echo(text, nl=False)
        return
    with writing(output):
        output.write_text(text)


class BatchStopped(BaseException):
    """SIGTERM during `traceana batch`: unwound like Ctrl-C, so the table is written."""


def handle_errors(fn):
    """Turn library errors into one line on stderr and exit code 2; --debug shows the traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        debug = click.get_current_context().find_root().params.get("debug", False)
        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except TraceanaError as e:
            if debug:
                traceback.print_exc()
            click.echo(f"traceana: error: {e}", err=True)
            sys.exit(2)
        except Exception as e:  # a bug: still one line, unless asked for the traceback
            if debug:
                traceback.print_exc()
            click.echo(
                f"traceana: internal error: {type(e).__name__}: {e} "
                "(rerun with --debug for the traceback)",
                err=True,
            )
            sys.exit(2)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="traceana")
@click.option("--debug", is_flag=True, help="Show Python tracebacks on errors.")
def cli(debug: bool) -> None:
    """Where is the accelerator idle, and why? Offline analysis of exported profiles."""


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@output_options
@cache_options
@strict_option
@limit_options
@handle_errors
def info(path: Path, fmt: str | None, output: Path | None) -> None:
    """Show what PATH holds: sources and formats, processes, lanes by kind, NEFF/NTFF files.

    PATH is a profile folder, a single trace file, or a folder of many runs.

    \b
    Example:
        traceana info ./profile_out --format json
    """
    profiles = load_runs(path)
    emit("info", info_analysis(profiles, str(path)), fmt, output)


def _window(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    start, sep, end = text.partition(":")
    if not sep:
        raise UsageError("--window wants START:END, e.g. 0.5ms:2ms")
    return parse_duration(start), parse_duration(end)


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--step", type=int, help="Window: ProfilerStep#N only.")
@click.option(
    "--window",
    "span",
    metavar="START:END",
    help="Window: from START to END after the run's first event, e.g. 0.5ms:2ms.",
)
@click.option(
    "--min-gap",
    default="0ns",
    show_default=True,
    metavar="DURATION",
    help="Leave shorter gaps out of the gap list and counts (their time stays idle).",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="How many gaps and ops the text reports show.",
)
@click.option("--lane", "lane_glob", metavar="GLOB", help="Only hardware lanes matching GLOB.")
@click.option(
    "--by",
    type=click.Choice(["device", "lane", "op"]),
    default="device",
    show_default=True,
    help="The table the text reports lead with.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="EXPR",
    help="Exit 1 when EXPR holds for a run, e.g. 'idle_pct>20', 'gap_max_us>500'.",
)
@output_options
@cache_options
@strict_option
@limit_options
@handle_errors
def gaps(
    path: Path,
    step: int | None,
    span: str | None,
    min_gap: str,
    top: int,
    lane_glob: str | None,
    by: str,
    fail_on: tuple[str, ...],
    fmt: str | None,
    output: Path | None,
) -> None:
    """Every idle gap on the hardware lanes, attributed to the op that ended it and a cause.

    Causes: host_dispatch, transfer, sync, runtime, uncorrelated, other (docs/gaps.md).
    Durations take units: 5us, 1.2ms, 300ns. --fail-on metrics: idle_pct, gap_max_us,
    gap_p50_us, gap_p90_us, gap_p99_us, gap_count, busy_us, idle_us, executions,
    leading_us, trailing_us, idle_<cause>_us. Exit 1 after printing when one holds.

    \b
    Example:
        traceana gaps ./profile_out --format markdown --fail-on 'idle_pct>20'
    """
    conditions = [parse_condition(c, METRICS) for c in fail_on]
    options = dict(
        step=step, span=_window(span), min_gap_ns=parse_duration(min_gap), lanes=lane_glob
    )
    result = gaps_result(load_runs(path), str(path), conditions=conditions, **options)
    result["view"] = {"by": by, "top": top}
    emit("gaps", result, fmt, output)
    _exit_on_failures(result)


def _exit_on_failures(result: dict) -> None:
    """Name every --fail-on condition that held, on stderr, and exit 1 if any did."""
    failures = [f"{run['root']}: {line}" for run in result["runs"] for line in run["failed"]]
    for line in failures:
        click.echo(f"traceana: {line}", err=True)
    if failures:
        sys.exit(1)


@cli.command()
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("head", type=click.Path(path_type=Path))
@click.option("--step", type=int, help="Compare ProfilerStep#N of each.")
@click.option(
    "--min-gap",
    default="0ns",
    show_default=True,
    metavar="DURATION",
    help="Leave shorter gaps out of the gap counts.",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="How many changed ops the text reports show.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="EXPR",
    help="Exit 1 when EXPR holds, e.g. 'idle_pct_delta>2', 'device_time_pct_delta>5'.",
)
@output_options
@cache_options
@strict_option
@limit_options
@handle_errors
def diff(
    base: Path,
    head: Path,
    step: int | None,
    min_gap: str,
    top: int,
    fail_on: tuple[str, ...],
    fmt: str | None,
    output: Path | None,
) -> None:
    """Compare two profiles (BASE, then HEAD): idle, device time, gaps, ops, causes.

    Each of BASE and HEAD is one run: a profile folder, a trace file, or a run's folder
    inside a larger one. --fail-on metrics: every compared metric (idle_pct, device_time,
    idle_us, executions, gap_count, gap_p50_us, gap_p90_us, gap_max_us, idle_<cause>_us)
    with a suffix: _delta (head − base; pp for idle_pct), _pct_delta (relative %), _base,
    _head, or none (head's value). Exit 1 after printing when one holds.

    \b
    Example:
        traceana diff base/ head/ --format markdown --fail-on 'idle_pct_delta>2'
    """
    conditions = [parse_condition(c, DIFF_METRICS, DIFF_METRICS_HINT) for c in fail_on]
    result = diff_profiles(
        load(base),
        load(head),
        str(base),
        str(head),
        conditions=conditions,
        step=step,
        min_gap_ns=parse_duration(min_gap),
    )
    result["view"] = {"top": top}
    emit("diff", result, fmt, output)
    _exit_on_failures(result)


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--limit", type=click.IntRange(min=1), help="Show only the first N ops.")
@output_options
@cache_options
@strict_option
@limit_options
@handle_errors
def ops(path: Path, limit: int | None, fmt: str | None, output: Path | None) -> None:
    """The offline key_averages(): per op, calls, self CPU, device time and device %.

    Device time is the hardware executions linked to each op (docs/graph.md); executions
    that reach no op are the row "(unlinked)". Sorted by device time.

    \b
    Example:
        traceana ops ./profile_out --format markdown
    """
    emit("ops", ops_result(load_runs(path), str(path), limit=limit), fmt, output)


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--op", "op_name", metavar="NAME", help="Only this op (a name or a glob: 'aten::*').")
@click.option("--step", type=int, help="Only executions in ProfilerStep#N.")
@click.option(
    "--by",
    "by",
    type=click.Choice(["execution", "op"]),
    default="execution",
    show_default=True,
    help="One row per hardware execution, or per op.",
)
@click.option("--unlinked", is_flag=True, help="Only the executions that reach no op.")
@click.option("--limit", type=click.IntRange(min=1), help="Show only the first N rows.")
@output_options
@cache_options
@strict_option
@limit_options
@handle_errors
def chain(
    path: Path,
    op_name: str | None,
    step: int | None,
    by: str,
    unlinked: bool,
    limit: int | None,
    fmt: str | None,
    output: Path | None,
) -> None:
    """The dependency chain of every hardware execution: op, dispatch, schedule, hardware.

    Hops in µs: dispatch→schedule, schedule→hardware start, dispatch→hardware start, and the
    hardware duration, with the link method (the least trusted one on the chain).

    \b
    Example:
        traceana chain ./profile_out --op 'aten::mul' --limit 10
    """
    result = chain_result(
        load_runs(path),
        str(path),
        op=op_name,
        step=step,
        unlinked=unlinked,
        group_by_op=by == "op",
        limit=limit,
    )
    emit("chain", result, fmt, output)


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File to write: .graphml, .json (node-link) or .dot.",
)
@cache_options
@strict_option
@limit_options
@handle_errors
def graph(path: Path, output: Path) -> None:
    """Export the dependency graph of one run: framework op → runtime → hardware.

    \b
    Example:
        traceana graph ./profile_out -o chain.graphml
    """
    from trace_analyzer.render import graph as graph_export  # networkx: imported only when asked

    p = load(path)
    g = graph_export.build(p.events, p.links())
    with writing(output):
        graph_export.write(g, output)
    click.echo(
        f"wrote {output}: {g.number_of_nodes()} nodes, {g.number_of_edges()} edges", err=True
    )


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File to write: a Chrome/Perfetto trace, .json (or .json.gz).",
)
@cache_options
@strict_option
@limit_options
@handle_errors
def export(path: Path, output: Path) -> None:
    """Export one run as a trace for the Perfetto UI, with links and gaps drawn in.

    Every lane is a track, every link a flow arrow, every idle gap a slice named by its
    cause, on a track beside its hardware lane (docs/graph.md). Write it outside the
    profile folder: traceana would read it there as another trace of the run.

    \b
    Example:
        traceana export ./profile_out -o annotated.json
    """
    from trace_analyzer.render import perfetto as trace_export

    doc = trace_export.build(load(path, args=True), source=str(path))
    with writing(output):
        trace_export.write(doc, output)
    n = doc["traceana"]
    click.echo(
        f"wrote {output}: {n['events']} events, {n['links']} links, {n['gaps']} gaps, "
        f"{n['tracks']} tracks",
        err=True,
    )


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--base",
    type=click.Path(path_type=Path),
    metavar="BASE",
    help="Compare with this run (e.g. before a change): adds the diff and its timeline.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File to write: .html (one self-contained page) or .md (Markdown; the plots "
    "go beside it as <name>.<plot>.png).",
)
@cache_options
@strict_option
@limit_options
@handle_errors
def report(path: Path, base: Path | None, output: Path) -> None:
    """One page for one run: timeline, gap histogram, summary, ops and gaps; with --base, the diff.

    The page embeds the JSON of `gaps`, `ops` (and `diff`) and shows nothing else; it needs
    no network (docs/report.md). Plots need matplotlib: pip install 'traceana[report]'.

    \b
    Example:
        traceana report ./profile_out --base ./before -o report.html
    """
    from trace_analyzer.render import plots
    from trace_analyzer.render import report as report_page

    report_page.format_of(output)
    plots.require()
    written = report_page.files(report_page.build(path, base), output)
    for target, content in written.items():
        with writing(target):
            target.write_bytes(content)
    beside = f" and {len(written) - 1} plots beside it" if len(written) > 1 else ""
    click.echo(f"wrote {output}{beside}", err=True)


@cli.command()
@click.argument("roots", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The Parquet table to write (or to update, when it exists).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Local worker processes (default: the number of cores; 1 runs in-process).",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Run on an existing Dask cluster, e.g. tcp://host:8786 (the dask extra).",
)
@click.option(
    "--hash",
    "hash_files",
    is_flag=True,
    help="Tell changed runs by the SHA-256 of their files, not size and mtime.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Kill a run's worker after this long and record the run "
    "as failed (retried by the next batch). Default: none.",
)
@click.option(
    "--checkpoint",
    type=click.FloatRange(min=0),
    default=30,
    show_default=True,
    metavar="SECONDS",
    help="Write the table at least this often while runs finish "
    "(always at the end, and when interrupted).",
)
@click.option("--strict", is_flag=True, help="Exit 1 when any run failed.")
@limit_options
@handle_errors
def batch(
    roots: tuple[Path, ...],
    output: Path,
    jobs: int | None,
    scheduler: str | None,
    hash_files: bool,
    timeout: float | None,
    checkpoint: float,
    strict: bool,
) -> None:
    """Analyse every run under ROOTS into one Parquet table, one row per run × device.

    ROOTS are folders (any layout traceana reads), archives (.tar, .tar.gz, .tgz, .zip, read
    in memory) and trace files. A bad run is recorded in the `error` column and the batch goes
    on. With an existing table, unchanged runs are skipped and new or changed ones added; the
    table is replaced atomically (docs/batch.md).

    \b
    Example:
        traceana batch ./archive -o runs.parquet --jobs 8
    """
    import time

    from trace_analyzer import batch as batch_mod

    if output.suffix.lower() != ".parquet":
        raise UsageError(f"{output}: the batch table is Parquet; name a .parquet file")
    n_jobs = jobs or batch_mod.default_jobs()
    bar = None
    started = time.monotonic()

    def progress(done: int, failed: int, total: int) -> None:
        nonlocal bar
        if not batch_mod.stderr_is_terminal():
            return
        if bar is None:
            bar = click.progressbar(
                length=total,
                file=sys.stderr,
                show_eta=True,
                show_pos=True,
                label="runs",
                item_show_func=lambda s: s,
            )
            bar.__enter__()
        rate = done / max(time.monotonic() - started, 1e-9)
        bar.current_item = f"{failed} failed, {rate:.1f} runs/s"
        bar.update(1)

    done_so_far = [0, 0]

    def counted(done: int, failed: int, total: int) -> None:
        done_so_far[:] = [done, total]
        progress(done, failed, total)

    def terminated(signum, frame):  # a CI job cancelled: stop as for Ctrl-C
        raise BatchStopped(signum)

    try:
        previous = signal.signal(signal.SIGTERM, terminated)
    except ValueError:  # not the main thread (an embedding application): leave SIGTERM be
        previous = None
    try:
        with writing(output):
            res = batch_mod.run_batch(
                list(roots),
                output,
                jobs=n_jobs,
                scheduler=scheduler,
                hash_files=hash_files,
                progress=counted,
                timeout=timeout,
                checkpoint_s=checkpoint,
            )
    except (KeyboardInterrupt, BatchStopped) as e:
        if bar is not None:
            bar.__exit__(None, None, None)
            bar = None
            click.echo(err=True)
        done, total = done_so_far
        how = "terminated" if isinstance(e, BatchStopped) else "interrupted"
        if total:
            click.echo(
                f"traceana: {how}: {output} holds every run finished so far ({done} of "
                f"{total} analysed in this batch); rerun the same command to analyse "
                "the rest",
                err=True,
            )
        else:
            click.echo(f"traceana: {how} before any run finished; rerun the same command", err=True)
        sys.exit(143 if isinstance(e, BatchStopped) else 130)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if bar is not None:
            bar.__exit__(None, None, None)
    for line in res.failures:
        click.echo(f"traceana: failed: {line}", err=True)
    click.echo(
        f"{res.found} runs: {res.succeeded} succeeded, {res.failed} failed "
        f"({res.analysed} analysed, {res.skipped} unchanged and skipped); "
        + (
            f"wrote {output} ({res.table.height} rows)"
            if res.analysed or not res.found
            else f"{output} unchanged ({res.table.height} rows)"
        ),
        err=True,
    )
    if strict and res.failed:
        sys.exit(1)


@cli.command()
@click.argument("table", type=click.Path(path_type=Path))
@click.option(
    "--by",
    type=click.Choice(["variant", "backend", "path-glob"]),
    default="variant",
    show_default=True,
    help="Group runs by capture.json's variant or backend, or by "
    "which --glob their run id matches.",
)
@click.option(
    "--glob",
    "globs",
    multiple=True,
    metavar="PATTERN",
    help="With --by path-glob: a group per pattern (first match wins), e.g. '*naive*'.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw idle % and device time over time to this .png (the report extra).",
)
@output_options
@handle_errors
def trend(
    table: Path,
    by: str,
    globs: tuple[str, ...],
    plot_path: Path | None,
    fmt: str | None,
    output: Path | None,
) -> None:
    """Idle % and device time over capture time, per group, from a `traceana batch` table.

    A run's time is its capture.json started_at, else its files' modification time.
    -o trend.png draws the plot instead of printing the table.

    \b
    Example:
        traceana trend runs.parquet --by variant -o trend.png
    """
    from trace_analyzer.batch import trend as trend_mod

    result = trend_mod.trend_result(table, by, globs)
    pngs = [p for p in (plot_path, output) if p is not None and p.suffix.lower() == ".png"]
    if pngs:
        from trace_analyzer.render import plots

        plots.require()
        image = trend_mod.plot(result)
        for target in pngs:
            with writing(target):
                target.write_bytes(image)
            click.echo(f"wrote {target}", err=True)
    if output is None or output.suffix.lower() != ".png":
        emit("trend", result, fmt, output)


def main() -> None:
    """Console-script entry point (exit code 2 for usage errors, as click does)."""
    cli(prog_name="traceana")
