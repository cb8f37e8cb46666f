"""One run as a Chrome/Perfetto trace (Trace Event Format JSON), annotated with links and gaps.

The document opens in the Perfetto UI (its legacy JSON importer) and in chrome://tracing
with nothing else installed (docs/graph.md, "Export for the Perfetto UI"):

- one "process" per host process (``<host>/PID:<pid>``) holding its framework and runtime
  lanes, and one per device (``PID:<pid>/GPU:<n>``, ``.../neuron_hw/NC<lnc>``) holding its
  hardware lanes; one "thread" per lane, named with the lane's label (``ph: "M"`` records);
- every event as a complete event (``ph: "X"``) with its own category, its args, and
  ``event_id``, ``lane``, ``lane_kind`` and its link keys;
- every link of the edges table as a flow arrow (``ph: "s"`` on the parent, ``ph: "f"``,
  ``bp: "e"`` on the child, category ``traceana_link``);
- every gap of ``gaps()`` as a slice named by its cause (category ``traceana_gap``) on a
  track ``<lane> gaps`` beside its hardware lane;
- each window's critical path (``traceana critical``) as slices on a track ``traceana
  critical path`` (category ``traceana_critical``).

Times are written like Kineto's: ``ts``/``dur`` in µs with three decimals, relative to
``baseTimeNanoseconds`` (the run's first event start floored to a whole second), so traceana
reads the file back to the same integer ns.

The JSON format wants slices on one thread to nest; where events of one lane overlap without
nesting (a memcpy and a sync on one stream, runtime calls of two threads on one NeuronCore
lane), the later one goes on an extra track ``<lane> (overlap N)`` beside the lane.
"""

from __future__ import annotations

import gzip
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, TypeAlias, cast

import orjson
import polars as pl

from trace_analyzer import atomic
from trace_analyzer._version import __version__
from trace_analyzer.loading.profile import Profile
from trace_analyzer.questions.critical.analysis import CriticalResult
from trace_analyzer.questions.export.flows import flows
from trace_analyzer.questions.export.flows import us as _us
from trace_analyzer.questions.export.gap_slices import critical_track, gap_slice, summary_track
from trace_analyzer.questions.gaps.analysis import GapsResult, device_of
from trace_analyzer.questions.tables.analysis import gap_rows

SCHEMA_VERSION = 1
SECOND_NS = 1_000_000_000
# Lane order inside a process: framework lanes, then runtime, then hardware.
KIND_ORDER = {
    "framework_op": 0,
    "framework_dispatch": 0,
    "framework_stream": 0,
    "annotation": 0,
    "runtime": 1,
    "transfer": 1,
    "sync": 1,
    "other": 1,
    "hardware": 2,
}
LINK_KEYS = ("correlation", "external_id", "seq_id", "exec_id", "flow_ids")
# The names the inputs give the link keys in their args; a key already there is not repeated.
LINK_ARGS = {"external_id": ("External id", "external id"), "seq_id": ("nrt_sequence_id",)}


def build(
    profile: Profile,
    gaps: GapsResult,
    *,
    source: str | None = None,
    critical: CriticalResult | None = None,
) -> dict[str, Any]:
    """Return the trace document of one run, ``profile``, and its ``gaps``
    (``questions.gaps.analysis.gaps``): a dict ready for JSON. ``source``: the name the document
    gives the run (default: its root); ``critical``: its critical path, drawn as a track."""
    events = profile.events
    edges = profile.edges
    gaps_of_lanes = _gap_rows(gaps)
    base = _base(events)
    tracks = _Tracks(events, gaps_of_lanes)
    trace_events: list[dict[str, Any]] = tracks.metadata()
    linked = flows(
        list(edges.iter_rows()), tracks.where, tracks.span, tracks.pinned(), tracks.order(), base
    )
    for r in tracks.slices:
        ev = _slice(r, tracks.where[r["event_id"]], base)
        ev.update(linked.on_slice.get(r["event_id"], {}))
        trace_events.append(ev)
    trace_events += linked.records
    for g in gaps_of_lanes:
        pid, tid = tracks.gap_track[g["lane"]]
        trace_events.append(gap_slice(g, pid, tid, base))
    mine, tid = len(tracks.processes) + 1, tracks.next_tid()
    summary = summary_track(gaps, mine, tid, base)
    trace_events += summary
    if critical is not None and critical.path.height:
        if not summary:  # no window of hardware: the process is named here
            trace_events.append(
                {"ph": "M", "name": "process_name", "pid": mine, "tid": 0,
                 "args": {"name": "traceana"}}
            )  # fmt: skip
        trace_events += critical_track(critical, mine, tid + 1, base)
    header: dict[str, Any] = {
        "schemaVersion": 1,
        "traceName": str(source if source is not None else profile.name),
        "displayTimeUnit": "ns",
        "baseTimeNanoseconds": base,
        "traceana": {
            "schema_version": SCHEMA_VERSION,
            "version": __version__,
            "source": str(source if source is not None else profile.name),
            "root": profile.name,
            "events": events.height,
            "links": edges.height,
            "flows": {"v1": linked.v1, "v2": linked.v2, "unsure": linked.unsure},
            "gaps": len(gaps_of_lanes),
            "processes": len(tracks.processes),
            "tracks": len(tracks.threads),
        },
    }
    ranks = events["rank"].drop_nulls().unique().to_list()
    if len(ranks) == 1:
        header["distributedInfo"] = {"rank": ranks[0]}
    return {**header, "traceEvents": trace_events}


