"""What the CLI says besides results: events dropped, output that cannot be written, memory.

Every analysing command says on stderr, in one line per run, how many events were dropped and
why, and how many were read as 0 ns for want of a duration (``warn_dropped``): the report body
says it too, but a pipe, a file or JSON output hides the body from the user. Standard output
that cannot take the output (closed, a full disk) is one error line and exit 2; a reader that
went away (``| head -1``) ends the command quietly with 141, as a program killed by SIGPIPE
ends (``to_stdout``). ``MEMORY_ADVICE`` ends the line of a command that ran out of memory.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from trace_analyzer.cli.fault import MEMORY_ADVICE as MEMORY_ADVICE
from trace_analyzer.cli.terminal import EXIT_PIPE as EXIT_PIPE
from trace_analyzer.cli.terminal import silence_stdout
from trace_analyzer.errors import TraceanaError

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from trace_analyzer.inputs.archive import AnyPath
    from trace_analyzer.loading.profile import Profile


def plain(text: object) -> str:
    """``render.safe.plain``, imported when a line is said: importing ``render`` imports
    polars, and a command's ``--help`` or a usage error says nothing through this."""
    from trace_analyzer.render.safe import plain as made_plain

    return made_plain(text)


class OutputError(TraceanaError):
    """Standard output cannot take the output (closed, a full disk): one line, exit 2."""


# What each command's results are, for the warning that events were dropped.
RESULTS = {
    "gaps": "gaps",
    "ops": "ops",
    "chain": "chains",
    "diff": "the diff",
    "info": "lanes and spans",
}
# A reader's warning that it dropped records: "<file>: <n> <what> dropped[: <details>]".
READER_DROPPED = re.compile(r"^(?P<file>(?:(?!: ).)+): (?P<n>\d[\d,]*) (?P<what>[^:]+?) dropped\b")
# The Kineto reader's warning of X records without dur, read as 0 ns (not dropped: defaulted),
# as kineto_records.no_dur_words words it.
NO_DUR = re.compile(r"^(?:(?!: ).)+: (?P<n>\d[\d,]*) X records? without dur, read as 0 ns$")


def dropped_line(p: Profile, results: str = "gaps") -> str | None:
    """Return the one line that says how many events of ``p`` were dropped, and why (the
    malformed rows by reason, and the records each reader dropped), and how many were read
    with a duration of 0 ns for want of one (Kineto X records without dur); None when none.

    A row that ends before it starts has both times, so that reason counts rows no other
    reason counts, as do the events the readers could not make (a B without its E) and those
    far outside the run; but a row may lack several columns (no start and no end). With more
    than one missing column among the reasons the total is not known, and the line gives none.
    """
    core = {why.replace("null ", "no ", 1): n for why, n in p.dropped.items() if n}
    reasons = [f"{n:,} {why}" for why, n in core.items()]
    lacking = [n for why, n in core.items() if why.startswith("no ")]
    total = sum(core.values())
    for w in p.warnings:
        m = READER_DROPPED.match(w)
        if m:  # (the malformed rows' own warning starts with words: counted above)
            n = int(m["n"].replace(",", ""))
            total += n
            reasons.append(f"{n:,} {m['what']} in {Path(m['file']).name}")
    no_dur = sum(int(m["n"].replace(",", "")) for w in p.warnings if (m := NO_DUR.match(w)))
    defaulted = f"{no_dur:,} X record{'s' * (no_dur != 1)} without dur, read as 0 ns"
    if not reasons:
        return f"{p.name}: {defaulted}" if no_dur else None
    why = ", ".join(reasons)
    if not p.events.height:
        line = f"{p.name}: every event was dropped ({why}): nothing is left to analyse"
    elif len(lacking) > 1:
        line = f"{p.name}: events dropped ({why}; an event may lack several)"
    else:
        line = f"{p.name}: {total:,} event{'s' * (total != 1)} dropped ({why})"
    if p.events.height:
        line += f"; {results} may be missing events"
    return line + (f"; {defaulted}" if no_dur else "")


def warn_dropped(p: Profile) -> Profile:
    """Say on stderr, in one line, that events of ``p`` were dropped, or read as 0 ns for
    want of a duration (``dropped_line``): the report body says it too, but a pipe or a file
    hides the body from the user."""
    ctx = click.get_current_context(silent=True)
    name = ctx.info_name or "" if ctx is not None else ""
    line = dropped_line(p, RESULTS.get(name, f"the {name or 'results'}"))
    if line is not None:
        click.echo(f"traceana: warning: {plain(line)}", err=True)
    return p


def say_passed(where: object, passed: Sequence[tuple[AnyPath, str]], verbose: bool) -> None:
    """Say on stderr what discovery passed by under ``where`` (a folder it could not read, a
    FIFO named trace.json): a line per kind, with a count; each one, ``verbose``. The runs'
    warnings say it too, but in the body, which a pipe, a file or JSON output hides."""
    from trace_analyzer.inputs.discover import passed_lines

    if verbose:
        lines = [f"{path}: {why}" for path, why in passed]
    else:
        lines = passed_lines(list(passed), where, listed=1, hint=" (--verbose lists them)")
    for line in lines:
        click.echo(f"traceana: warning: {plain(line)}", err=True)


def to_stdout(text: str | Iterable[bytes | memoryview]) -> None:
    """Print ``text`` on standard output: text, or a renderer's UTF-8 pieces, written as they
    come (``render.sink``). A reader that went away (``| head -1``) ends the command quietly
    with 141 (``EXIT_PIPE``); a closed or full standard output is an OutputError: what was
    not written is lost, and the user must know."""
    if sys.stdout is None:  # started with standard output closed (`>&-`)
        raise OutputError("cannot write the output: standard output is closed")
    try:
        if isinstance(text, str):
            click.echo(text, nl=False)  # it flushes: a full disk says so here
        else:
            from trace_analyzer.render.sink import to_stream

            to_stream(sys.stdout, text)  # it flushes too
    except BrokenPipeError:
        silence_stdout()
        sys.exit(EXIT_PIPE)
    except OSError as e:
        silence_stdout()
        raise OutputError(f"cannot write the output: {e.strerror or e}") from e


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
    "run": "--run",
}
