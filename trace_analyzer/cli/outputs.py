"""The commands that write files for other tools: graph, export (Perfetto), report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from trace_analyzer.cli.common import F, Loading, cli, handle_errors, load_options, writing
from trace_analyzer.cli.messages import plain


def _output(help_text: str) -> Callable[[F], F]:
    """The required -o/--output of a command that writes a file, with its help text."""
    return click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        required=True,
        help=help_text,
    )


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@_output("File to write: .graphml, .json (node-link) or .dot.")
@load_options
@handle_errors
def graph(path: Path, output: Path, loading: Loading) -> None:
    """Export the dependency graph of one run: framework op → runtime → hardware.

    \b
    Example:
        traceana graph ./profile_out -o chain.graphml
    """
    from trace_analyzer.render import graph as graph_export  # networkx: imported only when asked

    p = loading.one(path)
    g = graph_export.build(p.events, p.edges)
    with writing(output):
        graph_export.write(g, output)
    click.echo(
        f"wrote {plain(output)}: {g.number_of_nodes()} nodes, {g.number_of_edges()} edges", err=True
    )


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@_output("File to write: a Chrome/Perfetto trace, .json (or .json.gz).")
@load_options
@handle_errors
def export(path: Path, output: Path, loading: Loading) -> None:
    """Export one run as a trace for the Perfetto UI, with links and gaps drawn in.

    Every lane is a track, every link a flow arrow, every idle gap a slice named by its
    cause, on a track beside its hardware lane (docs/graph.md). Write it outside the
    profile folder: traceana would read it there as another trace of the run.

    \b
    Example:
        traceana export ./profile_out -o annotated.json
    """
    from trace_analyzer.render import perfetto

    profile = loading.one(path, args=True)
    doc = perfetto.build(profile, loading.cache.gaps(profile), source=str(path))
    with writing(output):
        perfetto.write(doc, output)
    n = doc["traceana"]
    click.echo(
        f"wrote {plain(output)}: {n['events']} events, {n['links']} links, {n['gaps']} gaps, "
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
@_output(
    "File to write: .html (one self-contained page) or .md (Markdown; the plots "
    "go beside it as <name>.<plot>.png)."
)
@click.option(
    "--images/--no-images",
    default=True,
    show_default=True,
    help="Draw the PNG plots (matplotlib). --no-images: a .md of text alone (a PR comment "
    "cannot show relative images), a page without the gap histogram.",
)
@load_options
@handle_errors
def report(path: Path, base: Path | None, output: Path, images: bool, loading: Loading) -> None:
    """One page for one run: timeline, gap histogram, summary, ops and gaps; with --base, the diff.

    The page embeds the JSON of `gaps`, `ops`, `ranks`, `kernels`, `launches` (and `diff`;
    `engines` when PATH holds device-profile exports), their long lists cut, and shows
    nothing else; its timeline zooms, and it needs no network (docs/report.md). The PNG
    plots need matplotlib: pip install 'traceana[report]' (or --no-images).

    \b
    Example:
        traceana report ./profile_out --base ./before -o report.html
    """
    from trace_analyzer.analyses.report import report as report_of
    from trace_analyzer.render import plots
    from trace_analyzer.render import report as report_page

    report_page.format_of(output)
    if images:
        plots.require()
    from trace_analyzer.cli.engines import device_of
    from trace_analyzer.cli.kernels import with_neffs

    head = loading.one(path)  # several runs: a usage error naming them
    head = with_neffs(head, path, loading)  # Neuron: its NEFFs, for the kernels section
    before = None if base is None else with_neffs(loading.one(base), base, loading)
    device, note = device_of(path)  # its device-profile exports, for the engines section
    result = report_of(
        head, before, path=str(path), base_path=None if base is None else str(base),
        device=device, device_note=note,
        base_device=None if base is None else device_of(base)[0],  # below the base's ops
    )  # fmt: skip
    written = report_page.files(result, output, images=images)
    for target, content in written.items():
        with writing(target):
            target.write_bytes(content)
    beside = f" and {len(written) - 1} plots beside it" if len(written) > 1 else ""
    click.echo(f"wrote {plain(output)}{beside}", err=True)