def dumps(doc: dict[str, Any]) -> bytes:
    """Return the document ``doc`` (``build``) as compact JSON bytes."""
    return orjson.dumps(doc)


def write(doc: dict[str, Any], path: Path) -> None:
    """Write the document ``doc`` (``build``) to ``path``, gzip-compressed when the name ends
    in ``.gz``."""
    data = dumps(doc)
    atomic.replace(path, gzip.compress(data) if path.name.endswith(".gz") else data)


def _base(events: pl.DataFrame) -> int:
    """Return the run's first event start floored to a whole second (0 for no events)."""
    if events.is_empty():
        return 0
    first = cast(int, events["start_ns"].min())  # an Int64 column with rows: an int
    return first // SECOND_NS * SECOND_NS


def _gap_rows(result: GapsResult) -> list[dict[str, Any]]:
    """Return the per-lane gaps as dicts, each with its hint (none when the run has no
    hardware lane)."""
    return [] if result.gaps.is_empty() else gap_rows(result).to_dicts()


def _slice(r: dict[str, Any], where: tuple[int, int], base: int) -> dict[str, Any]:
    args = _args(r["args_json"])
    for key in LINK_KEYS:
        if r[key] is not None and not any(a in args for a in (key, *LINK_ARGS.get(key, ()))):
            args[key] = r[key]
    args.update(event_id=r["event_id"], lane=r["lane"], lane_kind=r["lane_kind"])
    ev: dict[str, Any] = {"ph": "X"}
    if r["category"] is not None:
        ev["cat"] = r["category"]
    ev.update(
        name=r["name"],
        pid=where[0],
        tid=where[1],
        ts=_us(r["start_ns"] - base),
        dur=_us(r["duration_ns"]),
        args=args,
    )
    return ev


