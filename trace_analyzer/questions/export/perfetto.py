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

The document is made as it is written (``document``, ``write``): first where every event goes
(its track, and what its flows need, a few integers per event in arrays) and how each link is
drawn, which the header counts; then the records, ``BATCH`` at a time, each batch made, written
with orjson and let go. So the export holds the run and those arrays, never a dict per event
(on a 457 MB trace the whole document as dicts took 4.4 GiB; docs/benchmarks.md, "Export:
streaming the document"). ``build`` gathers the same records into one dict, for the library.
"""

from __future__ import annotations

import gzip
import re
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeAlias, cast

import orjson
import polars as pl

from trace_analyzer import atomic
from trace_analyzer._version import __version__
from trace_analyzer.loading.args_at import ArgsAt
from trace_analyzer.loading.profile import Profile
from trace_analyzer.model.schema import by_row
from trace_analyzer.questions.critical.analysis import CriticalResult
from trace_analyzer.questions.export.flows import Flows, flows, records
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
# The records made at once, then written and let go: what the export holds beside the run
# (a few tens of MB), whatever the run's size.
BATCH = 20_000
Piece: TypeAlias = bytes | memoryview  # of the document's bytes, written as it comes
COLUMNS = ("event_id", "name", "category", "lane", "lane_kind", "start_ns", "duration_ns",
           "args_json", "args_at", "file", *LINK_KEYS)  # fmt: skip


class Document:
    """The trace document of one run, made as it is written: its ``header`` (with every
    count) is known once made, its records (``batches``) are made a batch at a time, in the
    order they are written, as often as asked. ``build`` holds them all, ``write`` none."""

    def __init__(
        self,
        profile: Profile,
        gaps: GapsResult,
        source: str | None,
        critical: CriticalResult | None,
        args: ArgsAt | None = None,
    ):
        self.profile, self.gaps, self.critical = profile, gaps, critical
        events, edges = profile.events, profile.edges
        # the args of a Kineto trace read with args=LATER: read from its file as written
        self.args = args if args is not None else ArgsAt(events)
        self.gap_rows = gap_rows(gaps)
        self.base = _base(events)
        lanes = self.gap_rows["lane"].cast(pl.String).unique().to_list()
        self.tracks = _Tracks(events, set(lanes))
        self.linked = flows(edges.iter_rows(), edges.height, self.tracks)
        name = str(source if source is not None else profile.name)
        linked = self.linked
        self.header: dict[str, Any] = {
            "schemaVersion": 1,
            "traceName": name,
            "displayTimeUnit": "ns",
            "baseTimeNanoseconds": self.base,
            "traceana": {
                "schema_version": SCHEMA_VERSION,
                "version": __version__,
                "source": name,
                "root": profile.name,
                "events": events.height,
                "links": edges.height,
                "flows": {"v1": linked.v1, "v2": linked.v2, "unsure": linked.unsure},
                "gaps": self.gap_rows.height,
                "processes": len(self.tracks.processes),
                "tracks": len(self.tracks.threads),
            },
        }
        ranks = events["rank"].drop_nulls().unique().to_list()
        if len(ranks) == 1:
            self.header["distributedInfo"] = {"rank": ranks[0]}

    def batches(self) -> Iterator[list[dict[str, Any]]]:
        """Yield the records of ``traceEvents`` in lists of at most about ``BATCH``: the
        tracks' names, every event's slice, the links' flows, the gaps' slices, the summary and
        the critical path."""
        tracks, base, edges = self.tracks, self.base, self.profile.edges
        yield tracks.metadata()
        yield from tracks.slices(self.profile.events, self.linked, base, self.args)
        yield from records(edges.iter_rows(), self.linked, tracks, base, BATCH)
        for part in self.gap_rows.iter_slices(BATCH):
            yield [gap_slice(g, *tracks.gap_track[g["lane"]], base) for g in part.to_dicts()]
        yield from self._traceana()

    def _traceana(self) -> Iterator[list[dict[str, Any]]]:
        """The process ``traceana``: the summary track and the critical path's."""
        mine, tid = len(self.tracks.processes) + 1, self.tracks.next_tid()
        out = summary_track(self.gaps, mine, tid, self.base)
        critical = self.critical
        if critical is not None and critical.path.height and not out:
            # no window of hardware: the process is named here
            out.append(
                {"ph": "M", "name": "process_name", "pid": mine, "tid": 0,
                 "args": {"name": "traceana"}}
            )  # fmt: skip
        yield out
        if critical is not None:
            yield from critical_track(critical, mine, tid + 1, self.base, BATCH)

    def pieces(self) -> Iterator[Piece]:
        """Yield the document as compact JSON, piece by piece: the same bytes as ``dumps`` of
        ``build``'s dict (its header, then ``traceEvents`` last)."""
        yield orjson.dumps(self.header)[:-1] + b',"traceEvents":['
        first = True
        for batch in self.batches():
            if batch:
                if not first:
                    yield b","
                yield memoryview(orjson.dumps(batch))[1:-1]  # the records, not the brackets
                first = False
        yield b"]}"


def build(
    profile: Profile,
    gaps: GapsResult,
    *,
    source: str | None = None,
    critical: CriticalResult | None = None,
) -> dict[str, Any]:
    """Return the trace document of one run, ``profile``, and its ``gaps``
    (``questions.gaps.analysis.gaps``): a dict ready for JSON, every record held. ``source``:
    the name the document gives the run (default: its root); ``critical``: its critical path,
    drawn as a track. ``document`` makes the same to be written without holding it."""
    doc = document(profile, gaps, source=source, critical=critical)
    return {**doc.header, "traceEvents": [r for batch in doc.batches() for r in batch]}


def document(
    profile: Profile,
    gaps: GapsResult,
    *,
    source: str | None = None,
    critical: CriticalResult | None = None,
    args: ArgsAt | None = None,
) -> Document:
    """Return the trace document of one run (``build``'s) to be written a batch at a time
    (``write``): only the header and where each event goes are held. ``args``: the files the
    events' args are read from (``args_at``), made as the run was read (default: now); one
    changed since is an InputError as it is written."""
    return Document(profile, gaps, source, critical, args)


def dumps(doc: dict[str, Any]) -> bytes:
    """Return the document ``doc`` (``build``) as compact JSON bytes."""
    return orjson.dumps(doc)


def write(doc: dict[str, Any] | Document, path: Path) -> None:
    """Write the document ``doc`` (``build``'s dict, or ``document``'s, written as it is made)
    to ``path``, whole or not at all (``atomic.replace``), gzip-compressed as it is written
    when the name ends in ``.gz``."""
    pieces: Iterable[Piece] = doc.pieces() if isinstance(doc, Document) else [dumps(doc)]
    gz = path.name.endswith(".gz")

    def written(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            if gz:
                # no file name in the header, as gzip.compress writes it
                with gzip.GzipFile(filename="", mode="wb", fileobj=f) as z:
                    _write_all(z.write, pieces)
            else:
                _write_all(f.write, pieces)

    atomic.replace(path, written)


def _write_all(write: Callable[[bytes | memoryview], object], pieces: Iterable[Piece]) -> None:
    for piece in pieces:
        write(piece)


def _base(events: pl.DataFrame) -> int:
    """Return the run's first event start floored to a whole second (0 for no events)."""
    if events.is_empty():
        return 0
    first = cast(int, events["start_ns"].min())  # an Int64 column with rows: an int
    return first // SECOND_NS * SECOND_NS


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
    What the flows ask of an event (``flows.Slots``) is kept in arrays by row, a few integers
    per event, not a dict of its columns.
    """

    def __init__(self, events: pl.DataFrame, gap_lanes: set[str]):
        procs = _processes(events.select("lane", "lane_kind", "host", "pid"))
        self.processes: list[dict[str, Any]] = []  # pid, name, sort index
        self.threads: list[dict[str, Any]] = []  # pid, tid, name, sort index
        self.gap_track: dict[str, tuple[int, int]] = {}  # hardware lane -> its gaps track
        # tids above every pid (and the summary's): Perfetto calls a thread whose tid is its
        # pid the main thread
        self._next_tid = len(procs) + 2
        ordered: list[tuple[int, str]] = []  # (pid, lane), in display order
        for pid, key in enumerate(sorted(procs, key=_sort_key), start=1):
            members = sorted(procs[key], key=lambda m: (m[0], _natural(m[1])))
            self.processes.append({"pid": pid, "name": members[0][2], "sort_index": pid})
            ordered += [(pid, lane) for _, lane, _ in members]
        n = events.height
        # per row: its slice's pid and tid, start, place in the file; whether it is pinned
        self._pid, self._tid, self._start, self._place = (array("q", bytes(8 * n)) for _ in "1234")
        self._pinned = bytearray(n)
        ids = events["event_id"]
        self._row = None if by_row(events) else {e: i for i, e in enumerate(ids.to_list())}
        # The rows in the order they are written: lane by lane in display order, each lane's
        # by start, longer first.
        rank = {lane: i for i, (_, lane) in enumerate(ordered)}
        keys = events.select(
            row=pl.int_range(pl.len(), dtype=pl.Int64),
            rank=pl.col("lane").cast(pl.String).replace_strict(rank, return_dtype=pl.Int64),
            start=pl.col("start_ns"),
            end=pl.col("end_ns"),
            event_id=pl.col("event_id"),
        ).sort("rank", "start", "end", "event_id", descending=[False, False, True, False])
        self.rows = keys["row"]
        counts = keys.group_by("rank").len().sort("rank")["len"].to_list()
        keys = keys.drop("rank", "event_id")
        offset = 0
        for (pid, lane), count in zip(ordered, counts, strict=True):
            self._layout(pid, lane, keys.slice(offset, count), offset)
            offset += count
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

    def _layout(self, pid: int, lane: str, keys: pl.DataFrame, place: int) -> None:
        """Assign each event of a lane (``keys``: row, start, end, sorted by start, longer
        first; the first written at ``place``) to the first track where it nests: track 0 is
        the lane, the others its overlap tracks."""
        stacks: list[list[int]] = []  # per track: the ends of its open slices
        tids: list[int] = []
        last: list[int] = []  # per track: the row of its last slice
        pinned, start = self._pinned, self._start
        for row, s, e in _rows(keys):
            k = 0
            while True:
                if k == len(stacks):
                    stacks.append([])
                    tids.append(self._thread(pid, lane if k == 0 else f"{lane} (overlap {k})"))
                    last.append(-1)
                stack = stacks[k]
                while stack and stack[-1] <= s:
                    stack.pop()
                if not stack or e <= stack[-1]:
                    break
                k += 1
            stack.append(e)
            if last[k] >= 0 and start[last[k]] == s:
                pinned[last[k]] = 0  # a later slice of its track starts with it
            last[k], pinned[row], start[row] = row, 1, s
            self._pid[row], self._tid[row], self._place[row] = pid, tids[k], place
            place += 1

    def slices(
        self, events: pl.DataFrame, linked: Flows, base: int, args: ArgsAt
    ) -> Iterator[list[dict[str, Any]]]:
        """Yield every event's slice, in the order they are written, ``BATCH`` at a time, with
        the v2 fields of its flows (``linked``) and the args ``args`` reads from their files."""
        columns = events.select(COLUMNS)
        for part in self.rows.to_frame().iter_slices(BATCH):
            rows = part["row"]
            batch = columns.select(pl.all().gather(rows))
            yield self._slices(batch, rows.to_list(), args.texts(batch), linked, base)

    def _slices(
        self,
        batch: pl.DataFrame,
        rows: list[int],
        texts: list[str | None],
        linked: Flows,
        base: int,
    ) -> list[dict[str, Any]]:
        """The slices of the events ``batch`` (``COLUMNS``, of the events table's ``rows``),
        with their args' ``texts`` where they were read from their files."""
        batch = batch.drop("args_at", "file").with_columns(pl.col("lane_kind").cast(pl.String))
        out = []
        for row, r, text in zip(rows, batch.iter_rows(named=True), texts, strict=True):
            if text is not None:
                r["args_json"] = text
            ev = _slice(r, (self._pid[row], self._tid[row]), base)
            ev.update(linked.on_slice.get(r["event_id"], {}))
            out.append(ev)
        return out

    # What the flows ask (``flows.Slots``), by event id.
    def where(self, eid: int) -> tuple[int, int]:
        row = eid if self._row is None else self._row[eid]
        return self._pid[row], self._tid[row]

    def start(self, eid: int) -> int:
        return self._start[eid if self._row is None else self._row[eid]]

    def pinned(self, eid: int) -> bool:
        """Whether the event is the last slice of its track to start at its start: at that
        instant Perfetto has it on top of its track (perfetto_flows)."""
        return bool(self._pinned[eid if self._row is None else self._row[eid]])

    def order(self, eid: int) -> tuple[int, int]:
        """The order in which Perfetto reads its slice: (start, place)."""
        row = eid if self._row is None else self._row[eid]
        return self._start[row], self._place[row]

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


def _rows(keys: pl.DataFrame) -> Iterator[tuple[int, int, int]]:
    """Yield (row, start, end) of each row of ``keys``, a few batches' worth of ints at once."""
    for part in keys.iter_slices(BATCH * 10):
        yield from zip(*(part[c].to_list() for c in ("row", "start", "end")), strict=True)


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
