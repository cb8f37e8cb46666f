"""What every ``traceana`` command shares: the group, options, output, and error handling.

The CLI maps flags and environment variables to the library's arguments (``Loading``,
``View``), and words the library's errors as flags (``FLAGS``). Exit codes: 0 success, 1 a
requested threshold failed, 2 bad usage or unusable input (and out of memory, and an output
that cannot be written), 130 interrupted (Ctrl-C), 141 the reader of standard output went away
(``| head``: quietly, as a program killed by SIGPIPE). Option names mean one thing in every
command (``--top N``: how many rows the text and Markdown reports show; docs/output.md,
"Conventions").
"""

from __future__ import annotations

import functools
import stat
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from trace_analyzer.cli.fault import out_of_memory, panicked
from trace_analyzer.cli.group import cli as cli  # the commands register on it
from trace_analyzer.cli.loading import MAX_BYTES_ENV as MAX_BYTES_ENV
from trace_analyzer.cli.loading import Loading as Loading
from trace_analyzer.cli.loading import by_rank_options as by_rank_options
from trace_analyzer.cli.loading import file_identity
from trace_analyzer.cli.loading import limit_options as limit_options
from trace_analyzer.cli.loading import load_options as load_options
from trace_analyzer.cli.loading import read_from as read_from
from trace_analyzer.cli.messages import FLAGS as FLAGS
from trace_analyzer.cli.messages import MEMORY_ADVICE, plain, to_stdout
from trace_analyzer.cli.terminal import MIN_WIDTH as MIN_WIDTH
from trace_analyzer.cli.terminal import terminal_width
from trace_analyzer.errors import InputError, TraceanaError, UsageError

# Only for the annotations: the command modules import no polars until a command runs, so
# that a command's --help and a usage error are said without it (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from trace_analyzer.analyses.results import RunResult, RunResults
    from trace_analyzer.render.view import View

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
R = TypeVar("R", bound="RunResult")

# The --format choices: ``render.RENDERERS``'s names, written here so that declaring the
# option imports no renderer (tests/cli/test_startup.py holds the two equal).
FORMATS = ("table", "markdown", "json", "csv")


MAX_ROWS = 1_000_000_000  # a --top beyond this means "all": taken as this many


class Rows(click.IntRange):
    """A count of rows (``--top N``): at least 1; a larger number than any table holds is
    taken as ``MAX_ROWS`` (all of them), never an overflow further on."""

    def __init__(self) -> None:
        super().__init__(min=1)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return min(super().convert(value, param, ctx), MAX_ROWS)


ROWS = Rows()


class Words(click.Choice):  # type: ignore[type-arg]
    """The words of a ``--by`` (docs/output.md, "Conventions": one word per concept in every
    command); a word renamed (``old``: old word -> new) is still taken as the new one, with
    a note on stderr naming it. --help lists the new words only."""

    def __init__(self, words: tuple[str, ...], old: dict[str, str] | None = None) -> None:
        super().__init__(list(words))
        self.old = dict(old or {})

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value in self.old:
            flag = param.opts[0] if param is not None and param.opts else "--by"
            new = self.old[value]
            click.echo(
                f"traceana: note: {flag} {value} is now {flag} {new}, the same grouping "
                '(docs/output.md, "Conventions")',
                err=True,
            )
            value = new
        return super().convert(value, param, ctx)


# The parameters of a command that name what it writes, not what it reads.
WRITTEN = ("output", "plot_path", "cache_dir")


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


TOP = 10  # rows of a text or Markdown report without --top (View's default)


def top_option(what: str) -> Callable[[F], F]:
    """--top N, one meaning in every command (docs/output.md, "Conventions"): how many
    ``what`` the text and Markdown reports show, default ``TOP``; JSON and CSV have every
    row."""
    return click.option(
        "--top",
        type=ROWS,
        default=TOP,
        show_default=True,
        metavar="N",
        help=f"How many {what} the text and Markdown reports show (JSON and CSV have them all).",
    )


def limit_option(what: str) -> Callable[[F], F]:
    """--limit N of ops and chain: only the first N rows, in every format (JSON and CSV
    too); without it every row."""
    return click.option(
        "--limit",
        type=ROWS,
        metavar="N",
        help=f"Only the first N {what}, in every format (default: all; the text and Markdown "
        "reports show them all unless --top asks for fewer).",
    )


def rows_shown(top: int, limit: int | None) -> int:
    """The rows a text or Markdown report shows: ``top``, but the ``limit`` rows a --limit
    kept when --top is left at its default (``--limit 25`` shows 25)."""
    ctx = click.get_current_context(silent=True)
    given = ctx is not None and ctx.get_parameter_source("top") not in (
        click.core.ParameterSource.DEFAULT,
        None,
    )
    return top if given or limit is None else limit


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


ALLOW_EMPTY_GATE = click.option(
    "--allow-empty-gate",
    is_flag=True,
    help="Let a --fail-on gate that compared nothing (every metric undefined) pass, saying so; "
    "without it such a gate is exit 2.",
)


def exit_on_failures(result: RunResults[Any]) -> None:
    """Name every --fail-on condition that held, on stderr, and exit 1 if any did; a gate
    that compared nothing and was allowed to pass says so on stderr (gates.py)."""
    from trace_analyzer.units import EMPTY

    for run in result.runs:
        for note in getattr(run, "gate_notes", ()):
            if note.startswith(EMPTY):
                click.echo(f"traceana: warning: {plain(f'{run.root}: {note}')}", err=True)
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
