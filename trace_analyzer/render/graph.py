"""The dependency graph as networkx, built from the edges table only when asked for."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import orjson
import polars as pl

from trace_analyzer.core.link import link
from trace_analyzer.errors import UsageError

NODE_ATTRS = ("name", "lane", "lane_kind", "start_ns", "end_ns")
# File extension -> what is written. DOT needs pydot (the optional `graph` extra).
GRAPH_FORMATS = {".graphml": "GraphML", ".json": "node-link JSON", ".dot": "Graphviz DOT"}


def build(events: pl.DataFrame, edges: pl.DataFrame | None = None) -> nx.DiGraph:
    """Return the DiGraph of linked events: parent -> child, every hardware event a node.

    Node attributes: label (the event's name), lane, kind, start_ns, end_ns. Edge
    attributes: hop, link_method, latency_ns. Unlinked hardware executions are nodes without
    edges, never left out.
    """
    edges = link(events) if edges is None else edges
    ids = pl.concat(
        [edges["src"], edges["dst"], events.filter(pl.col("lane_kind") == "hardware")["event_id"]]
    ).unique()
    nodes = events.filter(pl.col("event_id").is_in(ids.implode())).select("event_id", *NODE_ATTRS)
    g = nx.DiGraph()
    for r in nodes.iter_rows(named=True):
        g.add_node(
            r["event_id"],
            label=r["name"],
            lane=r["lane"],
            kind=str(r["lane_kind"]),
            start_ns=r["start_ns"],
            end_ns=r["end_ns"],
        )
    for r in edges.iter_rows(named=True):
        g.add_edge(
            r["src"],
            r["dst"],
            hop=r["hop"],
            link_method=r["link_method"],
            latency_ns=r["latency_ns"],
        )
    return g


def write(g: nx.DiGraph, path: Path) -> None:
    """Write the graph ``g`` to ``path``, in the format its file extension names."""
    suffix = path.suffix.lower()
    if suffix == ".graphml":
        nx.write_graphml(g, path)
    elif suffix == ".json":
        path.write_bytes(
            orjson.dumps(nx.node_link_data(g, edges="edges"), option=orjson.OPT_INDENT_2)
        )
    elif suffix == ".dot":
        try:
            import pydot  # noqa: F401  (networkx needs it for DOT)
        except ImportError as e:
            raise UsageError("writing DOT needs pydot: pip install 'traceana[graph]'") from e
        nx.nx_pydot.write_dot(g, path)
    else:
        known = ", ".join(f"{ext} ({what})" for ext, what in GRAPH_FORMATS.items())
        raise UsageError(f"{path}: unknown graph format; use one of {known}")
