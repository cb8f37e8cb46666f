"""Each collective piece of device work of a run, with what its trace says of it
(docs/distributed.md, "Collectives").

A **record** is one ``communication`` piece of work (``ranks.analysis.work``): its rank, pid,
device, event, name, times and step, and where the trace has them its ``kind`` (allreduce,
allgather, ...), process group (``group``: ``Process Group Name``; ``group_ranks``: its
``Process Group Ranks`` as ``[0, 1]``, sorted; ``group_size``), element counts, ``dtype`` and
its size in bytes (``DTYPE_BYTES``), the peer of a send or a receive (``peer``) and ``seq``,
its place in its group on its rank. These fields are the kernel's own args, else those of
the ``record_param_comms`` host op that launched it (the op with its External id, else the
innermost one around its launching runtime call on that thread), else, for the group only,
the trace's ``distributedInfo.pg_config`` when that names one group. The kind falls back to
the kernel's name (``ncclKernel_AllReduce_...``, ``ncclDevKernel_SendRecv``). Only the
collectives' and their host ops' args are read (``args_at`` spans, else ``args_json``);
a run read without args gives names alone.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import polars as pl

from trace_analyzer.loading.args_at import ArgsAt
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import matching

# The bytes of one element of each dtype as PyTorch's record_param_comms writes it (c10's
# ScalarType names).
DTYPE_BYTES = {
    "Bool": 1, "Byte": 1, "Char": 1, "Short": 2, "Int": 4, "Long": 8,
    "Half": 2, "BFloat16": 2, "Float": 4, "Double": 8,
    "ComplexHalf": 4, "ComplexFloat": 8, "ComplexDouble": 16,
    "UInt16": 2, "UInt32": 4, "UInt64": 8,
    "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1,
}  # fmt: skip
# The kinds, as their names start once lower-cased and without underscores (PyTorch's
# ``_allgather_base`` and ``allgather_into_tensor_coalesced`` are allgathers); the longer
# first, so that an allreduce is not a reduce.
KINDS = (
    "allreduce", "allgather", "reducescatter", "alltoall", "sendrecv", "broadcast",
    "reduce", "send", "recv", "barrier", "gather", "scatter",
)  # fmt: skip
KERNEL = re.compile(r"(?i)(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)")
HOST_OP = "^record_param_comms$"
# The args fields read, and the column each fills.
FIELDS = {
    "Collective name": "kind",
    "Process Group Name": "group",
    "Process Group Ranks": "group_ranks",
    "Group size": "group_size",
    "In msg nelems": "in_nelems",
    "Out msg nelems": "out_nelems",
    "dtype": "dtype",
    "Seq": "seq_arg",
    "Rank": "rank_arg",
}
COLUMNS = {
    "rank": pl.Int64, "pid": pl.Int64, "device": pl.String, "event_id": pl.Int64,
    "name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64, "step": pl.Int64,
    "kind": pl.String, "group": pl.String, "group_ranks": pl.String, "group_size": pl.Int64,
    "in_nelems": pl.Int64, "out_nelems": pl.Int64, "dtype": pl.String,
    "dtype_bytes": pl.Int64, "peer": pl.Int64, "seq": pl.Int64, "fields_from": pl.String,
}  # fmt: skip


def kind_of(text: object) -> str | None:
    """The kind of a ``Collective name`` (or a kernel's word after ``Kernel_``): the first
    of ``KINDS`` it starts with, lower-cased and without underscores; else it so written."""
    if not isinstance(text, str) or not text:
        return None
    plain = text.lower().replace("_", "").lstrip()
    return next((k for k in KINDS if plain.startswith(k)), plain)


def kind_of_kernel(name: str) -> str | None:
    """The kind an NCCL/RCCL kernel's name says (``ncclKernel_AllReduce_RING_LL_Sum_float``:
    allreduce), None when it says none (``ncclDevKernel_Generic``)."""
    found = KERNEL.search(name)
    kind = kind_of(found.group(1)) if found else None
    return kind if kind in KINDS else None


def ranks_text(value: object) -> str | None:
    """``Process Group Ranks`` (``"[0, 1]"``, or a list) in one form: its ranks sorted, as
    ``[0, 1]``; None when empty or not a list of numbers."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(value, list) or not value or not all(isinstance(r, int) for r in value):
        return None
    return "[" + ", ".join(str(r) for r in sorted(value)) + "]"


