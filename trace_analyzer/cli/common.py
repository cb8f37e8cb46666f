"""What every ``traceana`` command shares: the group, options, output, and error handling.

The CLI maps flags and environment variables to the library's arguments (``Loading``,
``View``), and words the library's errors as flags (``FLAGS``). Exit codes: 0 success, 1 a
requested threshold failed, 2 bad usage or unusable input (and out of memory, and an output
that cannot be written), 130 interrupted (Ctrl-C), 141 the reader of standard output went away
(``| head``: quietly, as a program killed by SIGPIPE). Option names mean one thing in every
command (``--top N``: how many rows; docs/output.md).
"""

from __future__ import annotations

import functools
import os
import stat
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from trace_analyzer.cli.fault import analysing, out_of_memory, panicked
from trace_analyzer.cli.group import cli as cli  # the commands register on it
from trace_analyzer.cli.messages import MEMORY_ADVICE, plain, say_passed, to_stdout, warn_dropped
from trace_analyzer.cli.terminal import MIN_WIDTH as MIN_WIDTH
from trace_analyzer.cli.terminal import terminal_width
from trace_analyzer.errors import InputError, TraceanaError, UsageError
from trace_analyzer.units import parse_size

# Only for the annotations: the command modules import no polars until a command runs, so
# that a command's --help and a usage error are said without it (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from trace_analyzer.analyses.results import RunResult, RunResults
    from trace_analyzer.cache import Cache
    from trace_analyzer.loading.profile import Profile
    from trace_analyzer.render.view import View

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
R = TypeVar("R", bound="RunResult")

# The library's parameter names as the CLI's flags, for its error messages.
FLAGS = {
    "min_gap_ns": "--min-gap",
    "lanes": "--lane",
    "span": "--window",
    "step": "--step",
    "max_bytes": "--max-bytes",
    "strict": "--strict",
    "globs": "--glob",
    "limit": "--top",
    "ranks": "--rank",
    "neff": "--neff",
}
MAX_BYTES_ENV = "TRACEANA_MAX_BYTES"
# The --format choices: ``render.RENDERERS``'s names, written here so that declaring the
# option imports no renderer (tests/cli/test_startup.py holds the two equal).
FORMATS = ("table", "markdown", "json", "csv")


@dataclass(frozen=True)
class Loading:
    """How the analysing commands load: through the cache, strict or not, with a size cap."""

    cache: Cache
    strict: bool = False
    max_bytes: int | None = None
    ranks: str | None = None  # --rank N|GLOB: only those ranks' processes (loading/select.py)
    verbose: bool = False  # --verbose: each thing discovery passed by, not a count per kind

    def runs(self, path: Path, *, args: bool = False) -> list[Profile]:
        """Every run under ``path`` (their files kept as this command's inputs); with
        ``ranks``, each run's ranks it names, and the runs with none of them left out (none
        left: the first run's usage error)."""
        profiles = self._reading(
            path,
            lambda: self.cache.load_runs(
                path, args=args, strict=self.strict, max_bytes=self.max_bytes
            ),
        )
        say_passed(path, [x for p in profiles for x in p.run.not_regular], self.verbose)
        for p in profiles:
            warn_dropped(read_from(p))
        if self.ranks is None:
            return profiles
        from trace_analyzer.loading.select import select_in_runs

        return select_in_runs(profiles, self.ranks)

    def analysed(self, path: Path, analyse: Callable[[Profile], R]) -> RunResults[R]:
        """``analyse`` of every run under ``path`` (``runs``), each with the run's warnings:
        what a command over PATH prints."""
        from trace_analyzer.analyses.results import RunResults

        profiles = self.runs(path)
        results = tuple(analyse(p) for p in profiles)
        return RunResults(str(path), results, warnings=[p.warnings for p in profiles])

    def one(self, path: Path, *, args: bool = False) -> Profile:
        """The one run under ``path`` (several: a usage error naming them), with ``ranks``
        its ranks named."""
        profile = self._reading(
            path,
            lambda: self.cache.load(path, args=args, strict=self.strict, max_bytes=self.max_bytes),
        )
        say_passed(path, profile.run.not_regular, self.verbose)
        return self.selected(warn_dropped(read_from(profile)))

    def selected(self, profile: Profile) -> Profile:
        """``profile`` with only the ranks ``--rank`` names (all without it)."""
        if self.ranks is None:
            return profile
        from trace_analyzer.loading.select import select_ranks

        return select_ranks(profile, self.ranks)

    @staticmethod
    def _reading(path: Path, load: Callable[[], T]) -> T:
        """Return ``load()``; a MemoryError in it is an InputError naming ``path`` (raised
        once the failed read's memory is let go). ``path`` is kept as what the command
        analyses, for a MemoryError later on (``handle_errors``)."""
        ctx = click.get_current_context(silent=True)
        if ctx is not None:
            ctx.find_root().meta["traceana.analysing"] = path
        analysing(path)  # the line a native abort ends with (fault.py)
        try:
            return load()
        except BaseException as e:  # MemoryError, or polars' panic on a failed allocation
            if not out_of_memory(e):
                raise
        finally:  # a scan begun and not taken (a run the cache served): let go
            from trace_analyzer.readers.ahead import forget

            forget()
            # leaving the handler drops the traceback, and the memory it holds
        raise InputError(path, f"out of memory reading it ({MEMORY_ADVICE})")


