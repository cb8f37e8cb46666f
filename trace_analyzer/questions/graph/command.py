"""`traceana graph`: the dependency graph of one run for other tools (questions/graph/writer.py)."""

from __future__ import annotations

from pathlib import Path

import click

from trace_analyzer.cli.common import Loading, cli, run_to_file, writing
from trace_analyzer.cli.messages import plain


@cli.command()
@run_to_file("File to write: .graphml, .json (node-link) or .dot.")
def graph(path: Path, output: Path, loading: Loading) -> None:
    """Export the dependency graph of one run: framework op → runtime → hardware.

    \b
    Example:
        traceana graph ./profile_out -o chain.graphml
    """
    from trace_analyzer.questions.graph import (
        writer as graph_export,  # networkx: imported only when asked
    )

    p = loading.one(path)
    g = graph_export.graph(p)
    with writing(output):
        graph_export.write(g, output)
    click.echo(
        f"wrote {plain(output)}: {g.number_of_nodes()} nodes, {g.number_of_edges()} edges", err=True
    )