def records(profile: Profile, done: pl.DataFrame | None = None) -> pl.DataFrame:
    """Return one row per collective piece of device work of ``profile`` (module doc;
    ``done``: its ``ranks.analysis.work``, made when not given), in order of rank, pid and
    start."""
    from trace_analyzer.questions.ranks.analysis import work

    events = profile.keyed
    done = work(events, profile.edges) if done is None else done
    coll = done.filter(pl.col("kind") == "communication")
    if coll.is_empty():
        return pl.DataFrame(schema=COLUMNS)
    base = coll.select("event_id", "pid", "device", "name", "start_ns", "end_ns", "step").join(
        events.select("event_id", "rank", "file"), on="event_id", how="left"
    )
    host = host_ops(events, profile.edges, coll)
    texts = _texts(events, [*coll["event_id"].to_list(), *host["host_op"].drop_nulls()])
    own = {e: _fields(texts.get(e)) for e in coll["event_id"].to_list()}
    theirs = dict(zip(host["event_id"].to_list(), host["host_op"].to_list(), strict=True))
    rows = []
    for r in base.iter_rows(named=True):
        mine, op = own[r["event_id"]], theirs.get(r["event_id"])
        theirs_text = None if op is None else texts.get(op)
        fields, source = (mine, "kernel") if mine else (_fields(theirs_text), "host op")
        rows.append({**r, **_columns(fields, r["name"]), "fields_from": source if fields else None})
    out = pl.DataFrame(rows, schema={**COLUMNS, "file": pl.String, "seq_arg": pl.Int64},
                       strict=False)  # fmt: skip
    out = _default_group(out, profile)
    return _numbered(out).select(*COLUMNS).sort("rank", "pid", "start_ns", nulls_last=True)


def host_ops(events: pl.DataFrame, edges: pl.DataFrame, coll: pl.DataFrame) -> pl.DataFrame:
    """Return per collective of ``coll`` (``event_id``, ``launch``) the ``record_param_comms``
    host op that launched it (``host_op``; null when none): the one with the kernel's (or its
    launching call's) External id in the same file, else the innermost one around the
    launching call on its thread."""
    ops = events.filter(matching(events["name"], HOST_OP)).select(
        host_op="event_id", file="file", pid="pid", tid="tid", o0="start_ns", o1="end_ns",
        ext="external_id",
    )  # fmt: skip
    cols = ["event_id", "file", "pid", "tid", "start_ns", "end_ns", "external_id"]
    runtime = events.select(cols).rename({c: f"l_{c}" for c in cols})
    k = (
        coll.select("event_id", "launch")
        .join(events.select("event_id", "file", "external_id"), on="event_id", how="left")
        .join(runtime, left_on="launch", right_on="l_event_id", how="left")
        .with_columns(ext=pl.coalesce("external_id", "l_external_id"))
    )
    by_ext = k.join(ops.drop_nulls("ext").unique(["file", "ext"]).select("file", "ext", "host_op"),
                    on=["file", "ext"], how="left")  # fmt: skip
    around = (
        k.join(ops.drop("file", "ext"), left_on=["l_pid", "l_tid"], right_on=["pid", "tid"])
        .filter((pl.col("o0") <= pl.col("l_start_ns")) & (pl.col("o1") >= pl.col("l_end_ns")))
        .sort("o0")
        .group_by("event_id")
        .agg(inner=pl.col("host_op").last())
    )
    return by_ext.join(around, on="event_id", how="left").select(
        "event_id", host_op=pl.coalesce("host_op", "inner")
    )