MAX_ROWS = 1_000_000_000  # a --top beyond this means "all": taken as this many


class Rows(click.IntRange):
    """A count of rows (``--top N``): at least 1; a larger number than any table holds is
    taken as ``MAX_ROWS`` (all of them), never an overflow further on."""

    def __init__(self) -> None:
        super().__init__(min=1)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return min(super().convert(value, param, ctx), MAX_ROWS)


ROWS = Rows()

# The parameters of a command that name what it writes, not what it reads.
WRITTEN = ("output", "plot_path", "cache_dir")


def read_from(profile: Profile) -> Profile:
    """Keep the files of ``profile``'s run (its traces, exports, NEFF/NTFF, capture.json; an
    archive for its members) as inputs of this command, which ``writing`` will not replace."""
    run = profile.run
    paths = [s.path for s in run.sources] + run.neffs + run.ntffs + run.raw + run.captures
    inputs(*paths)
    return profile


def inputs(*paths: object) -> None:
    """Keep ``paths`` (files, folders of Parquet tables, archive members) as this command's
    inputs; outside a click command, nothing."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return
    kept: set[tuple[int, int]] = ctx.find_root().meta.setdefault("traceana.inputs", set())
    for path in paths:
        archive = getattr(path, "archive", None)  # an archive member: the archive itself
        local = Path(str(archive.path if archive is not None else path))
        files = [f for f in local.rglob("*") if f.is_file()] if local.is_dir() else [local]
        kept.update(i for i in map(file_identity, files) if i is not None)


def file_identity(path: Path) -> tuple[int, int] | None:
    """The file ``path`` names, as its device and inode (through links: a symbolic link, a
    hard link and a bind mount of one file are the same file); None for none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _named_inputs(ctx: click.Context) -> set[tuple[int, int]]:
    """The files a command was given to read: its Path arguments and options but the ones
    that name what it writes."""
    out: list[Path] = []
    for name, value in ctx.params.items():
        values = value if isinstance(value, tuple | list) else (value,)
        out += [v for v in values if isinstance(v, Path) and name not in WRITTEN]
    return {i for i in map(file_identity, out) if i is not None}


