"""Where the launching thread was while the device sat idle: the call that held it, and the
Python frame it was in (docs/gaps.md, "The host's side").

Each late interval (a gap's start to the next launch, on the launching thread) is asked which
recorded range held **more than half** of it: the deepest runtime or driver call, and the
deepest Python frame (``python_function``, recorded with ``with_stack=True``). A range that
holds more than half of an interval contains its middle instant, so only the ranges containing
some interval's middle are looked at (the call stack at that instant, a few dozen ranges),
not every range of the thread. A frame is named where the code enters its file: from the
deepest frame, up through its callers in the same file (``inspect.py(2501):
_signature_from_callable`` is named as ``inspect.py(3346): signature``, the call into
``inspect.py``), with the frame that called it. Where no range holds more than half, nothing
is named: the split of the late time (``evidence.host_split``) still says where it went.
"""

from __future__ import annotations

import re

import polars as pl

from trace_analyzer.model.intervals import enclosing

# A Python frame's name, as Kineto writes it: "file.py(line): function".
FRAME = re.compile(r"^(.+)\(\d+\): ")
# A launch call blocked when its time inside a gap is at least this many times the run's
# median launch call (and more than --latency): docs/gaps.md, "launch_blocked".
BLOCKED_TIMES = 5


def long_launch(latency_ns: int) -> pl.Expr:
    """Whether a gap's launch call took far longer inside it than a launch takes in the run:
    ``BLOCKED_TIMES`` its median launch call (``launch_typical_ns``) and over ``latency_ns``."""
    call = pl.col("launch_call_ns")
    return (call >= BLOCKED_TIMES * pl.col("launch_typical_ns")) & (call > latency_ns)


HELD_COLUMNS = {
    "host_call": pl.String,
    "host_call_ns": pl.Int64,
    "host_frame": pl.String,
    "host_frame_ns": pl.Int64,
    "host_caller": pl.String,
}


def held(late: pl.DataFrame, marks: pl.DataFrame, prefix: str, entry: bool) -> pl.DataFrame:
    """Return, per row of ``late`` (``_r``, ``_pid``, ``_tid``, ``start_ns``, ``_late_end``),
    the deepest of ``marks`` (``_pid``, ``_tid``, ``start_ns``, ``end_ns``, ``name``) on its
    thread that holds more than half of its interval: ``<prefix>`` (the name) and
    ``<prefix>_ns`` (the time it held), and with ``entry`` (Python frames) the frame where the
    code entered that frame's file, and ``host_caller``, the frame that called it. Rows where
    no mark holds more than half are absent.

    Calls seldom nest: the call that started last before an interval's middle, where it holds
    more than half, is the answer, and where no call reaches the middle there is none (both
    found by one lookup per interval); the rest, and every frame, are found by walking the
    nest of the ranges around the middles (``_walked``)."""
    thread = ["_pid", "_tid"]
    probes = late.filter(pl.col("_late_end") > pl.col("start_ns")).select(
        "_r",
        *thread,
        a="start_ns",
        b="_late_end",
        t=(pl.col("start_ns") + pl.col("_late_end")) // 2,
    )
    schema: dict[str, pl.DataType] = {"_r": pl.UInt32(), prefix: pl.String()}
    schema[f"{prefix}_ns"] = pl.Int64()
    if entry:
        schema["host_caller"] = pl.String()
    kept = _around(marks, probes) if probes.height and marks.height else None
    if kept is None or kept.is_empty():
        return pl.DataFrame(schema=schema)
    found = []
    if not entry:
        direct, probes = _direct(kept, probes)
        found.append(direct.rename({"name": prefix, "ns": f"{prefix}_ns"}))
    if probes.height:
        walked = _walked(_around(kept, probes), probes, entry)
        found.append(pl.DataFrame(walked, schema=schema, orient="row"))
    return pl.concat(found).cast(pl.Schema(schema)) if found else pl.DataFrame(schema=schema)


