"""The ``traceana`` command: wires discovery, analyses and renderers, and owns exit codes.

Exit codes: 0 success, 1 a requested threshold failed, 2 bad usage or unusable input.
"""

from __future__ import annotations

import functools
import sys
import traceback
from pathlib import Path

import click

from . import __version__
from .errors import InputError, TraceanaError
from .info import info as info_analysis
from .profile import load_runs
from .render import RENDERERS, for_output


def output_options(fn):
    """The options every command that prints results shares: --format and -o."""
    fn = click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
                      help="Write to this file instead of standard output.")(fn)
    fn = click.option("--format", "fmt", type=click.Choice(list(RENDERERS)),
                      help="Output format (default: from the -o extension, else table).")(fn)
    return fn


def emit(kind: str, data: dict, fmt: str | None, output: Path | None) -> None:
    """Render a result and print it, or write it to the one file the user named."""
    text = for_output(fmt, str(output) if output else None).render(kind, data)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text)
    except OSError as e:
        raise InputError(output, f"cannot write: {e.strerror or e}") from e


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
            click.echo(f"traceana: internal error: {type(e).__name__}: {e} "
                       "(rerun with --debug for the traceback)", err=True)
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


def main() -> None:
    """Console-script entry point (exit code 2 for usage errors, as click does)."""
    cli(prog_name="traceana")