def _texts(events: pl.DataFrame, ids: list[int]) -> dict[int, str | None]:
    """The args JSON of the events ``ids``: where it lies in a file (``args_at``), else
    ``args_json``; only those rows are read."""
    rows = events.filter(pl.col("event_id").is_in(ids)).select(
        "event_id", "file", "args_at", "args_json"
    )
    spans = ArgsAt(events).texts(rows) if rows["args_at"].null_count() < rows.height else None
    held = rows["args_json"].to_list()
    return {
        e: (spans[i] if spans and spans[i] is not None else held[i])
        for i, e in enumerate(rows["event_id"].to_list())
    }


def _fields(text: str | None) -> dict[str, Any]:
    """The collective fields (``FIELDS``) of one args JSON text; none when it has none of
    the collective's (its name, group or sizes)."""
    if not text:
        return {}
    try:
        args = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(args, dict):
        return {}
    out = {col: args[key] for key, col in FIELDS.items() if key in args}
    return out if {"kind", "group", "in_nelems"} & out.keys() else {}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _columns(f: dict[str, Any], name: str) -> dict[str, Any]:
    """A record's columns from its fields ``f`` (``_fields``) and its kernel's ``name``."""
    kind = kind_of(f.get("kind")) or kind_of_kernel(name)
    dtype = f.get("dtype") if isinstance(f.get("dtype"), str) else None
    return {
        "kind": kind,
        "group": None if f.get("group") is None else str(f["group"]),
        "group_ranks": ranks_text(f.get("group_ranks")),
        "group_size": _int(f.get("group_size")),
        "in_nelems": _int(f.get("in_nelems")),
        "out_nelems": _int(f.get("out_nelems")),
        "dtype": dtype,
        "dtype_bytes": DTYPE_BYTES.get(dtype) if dtype else None,
        "peer": _int(f.get("rank_arg")) if kind in ("send", "recv") else None,
        "seq_arg": _int(f.get("seq_arg")),
    }


def _default_group(out: pl.DataFrame, profile: Profile) -> pl.DataFrame:
    """``out`` with the records that name no group given their trace's one process group
    (``distributedInfo.pg_config`` with one group), ``fields_from`` ``pg_config``."""
    one = {
        str(r.source.path): r.groups[0]
        for r in profile.reads
        if len(getattr(r, "groups", []) or []) == 1
    }
    if not one or out["group"].null_count() == 0:
        return out
    pg = pl.DataFrame(
        {
            "file": list(one),
            "pg_name": [g["name"] for g in one.values()],
            "pg_ranks": [ranks_text(g["ranks"]) for g in one.values()],
            "pg_size": [len(g["ranks"]) if g["ranks"] else None for g in one.values()],
        },
        schema={"file": pl.String, "pg_name": pl.String, "pg_ranks": pl.String,
                "pg_size": pl.Int64},
    )  # fmt: skip
    none = pl.col("group").is_null() & pl.col("pg_name").is_not_null()
    return (
        out.join(pg, on="file", how="left")
        .with_columns(
            fields_from=pl.when(none).then(pl.lit("pg_config")).otherwise("fields_from"),
            group=pl.coalesce("group", "pg_name"),
            group_ranks=pl.when(none).then("pg_ranks").otherwise("group_ranks"),
            group_size=pl.when(none).then("pg_size").otherwise("group_size"),
        )
        .drop("pg_name", "pg_ranks", "pg_size")
    )


def _numbered(out: pl.DataFrame) -> pl.DataFrame:
    """``out`` with ``seq``: each record's index in its (pid, group, group ranks) in order of
    start; where every record of that has a ``Seq`` arg, that number. No group: null."""
    key = ["pid", "group", "group_ranks"]
    index = pl.int_range(pl.len()).over(key, order_by="start_ns")
    has_seq = pl.col("seq_arg").is_not_null().all().over(key)
    return out.with_columns(
        seq=pl.when(pl.col("group").is_null())
        .then(None)
        .when(has_seq)
        .then("seq_arg")
        .otherwise(index)
        .cast(pl.Int64)
    )