def _direct(kept: pl.DataFrame, probes: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return the probes answered by one lookup (``_r``, ``name``, ``ns``: the call that started
    last before the middle holds more than half), and the probes left to walk: those where
    some call reaches past the middle (the latest end so far) but the last one does not hold
    more than half. Probes no call reaches are in neither."""
    thread = ["_pid", "_tid"]
    marks = kept.sort("start_ns", "end_ns", descending=[False, True]).with_columns(
        reach=pl.col("end_ns").cum_max().over(thread)  # of equal starts, the inner one last
    )
    last = probes.sort("t").join_asof(
        marks, left_on="t", right_on="start_ns", by=thread, check_sortedness=False
    )
    inside = pl.min_horizontal("end_ns", "b") - pl.max_horizontal("start_ns", "a")
    ns = pl.when(pl.col("start_ns").is_not_null()).then(inside)  # the horizontals pass nulls
    holds = (2 * ns > pl.col("b") - pl.col("a")).fill_null(False)
    direct = last.filter(holds).select("_r", "name", ns=ns)
    rest = last.filter(~holds & (pl.col("reach") > pl.col("t")).fill_null(False))
    return direct, rest.select(probes.columns)


def _walked(kept: pl.DataFrame, probes: pl.DataFrame, entry: bool) -> list[tuple[object, ...]]:
    """Return ``held``'s rows for ``probes``, found by walking up from the innermost of the
    ``kept`` ranges around each middle (``model.intervals.enclosing``) to the first that holds
    more than half (and, with ``entry``, on to where the code entered its file)."""
    thread = ["_pid", "_tid"]
    ranges = [
        ((p, t), s, e, i)
        for i, (p, t, s, e) in enumerate(kept.select(*thread, "start_ns", "end_ns").iter_rows())
    ]
    rows = probes.select("_r", *thread, "a", "b", "t").rows()
    parent = enclosing(
        ranges, [((p, t), at, -1 - k) for k, (_, p, t, _a, _b, at) in enumerate(rows)]
    )
    start, end, name = (kept[c].to_list() for c in ("start_ns", "end_ns", "name"))
    out: list[tuple[object, ...]] = []
    for k, (r, _p, _t, a, b, _at) in enumerate(rows):
        i = parent.get(-1 - k)
        while i is not None and 2 * (min(end[i], b) - max(start[i], a)) <= b - a:
            i = parent.get(i)
        if i is None:
            continue
        ns = min(end[i], b) - max(start[i], a)
        if not entry:
            out.append((r, name[i], ns))
            continue
        i, ns = _entered(i, parent, name, start, end, a, b, ns)
        caller = parent.get(i)
        out.append((r, name[i], ns, None if caller is None else name[caller]))
    return out


def _around(marks: pl.DataFrame, probes: pl.DataFrame) -> pl.DataFrame:
    """Return the ``marks`` that contain some probe's instant ``t`` on their thread: the first
    probe at or after a mark's start lies before its end."""
    thread = ["_pid", "_tid"]
    first = (
        marks.with_row_index("_m")
        .sort("start_ns")
        .join_asof(
            probes.select(*thread, "t").sort("t"),
            left_on="start_ns",
            right_on="t",
            by=thread,
            strategy="forward",
            check_sortedness=False,
        )
        .filter(pl.col("t") < pl.col("end_ns"))
        .sort("_m")
    )
    return first.select(*thread, "start_ns", "end_ns", name=pl.col("name").cast(pl.String))


def _entered(
    i: int,
    parent: dict[int, int],
    name: list[str],
    start: list[int],
    end: list[int],
    a: int,
    b: int,
    ns: int,
) -> tuple[int, int]:
    """Return the frame where the code entered frame ``i``'s file (``i`` or its caller's
    caller ..., while they are in the same file), and the time it held of ``[a, b)``."""

    def file_of(n: str) -> str | None:
        m = FRAME.match(n)
        return m.group(1) if m else None

    here = file_of(name[i])
    while here is not None and (up := parent.get(i)) is not None and file_of(name[up]) == here:
        i = up
        ns = min(end[i], b) - max(start[i], a)
    return i, ns