def _args(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {"args_json": text}
    return value if isinstance(value, dict) else {"args_json": value}


class _Tracks:
    """Processes, threads and the slot of every event: which (pid, tid) it is written on.

    pids and tids are small integers assigned here, unique over the document, in display
    order (host processes first, then devices; in each, framework, runtime, hardware lanes).
    """

    def __init__(self, events: pl.DataFrame, gap_rows: list[dict[str, Any]]):
        ev = events.select(
            "event_id",
            "name",
            "category",
            "lane",
            "lane_kind",
            "host",
            "pid",
            "start_ns",
            "end_ns",
            "duration_ns",
            "args_json",
            *LINK_KEYS,
        ).with_columns(pl.col("lane_kind").cast(pl.String))
        gap_lanes = {g["lane"] for g in gap_rows}
        procs = _processes(ev)
        self.processes: list[dict[str, Any]] = []  # pid, name, sort index
        self.threads: list[dict[str, Any]] = []  # pid, tid, name, sort index
        self.where: dict[int, tuple[int, int]] = {}  # event_id -> (pid, tid)
        self.slices: list[dict[str, Any]] = []  # the events, in the order they are written
        self.gap_track: dict[str, tuple[int, int]] = {}  # hardware lane -> its gaps track
        self.span: dict[int, tuple[int, int]] = {}
        # tids above every pid (and the summary's): Perfetto calls a thread whose tid is its
        # pid the main thread
        self._next_tid = len(procs) + 2
        ordered: list[tuple[int, str]] = []  # (pid, lane), in display order
        for pid, key in enumerate(sorted(procs, key=_sort_key), start=1):
            members = sorted(procs[key], key=lambda m: (m[0], _natural(m[1])))
            self.processes.append({"pid": pid, "name": members[0][2], "sort_index": pid})
            ordered += [(pid, lane) for _, lane, _ in members]
        by_lane = {
            lane: rows
            for (lane,), rows in ev.sort(
                "lane", "start_ns", "end_ns", "event_id", descending=[False, False, True, False]
            )
            .partition_by("lane", as_dict=True, maintain_order=True)
            .items()
        }
        # Lay each lane's events out on properly nested tracks, in display order.
        for pid, lane in ordered:
            self._layout(pid, lane, by_lane[lane].to_dicts())
            if lane in gap_lanes:
                self.gap_track[lane] = (pid, self._thread(pid, f"{lane} gaps"))

    def next_tid(self) -> int:
        """Return the tid no thread has yet."""
        return self._next_tid

    def _thread(self, pid: int, name: str) -> int:
        tid = self._next_tid
        self._next_tid += 1
        self.threads.append({"pid": pid, "tid": tid, "name": name, "sort_index": tid})
        return tid

    def _layout(self, pid: int, lane: str, rows: list[dict[str, Any]]) -> None:
        """Assign each event of a lane (sorted by start, longer first) to the first track
        where it nests: track 0 is the lane, the others its overlap tracks."""
        stacks: list[list[tuple[int, int]]] = []  # per track: open (end, event_id)
        tids: list[int] = []
        for r in rows:
            s, e, eid = r["start_ns"], r["end_ns"], r["event_id"]
            k = 0
            while True:
                if k == len(stacks):
                    stacks.append([])
                    tids.append(self._thread(pid, lane if k == 0 else f"{lane} (overlap {k})"))
                stack = stacks[k]
                while stack and stack[-1][0] <= s:
                    stack.pop()
                if not stack or e <= stack[-1][0]:
                    break
                k += 1
            stack.append((e, eid))
            self.where[eid] = (pid, tids[k])
            self.span[eid] = (s, e)
            self.slices.append(r)

    def order(self) -> dict[int, tuple[int, int]]:
        """Return, per event, the order in which Perfetto reads its slice: (start, place)."""
        return {r["event_id"]: (r["start_ns"], i) for i, r in enumerate(self.slices)}

    def pinned(self) -> set[int]:
        """Return the events that are the last slice of their track to start at their start:
        at that instant Perfetto has them on top of their track (perfetto_flows)."""
        last: dict[tuple[tuple[int, int], int], int] = {}
        for r in self.slices:  # in the order they are written
            eid = r["event_id"]
            last[(self.where[eid], r["start_ns"])] = eid
        return set(last.values())

    def metadata(self) -> list[dict[str, Any]]:
        """Return the ``ph: "M"`` records naming and ordering every process and thread."""
        out: list[dict[str, Any]] = []
        for p in self.processes:
            out.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": p["pid"],
                    "tid": 0,
                    "args": {"name": p["name"]},
                }
            )
            out.append(
                {
                    "ph": "M",
                    "name": "process_sort_index",
                    "pid": p["pid"],
                    "tid": 0,
                    "args": {"sort_index": p["sort_index"]},
                }
            )
        for t in self.threads:
            out.append(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": t["pid"],
                    "tid": t["tid"],
                    "args": {"name": t["name"]},
                }
            )
            out.append(
                {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": t["pid"],
                    "tid": t["tid"],
                    "args": {"sort_index": t["sort_index"]},
                }
            )
        return out


# A process: (0, host, pid) for a host process, (1, device label) for a device.
ProcessKey: TypeAlias = tuple[Any, ...]


def _processes(ev: pl.DataFrame) -> dict[ProcessKey, list[tuple[int, str, str]]]:
    """Return the lanes of each process: (rank, lane, process name), rank 0 for framework
    lanes, 1 for runtime, 2 for hardware (``KIND_ORDER``)."""
    lanes = (
        ev.group_by("lane")
        .agg(
            host=pl.col("host").first(),
            pid=pl.col("pid").first(),
            kinds=pl.col("lane_kind").unique(),
        )
        .with_columns(device=device_of(pl.col("lane")))
    )
    procs: dict[ProcessKey, list[tuple[int, str, str]]] = defaultdict(list)
    for r in lanes.iter_rows(named=True):
        rank = 2 if "hardware" in r["kinds"] else min(KIND_ORDER.get(k, 1) for k in r["kinds"])
        key: ProcessKey
        if r["device"] != r["lane"] or rank == 2:
            key = (1, r["device"])  # a device: its hardware lanes
            name = r["device"]
        else:
            key = (0, r["host"] or "", r["pid"] if r["pid"] is not None else -1)
            name = (f"{r['host']}/" if r["host"] else "") + f"PID:{r['pid']}"
        procs[key].append((rank, r["lane"], name))
    return procs


def _sort_key(key: ProcessKey) -> tuple[Any, ...]:
    """Host processes first (by host, pid), then devices (by label, numbers as numbers)."""
    return (key[0], _natural(str(key[1])), key[2] if len(key) > 2 else 0)


def _natural(text: str) -> tuple[int | str, ...]:
    """Return a sort key that orders the numbers in a label by value: stream:7 < stream:23."""
    return tuple(int(p) if i % 2 else p for i, p in enumerate(re.split(r"(\d+)", text)))