def refuse_inputs(path: Path) -> None:
    """Raise a UsageError when writing ``path`` would replace a file this command reads: a
    trace, an export, a summary or a table named or found in a run, compared as files (device
    and inode), not as names."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return
    kept = ctx.find_root().meta.get("traceana.inputs", set()) | _named_inputs(ctx)
    if (identity := file_identity(path)) is not None and identity in kept:
        raise UsageError(
            f"-o {path}: that file is an input of this command; traceana never replaces what "
            "it reads: name another file"
        )


MARKDOWN_TOP = 10  # rows of an ops or chain Markdown report without --top


def top_option(what: str) -> Callable[[F], F]:
    """--top N (its old name --limit still taken) of ops and chain: only the first N rows, in
    every format; without it every row, the Markdown report showing the first 10."""
    return click.option(
        "--top",
        "--limit",
        "top",
        type=ROWS,
        metavar="N",
        help=f"Only the first N {what} (every format; without it all of them, Markdown "
        f"showing the first {MARKDOWN_TOP}).",
    )


def output_file(help_text: str) -> Callable[[F], F]:
    """The required -o/--output of a command that writes a file, with its help text."""
    return click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        required=True,
        help=help_text,
    )


def output_options(fn: F) -> F:
    """The options every command that prints results shares: --format and -o."""
    fn = click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Write to this file instead of standard output (.txt, .md, .json, .csv: the "
        "format from the extension unless --format is given).",
    )(fn)
    fn = click.option(
        "--format",
        "fmt",
        type=click.Choice(list(FORMATS)),
        help="Output format (default: from the -o extension, else table).",
    )(fn)
    return fn


def check_output(fmt: str | None, output: Path | None) -> None:
    """Refuse, before anything is read, an -o whose extension names no format when --format
    does not name one (a UsageError: exit 2 and one line)."""
    from trace_analyzer.render import for_output

    for_output(fmt, None if output is None else str(output))


def limit_options(fn: F) -> F:
    """--max-bytes (or TRACEANA_MAX_BYTES), given to the command as ``max_bytes`` (bytes)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, max_bytes: str | None, **kwargs: Any) -> Any:
        try:
            cap = None if max_bytes is None else parse_size(max_bytes)
        except UsageError as e:  # a bad size is a usage error now, not in a worker later
            click.echo(f"traceana: error: {plain(e.worded(FLAGS))}", err=True)
            sys.exit(2)
        return fn(*args, max_bytes=cap, **kwargs)

    return click.option(
        "--max-bytes",
        metavar="SIZE",
        envvar=MAX_BYTES_ENV,
        show_envvar=False,
        help="Cap on what one compressed input (a .gz trace, an archive) may inflate to, "
        "e.g. 4G [default: an eighth of the memory traceana may use, at most 16GiB].",
    )(wrapper)  # type: ignore[return-value]


def load_options(fn: F) -> F:
    """--no-cache, --cache-dir, --strict, --max-bytes and --rank, given as ``loading:
    Loading``."""

    @functools.wraps(fn)
    def wrapper(
        *args: Any,
        no_cache: bool,
        cache_dir: Path | None,
        strict: bool,
        max_bytes: int | None,
        rank: str | None,
        verbose: bool,
        **kwargs: Any,
    ) -> Any:
        if isinstance(path := kwargs.get("path"), Path):  # its trace scanned as polars loads
            from trace_analyzer.readers.ahead import begin

            begin(path)
        from trace_analyzer.cache import Cache

        cache = Cache(enabled=not no_cache, folder=cache_dir)
        loading = Loading(cache, strict, max_bytes, rank, verbose)
        return fn(*args, loading=loading, **kwargs)

    decorated = limit_options(wrapper)
    decorated = click.option(
        "--verbose",
        "-v",
        is_flag=True,
        help="List each file or folder discovery passed by (a folder it cannot read, a FIFO), "
        "not a count of each kind.",
    )(decorated)
    decorated = click.option(
        "--rank",
        metavar="N|GLOB",
        help="Only this rank (a number), or the ranks a glob names (e.g. '[0-3]'): from "
        "distributedInfo, the file name or the Neuron worker id.",
    )(decorated)
    decorated = click.option(
        "--strict", is_flag=True, help="Malformed events are an error (exit 2), not a warning."
    )(decorated)
    decorated = click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="TRACEANA_CACHE_DIR",
        help="Keep the analysis cache here [default: .traceana-cache/ inside a named folder; "
        "none for a named file or archive].",
    )(decorated)
    return click.option(  # type: ignore[return-value]
        "--no-cache",
        is_flag=True,
        envvar="TRACEANA_NO_CACHE",
        help="Neither read nor write the analysis cache.",
    )(decorated)


PATH = click.argument("path", type=click.Path(path_type=Path))


def run_options(fn: F) -> F:
    """What every command that reads runs and prints what it found stacks below its own
    options: --format and -o (an -o naming no format refused before anything is read:
    ``check_output``), the load options given as ``loading: Loading``, and the error handling."""

    @functools.wraps(fn)
    def checked(*args: Any, fmt: str | None, output: Path | None, **kwargs: Any) -> Any:
        check_output(fmt, output)
        return fn(*args, fmt=fmt, output=output, **kwargs)

    return output_options(load_options(handle_errors(checked)))  # type: ignore[return-value]


def run_command(fn: F) -> F:
    """``run_options`` and the PATH argument: a command over the runs under PATH that prints
    what it found (below the command's own options)."""
    return PATH(run_options(fn))


