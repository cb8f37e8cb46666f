"""The dependency graph as networkx, built from the edges table only when asked for.

Names are data in every graph file (docs/graph.md): node-link JSON keeps them as the trace
wrote them; GraphML shows the characters XML 1.0 cannot hold (most C0 controls) as escapes
(``\\x1b``) and writes a carriage return as a character reference, so that every parser
reads the file and gets each name back; DOT quotes every text value itself
(``safe.dot_quoted``), so that no name ends its string, starts an HTML label or holds a
Graphviz escape.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

import networkx as nx
import orjson
import polars as pl

from trace_analyzer import atomic
from trace_analyzer.errors import UsageError
from trace_analyzer.loading.link import link
from trace_analyzer.loading.profile import Profile
from trace_analyzer.render.safe import dot_quoted, xml_text

NODE_ATTRS = ("name", "lane", "lane_kind", "start_ns", "end_ns")
# File extension -> what is written. DOT needs pydot (the optional `graph` extra).
GRAPH_FORMATS = {".graphml": "GraphML", ".json": "node-link JSON", ".dot": "Graphviz DOT"}
# A DOT value pydot writes bare, and safely so: an identifier or an integer.
DOT_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


def graph(profile: Profile) -> nx.DiGraph:
    """Return the dependency graph of one run (``profile``): framework op → runtime →
    hardware, as ``traceana graph`` writes it (``build`` over its events and edges)."""
    return build(profile.events, profile.edges)


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
        buf = io.BytesIO()
        nx.write_graphml(_with_text(g, xml_text), buf)
        # ElementTree writes a carriage return in text as it is, which XML parsers read as a
        # line feed: a character reference keeps it (no other \r is in the file).
        atomic.replace(path, buf.getvalue().replace(b"\r", b"&#13;"))
    elif suffix == ".json":
        atomic.replace(
            path, orjson.dumps(nx.node_link_data(g, edges="edges"), option=orjson.OPT_INDENT_2)
        )
    elif suffix == ".dot":
        try:
            import pydot  # noqa: F401  (networkx needs it for DOT)
        except ImportError as e:
            raise UsageError("writing DOT needs pydot: pip install 'traceana[graph]'") from e
        atomic.replace(path, partial(nx.nx_pydot.write_dot, _with_text(g, _dot_value)))
    else:
        known = ", ".join(f"{ext} ({what})" for ext, what in GRAPH_FORMATS.items())
        raise UsageError(f"{path}: unknown graph format; use one of {known}")


def _dot_value(text: str) -> str:
    """Return a DOT value as pydot should write it: an identifier or a number as it is (pydot
    decides whether to quote it), anything else quoted by ``dot_quoted``, which pydot keeps.
    pydot alone would write a name in ``<...>`` bare (an HTML label) and one in quotes as
    it is, and keep backslashes and control characters."""
    return text if DOT_BARE.fullmatch(text) else dot_quoted(text)


def _with_text(g: nx.DiGraph, fn: Callable[[str], str]) -> nx.DiGraph:
    """Return a copy of ``g`` with ``fn`` applied to every text attribute of its nodes and
    edges (ids are integers; numbers stay numbers)."""
    out = nx.DiGraph()
    for n, data in g.nodes(data=True):
        out.add_node(n, **{k: fn(v) if isinstance(v, str) else v for k, v in data.items()})
    for a, b, data in g.edges(data=True):
        out.add_edge(a, b, **{k: fn(v) if isinstance(v, str) else v for k, v in data.items()})
    return out
