"""`traceana info`: what a path holds (questions/info/analysis.py)."""

from __future__ import annotations

from pathlib import Path

from trace_analyzer.cli.common import Loading, cli, emit, run_command


@cli.command()
@run_command
def info(path: Path, fmt: str | None, output: Path | None, loading: Loading) -> None:
    """Show what PATH holds: sources and formats, processes, lanes by kind, NEFF/NTFF files.

    PATH is a profile folder, a single trace file, or a folder of many runs.

    \b
    Example:
        traceana info ./profile_out --format json
    """
    from trace_analyzer.analyses.results import RunResults
    from trace_analyzer.questions.info.analysis import info as describe

    profiles = loading.runs(path)
    emit(RunResults(str(path), tuple(describe(p) for p in profiles)), fmt, output)