def run_to_file(help_text: str) -> Callable[[F], F]:
    """What a command that writes one run as a file stacks: PATH, the required -o FILE
    (``output_file(help_text)``), the load options given as ``loading: Loading``, and the
    error handling."""

    def decorate(fn: F) -> F:
        return PATH(output_file(help_text)(load_options(handle_errors(fn))))

    return decorate


def refuse_pipes(path: Path) -> None:
    """Raise a UsageError for an ``-o`` that is a named pipe or a socket (writing one waits for
    a reader that may never come); /dev/stdout and other /dev or /proc names are taken."""
    if str(path).startswith(("/dev/", "/proc/")):
        return
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # absent (or unreadable): the write says what is wrong
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        kind = "a named pipe" if stat.S_ISFIFO(mode) else "a socket"
        raise UsageError(f"-o {path}: that is {kind}, not a file; name a file to write")


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Refuse a ``path`` that is one of the command's inputs (``refuse_inputs``), and turn an
    OSError while writing it into an InputError that names it."""
    refuse_inputs(path)
    refuse_pipes(path)
    try:
        yield
    except OSError as e:
        raise InputError(path, f"cannot write: {e.strerror or e}") from e


def emit(
    result: RunResults[Any], fmt: str | None, output: Path | None, view: View | None = None
) -> None:
    """Render a result and print it, or write it to the one file the user named (``view``:
    the renderers' options, their defaults when None)."""
    from trace_analyzer.render import View, for_output
    from trace_analyzer.render.sink import to_file

    renderer = for_output(fmt, str(output) if output else None)
    pieces = renderer.pieces(result, options=view or View(), width=terminal_width(output))
    if output is None:
        to_stdout(pieces)  # UTF-8 bytes as they are rendered: no text copy of the whole
        return
    with writing(output):
        to_file(output, pieces)  # beside it, then renamed over it


def exit_on_failures(result: RunResults[Any]) -> None:
    """Name every --fail-on condition that held, on stderr, and exit 1 if any did."""
    failures = [f"{run.root}: {line}" for run in result.runs for line in run.failed]
    for line in failures:
        click.echo(f"traceana: {plain(line)}", err=True)
    if failures:
        sys.exit(1)


def handle_errors(fn: F) -> F:
    """Turn library errors into one line on stderr and exit code 2; --debug shows the traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        debug = ctx.find_root().params.get("debug", False)
        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:  # Ctrl-C: 130, as a shell reports it, never a gate's 1
            click.echo("traceana: interrupted", err=True)
            sys.exit(130)
        except TraceanaError as e:
            if debug:
                traceback.print_exc()
            click.echo(f"traceana: error: {plain(e.worded(FLAGS))}", err=True)
            sys.exit(2)
        except MemoryError:  # anywhere past reading (``Loading`` words a read that ran out)
            if debug:
                traceback.print_exc()
        except Exception as e:  # a bug: still one line, unless asked for the traceback
            if debug:
                traceback.print_exc()
            click.echo(
                f"traceana: internal error: {type(e).__name__}: {plain(e)} "
                "(rerun with --debug for the traceback)",
                err=True,
            )
            sys.exit(2)
        except BaseException as e:  # polars' panics are BaseExceptions (fault.panicked)
            if not panicked(e):
                raise
            if debug:
                traceback.print_exc()
            if not out_of_memory(e):
                click.echo(
                    f"traceana: internal error: polars panicked: {plain(e)} "
                    "(rerun with --debug for the traceback)",
                    err=True,
                )
                sys.exit(2)
        # Out of memory: said once the handler has let the exception, and its memory, go.
        what = plain(ctx.find_root().meta.get("traceana.analysing") or _first_input(ctx))
        click.echo(f"traceana: error: out of memory analysing {what} ({MEMORY_ADVICE})", err=True)
        sys.exit(2)

    return wrapper  # type: ignore[return-value]


def _first_input(ctx: click.Context) -> str:
    """The first path a command was given to read (what it ran out of memory on)."""
    for name, value in ctx.params.items():
        values = value if isinstance(value, tuple | list) else (value,)
        paths = [v for v in values if isinstance(v, Path)]
        if paths and name not in WRITTEN:
            return str(paths[0])
    return "the input"
