"""`traceana export`: one run as a Perfetto trace (questions/export/perfetto.py)."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer.cli.common import Loading, cli, run_to_file, writing
from trace_analyzer.cli.messages import plain


@cli.command()
@run_to_file("File to write: a Chrome/Perfetto trace, .json (or .json.gz).")
def export(path: Path, output: Path, loading: Loading) -> None:
    """Export one run as a trace for the Perfetto UI, with links and gaps drawn in.

    Every lane is a track, every link a flow arrow, every idle gap a slice named by its
    cause, on a track beside its hardware lane (docs/graph.md). Write it outside the
    profile folder: traceana would read it there as another trace of the run.

    \b
    Example:
        traceana export ./profile_out -o annotated.json
    """
    from trace_analyzer.loading.args_at import ArgsAt
    from trace_analyzer.model.schema import LATER
    from trace_analyzer.progress import step
    from trace_analyzer.questions.critical.analysis import critical
    from trace_analyzer.questions.export import perfetto

    # a Kineto trace's args are read from the file as they are written, not held (LATER)
    profile = loading.one(path, args=LATER)
    later = ArgsAt(profile.events)  # the files as read: one changed before it is written fails
    gaps = loading.cache.gaps(profile)
    path_of_each_step = critical(profile)
    step(f"writing {output.name}")
    with writing(output):  # made as it is written, a batch of records at a time
        doc = perfetto.document(
            profile, gaps, source=str(path), critical=path_of_each_step, args=later
        )
        perfetto.write(doc, output)
    n = doc.header["traceana"]
    click.echo(
        f"wrote {plain(output)}: {n['events']} events, {n['links']} links, {n['gaps']} gaps, "
        f"{n['tracks']} tracks",
        err=True,
    )
