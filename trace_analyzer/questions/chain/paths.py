"""The path of each hardware execution up its links, found by row position
(questions/chain/analysis.py).

Every event has at most one parent (loading/link.py), so an execution's ancestors are one path:
its parent, the parent's parent, ... up to ``MAX_DEPTH`` hops. The path is walked for every
execution at once by gathering from two arrays over the events' rows (the parent of each row
and the method of that link), so no join is made per hop; the nearest op, dispatch, runtime
event and runtime call are then the first hop on the path that is one.
"""

from __future__ import annotations

import polars as pl

from trace_analyzer.loading.link import METHODS
from trace_analyzer.model.schema import by_row

MAX_DEPTH = 8  # hardware -> runtime -> stream -> dispatch -> op is 4 hops; margin for more
RANK = {m: i for i, m in enumerate(METHODS)}  # a method's place: the higher, the less trusted
# link methods whose parent is a Python caller, not an op: the op is named after it
CALLERS = {"graph": "graph replay", "python": "python launch"}


def positions(events: pl.DataFrame, edges: pl.DataFrame) -> tuple[pl.Series, pl.DataFrame]:
    """Return the events' ids by row, and ``edges`` as (src, dst, rank) row positions: the
    profile's table is numbered by row already (``schema.numbered``); another is mapped. An
    edge naming an event the table lacks is left out, as a join would.
    A child given two parents (edges not made by ``link``) keeps the first, by parent id."""
    ids = events["event_id"]
    # no String copy; a byte a rank (the by-row array of walk: 10 MB, not 80, at 10 M events)
    rank = pl.col("link_method").replace_strict(RANK, return_dtype=pl.Int8)
    e = edges.select("src", "dst", rank=rank)
    if by_row(events):  # edges of other events (another table's) link nothing here
        inside = [pl.col(c).is_between(0, len(ids) - 1) for c in ("src", "dst")]
        if not e.select(pl.all_horizontal(inside).all()).item():  # a profile's own: all are
            e = e.filter(*inside)
    else:
        at = pl.DataFrame({"_id": ids, "_row": pl.int_range(len(ids), dtype=pl.Int64, eager=True)})
        e = (
            e.join(at, left_on="src", right_on="_id")
            .join(at, left_on="dst", right_on="_id", suffix="_d")
            .select(src="_row", dst="_row_d", rank="rank")
        )
    if e["dst"].n_unique() != e.height:
        e = e.sort("dst", "src").unique("dst", keep="first", maintain_order=True)
    return ids, e


def walk(events: pl.DataFrame, hw_rows: pl.Series, edges: pl.DataFrame) -> pl.DataFrame:
    """Return per hardware row (``hw``) each hop of its path by depth ``d``: the ancestor's
    row ``a<d>``, the rank of the method of the link to it ``m<d>``, and its kind and source
    (``k<d>``, ``s<d>``); null past the path's top (one depth at least, all null where
    nothing links). Names and starts are gathered by ``nearest`` for the hops it shows only
    (at 10 million events a gather from the whole table per hop and depth is a cache miss
    each)."""

    def by_child(values: pl.Series) -> pl.Series:  # a new array (scatter writes in place)
        none = pl.Series([None], dtype=values.dtype).new_from_index(0, events.height)
        return none.scatter(edges["dst"], values)

    parent, method = by_child(edges["src"]), by_child(edges["rank"])
    # as they are (an enum, a categorical: compared with strings as they are), not every
    # event's cast to String for the few rows on the paths
    kind, source = events["lane_kind"], events["source"]
    cols: list[pl.Series] = [hw_rows.alias("hw")]
    at = hw_rows
    for d in range(1, MAX_DEPTH + 1):
        up = parent.gather(at)
        if d > 1 and up.null_count() == up.len():
            break
        cols += [
            up.alias(f"a{d}"),
            method.gather(at).alias(f"m{d}"),
            kind.gather(up).alias(f"k{d}"),
            source.gather(up).alias(f"s{d}"),
        ]
        at = up
    return pl.DataFrame(cols)


def nearest(path: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Return per hardware row of ``path`` (``walk``) what ``chain_table`` shows of its hops:
    the op (``op``, ``op_event_id``, ``op_start_ns``), the nearest dispatch's start
    (``dispatch_start_ns``), the runtime event (``rt_event_id``), the runtime call's name
    (``runtime``) and the least trusted link method up to the op (``link_method``), from
    ``events`` (rows: ``walk``'s).

    The op is the nearest framework op, or the Python function a launch was linked to by
    the graph or python rule (named ``graph replay (<function>)``, ``python launch (...)``)."""
    levels = range(1, sum(c.startswith("a") for c in path.columns) + 1)

    def first(rule: str) -> pl.Expr:  # the depth of the nearest hop the rule holds at
        return pl.coalesce(*(pl.when(_rule(rule, d)).then(pl.lit(d, pl.Int32)) for d in levels))

    def at(depth: str, col: str) -> pl.Expr:  # column ``col`` at that depth
        return pl.coalesce(*(pl.when(pl.col(depth) == d).then(pl.col(f"{col}{d}")) for d in levels))

    found = path.with_columns(**{f"_{r}": first(r) for r in ("op", "dispatch", "rt", "call")})
    worst = pl.max_horizontal(*(pl.when(pl.col("_op") >= d).then(pl.col(f"m{d}")) for d in levels))
    hops = found.select(
        "hw",
        caller=at("_op", "m"),
        worst=worst,
        **{f"{r}_row": at(f"_{r}", "a") for r in ("op", "dispatch", "rt", "call")},
    )
    name, start, ids = events["name"], events["start_ns"], events["event_id"]
    op = pl.col("op_name")
    named = op
    for method, label in CALLERS.items():
        named = (
            pl.when(pl.col("caller") == RANK[method])
            .then(pl.format(f"{label} ({{}})", op))
            .otherwise(named)
        )
    return hops.with_columns(op_name=name.gather(hops["op_row"])).select(
        "hw",
        op=named,
        op_start_ns=start.gather(hops["op_row"]),
        dispatch_start_ns=start.gather(hops["dispatch_row"]),
        runtime=name.gather(hops["call_row"]),
        link_method=pl.col("worst").replace_strict(
            list(RANK.values()), list(RANK), return_dtype=pl.String
        ),
        op_event_id=ids.gather(hops["op_row"]),
        rt_event_id=ids.gather(hops["rt_row"]),
    )


def _rule(rule: str, d: int) -> pl.Expr:
    """Whether the hop at depth ``d`` is the op, a dispatch, a runtime event, a runtime call."""
    kind, src, m = pl.col(f"k{d}"), pl.col(f"s{d}"), pl.col(f"m{d}")
    return {
        "op": (kind == "framework_op") | m.is_in([RANK[c] for c in CALLERS]),
        "dispatch": kind.is_in(["framework_dispatch", "runtime"]) & (src != "neuron_rt"),
        "rt": src == "neuron_rt",
        "call": kind == "runtime",
    }[rule].fill_null(False)
