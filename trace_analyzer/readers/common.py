"""What every reader shares: the result type, JSON loading, integer coercion, step assignment."""

from __future__ import annotations

import gzip
import io
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import AnyPath, cap_for
from trace_analyzer.inputs.discover import Source
from trace_analyzer.inputs.limits import PARAM, too_large
from trace_analyzer.model.schema import Text, conform, empty_events, matching, text

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


@dataclass
class ReadResult:
    """What one reader made of one source."""

    source: Source
    format: str
    events: pl.DataFrame = field(default_factory=empty_events)
    schema_version: str | None = None
    rank: int | None = None
    rank_origin: str | None = None
    world_size: int | None = None  # distributedInfo's world_size, where the trace has one
    # distributedInfo's pg_config: each process group's name and ranks (``process_groups``)
    groups: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # facts worth showing (clock, skipped records)
    warnings: list[str] = field(default_factory=list)  # things that may make results wrong
    read: bool = True  # False when the source was recognised and deliberately not read
    n_events: int | None = None  # rows read, when events is not kept (a cached profile)
    # events the reader could not make, by reason: warned with the malformed ones dropped
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return self.events.height if self.n_events is None else self.n_events

    @classmethod
    def skipped(cls, src: Source, fmt: str, why: str) -> ReadResult:
        return cls(source=src, format=fmt, notes=[why], read=False)


def load_json(path: AnyPath, *, max_bytes: int | None = None) -> object:
    """Return the parsed JSON of a ``.json`` or ``.json.gz`` file, or raise InputError.

    A ``.json.gz`` file may inflate to ``max_bytes`` (None: its archive's cap for a member,
    else limits.default_max_bytes()).
    """
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from e
    if path.name.endswith(".gz"):
        cap = cap_for(path, max_bytes)
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                data = f.read(cap + 1)  # bounded, however far the stream would inflate
            if len(data) > cap:
                raise InputError(str(path), too_large("the file", cap), param=PARAM)
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(str(path), f"not a readable gzip file ({e})") from e
    if not data or data.isspace():  # no copy of the text (strip would make one)
        raise InputError(str(path), "empty file")
    text = memoryview(data)[3:] if data.startswith(b"\xef\xbb\xbf") else data
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        out_of_memory(e)
        if (problem := not_utf8(data)) is not None:
            raise InputError(str(path), problem) from e
        hint = " (truncated?)" if e.pos >= len(data.rstrip()) - 1 else ""
        raise InputError(str(path), f"not valid JSON{hint}: {e}") from e


def not_utf8(data: bytes) -> str | None:
    """What the bytes of a file that is not valid JSON are instead, where they say it: gzip
    (a ``.json`` that is compressed), or UTF-16 or UTF-32 text (JSON is UTF-8); else None."""
    if data[:2] == b"\x1f\x8b":
        return "gzip-compressed, though not named .gz: name it .json.gz (or gunzip it)"
    head = data[:64]
    if head[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        wide = "UTF-32"
    elif head[:2] in (b"\xff\xfe", b"\xfe\xff") or (
        len(head) > 1 and head.count(0) * 2 >= len(head)
    ):
        wide = "UTF-16"
    else:
        return None
    return f"{wide} text; JSON is read as UTF-8: convert it (iconv -f {wide} -t UTF-8)"


def out_of_memory(e: orjson.JSONDecodeError) -> None:
    """Raise MemoryError when orjson's error is that it could not allocate its buffer.

    orjson reports that as a JSONDecodeError; it is no fault of the file, and the CLI says
    "out of memory" for a MemoryError, never "not valid JSON".
    """
    if "not enough memory" in str(e).lower():
        raise MemoryError(str(e)) from e


def json_text(value: object) -> str | None:
    """Return ``value`` (parsed by orjson) as compact JSON text, None when it cannot be written.

    orjson writes at most 255 levels of nesting but reads up to 1024: deeper values are
    written by the json module; one deeper than Python's recursion limit allows is left out.
    """
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        pass
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (RecursionError, ValueError, TypeError):
        return None


def distributed(result: ReadResult, meta: dict[str, Any]) -> None:
    """Set the rank (and where it came from) and the world size of ``result`` from a trace's
    ``distributedInfo`` (``meta``: the trace's top-level keys), its rank falling back to its
    source's (a file or folder name, docs/distributed.md); every event carries the rank."""
    info = meta.get("distributedInfo")
    info = info if isinstance(info, dict) else {}
    if (rank := as_i64(info.get("rank"))) is not None:
        result.rank, result.rank_origin = rank, "distributedInfo"
    else:
        result.rank, result.rank_origin = result.source.rank, result.source.rank_origin
    result.world_size = as_i64(info.get("world_size"))
    result.groups = process_groups(info.get("pg_config"))
    if result.rank is not None:
        result.events = result.events.with_columns(rank=pl.lit(result.rank, dtype=pl.Int64))


def process_groups(config: object) -> list[dict[str, Any]]:
    """Return the process groups of a ``distributedInfo.pg_config``: each one's ``name``
    (``pg_name``, as text) and ``ranks`` (a list of ints, or None); none where it is not a
    list of objects."""
    if not isinstance(config, list):
        return []
    out = []
    for pg in config:
        if not isinstance(pg, dict) or pg.get("pg_name") is None:
            continue
        ranks = pg.get("ranks")
        listed = [as_i64(r) for r in ranks] if isinstance(ranks, list) else [None]
        ok = bool(listed) and all(r is not None for r in listed)
        out.append({"name": str(pg["pg_name"]), "ranks": listed if ok else None})
    return out


def as_i64(value: object) -> int | None:
    """Return ``value`` as an int64, or None when it is absent, not a number or out of range."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if I64_MIN <= value <= I64_MAX else None
    if isinstance(value, float):  # beyond 2**53 a float no longer holds an exact integer
        if value != value or not (-(2**53) <= value <= 2**53):
            return None
        return int(value)
    if isinstance(value, str):
        try:
            return as_i64(int(value))
        except ValueError:
            return None
    return None


def finish(rows: dict[str, list[Any]] | pl.DataFrame, file: AnyPath) -> pl.DataFrame:
    """Return the events table built from column lists (or a frame), with the file column set."""
    if isinstance(rows, pl.DataFrame):
        if rows.is_empty():
            return empty_events()
        df = rows
    elif not rows or not next(iter(rows.values())):
        return empty_events()
    else:
        df = pl.DataFrame(rows, strict=False)
    return conform(df.with_columns(file=pl.lit(str(file))))


STEP = r"^ProfilerStep#\d+$"  # a host annotation that is a step


def assign_steps(
    events: pl.DataFrame,
    *,
    by_process: bool = False,
    keys: tuple[pl.Series, pl.DataFrame] | None = None,
) -> pl.DataFrame:
    """Return events with ``step`` set from the ProfilerStep#N span each one starts in.

    Steps are host-clock spans; every event of the input (host or device) that starts inside
    one gets its number. Events outside every step keep a null step. Only the host's
    annotations are steps: a GPU's copy of one (Kineto's ``gpu_user_annotation``, a few µs
    on a stream, long after the host's step began) would cut the host's step in two.
    ``by_process``: an event takes only its own process's (host, pid) steps, for a file of
    several processes whose every row names its process (an Explorer export of several
    ranks, whose steps need not line up); a Kineto trace's device rows do not (a GPU's pid
    is its device), so a Kineto trace's steps are the file's.

    An event's step is the last (in start order; of equal starts, the last after a sort by
    start) that starts at or before it, if that one ends after it starts. Found without a
    sort of the events (millions of rows; steps are a few thousand): each row's process and
    start are packed into one integer, process-major, and each event's looked up among the
    steps' by binary search. Where they do not pack into an int64: ``_steps_by_join``.

    ``keys``: each row's number among a few distinct (source, name, host, pid) and a frame of
    those (a row per number): whether a row is a step, and its process's number, are then
    found once per key and gathered by the row's number (an export's lane keys).
    """
    index, distinct = keys if keys is not None else (None, events)
    host = pl.col("source") == "framework"
    is_step = distinct.select(matching(distinct["name"], STEP) & host).to_series()
    is_step = is_step if index is None else is_step.gather(index)
    if not is_step.any():
        return events
    start = events.get_column("start_ns")
    lo, hi = start.min(), start.max()
    span = 1 if lo is None else int(hi) - int(lo) + 1  # type: ignore[arg-type]
    base = _process_bases(distinct, span) if by_process else None
    base = base if base is None or index is None else base.gather(index)
    if lo is None or (by_process and base is None):
        return _steps_by_join(events, is_step, by_process)
    key = start if base is None else base + (start - lo)
    rows = (is_step & key.is_not_null()).arg_true()  # the steps' rows: a few thousand
    per_process = base is not None
    del base, is_step  # of the rows' columns, only their keys are read from here on
    steps = (
        events.select(pl.col("name", "start_ns", "end_ns").gather(rows))
        .with_columns(_key=key.gather(rows))
        .sort("start_ns")  # as the join sorted them: of equal starts, the last is taken
        .sort("_key", maintain_order=True)
    )
    if steps.is_empty():  # every step without a start or a process
        return events.with_columns(step=pl.lit(None, pl.Int64))
    return events.with_columns(step=_step_of(key, steps, int(lo), span if per_process else None))  # type: ignore[arg-type]


def _step_of(key: pl.Series, steps: pl.DataFrame, lo: int, span: int | None) -> pl.Series:
    """Return the number of the step each ``key`` falls in (``assign_steps``): ``steps`` (name,
    start_ns, end_ns, _key) in order of key; ``span``: the width of a process's range of keys
    (None: the keys are the starts)."""
    number = text("name").str.extract(r"#(\d+)$").cast(pl.Int64, strict=False)  # past int64: none
    # The last key a step covers: its process's key of its end, less one, never past its
    # process's range (a key of another process is then not inside: no process compare).
    if span is not None:
        room = (pl.col("end_ns") - lo - 1).clip(upper_bound=span - 1)  # null where the end is
        last = pl.col("_key") - (pl.col("start_ns") - lo) + room
    else:
        last = pl.col("end_ns") - 1
    found = steps.select(step_no=number, last=last)
    pos = steps["_key"].search_sorted(key, side="right")  # row indices: gathered as they are
    at = pos.clip(lower_bound=1) - 1
    inside = (pos > 0) & (key <= found["last"].gather(at))  # null where the key is
    del pos
    step = pl.select(pl.when(inside).then(found["step_no"].gather(at))).to_series()
    return step.cast(pl.Int64)


def _process_bases(events: pl.DataFrame, span: int) -> pl.Series | None:
    """Return each row's process (host, pid) as its number times ``span``, or None where that
    does not fit in an int64 (beside a start, in ``[0, span)``).

    Null where the pid is null: such a row takes no step, as a null key of a join matches
    none. A null host is the host "", as in ``_steps_by_join``. Hosts are numbered once per
    distinct host and mapped to rows by their dictionary codes: no text per row.
    """
    host = events.get_column("host")
    host = host if host.dtype == Text else host.cast(Text)
    pid = events.get_column("pid")
    plo, phi = pid.min(), pid.max()
    if plo is None:  # no row has a process
        return pl.repeat(None, events.height, dtype=pl.Int64, eager=True)
    distinct = host.unique()
    numbers = distinct.cast(pl.String).fill_null("").rank("dense").cast(pl.Int64) - 1
    pids = int(phi) - int(plo) + 1  # type: ignore[arg-type]
    if (int(numbers.max()) + 1) * pids * span >= 2**62:  # type: ignore[arg-type]
        return None
    named = distinct.is_not_null()
    codes = host.to_physical()
    if named.any():  # a table from code to number, gathered by each row's code
        size = int(distinct.to_physical().max()) + 1  # type: ignore[arg-type]
        table = pl.repeat(None, size, dtype=pl.Int64, eager=True)
        table = table.scatter(distinct.to_physical().filter(named), numbers.filter(named))
        number = table.gather(codes)
    else:
        number = pl.repeat(None, events.height, dtype=pl.Int64, eager=True)
    if not named.all():  # the null host's number (that of "", when there is one)
        number = number.fill_null(numbers.filter(~named)[0])
    return (number * pids + (pid - plo)) * span


def _steps_by_join(events: pl.DataFrame, is_step: pl.Series, by_process: bool) -> pl.DataFrame:
    """assign_steps by ``join_asof`` on the events sorted by start: for starts and processes
    too spread to pack into one integer. ``is_step``: which rows are steps."""
    keys = ["_host", "_pid"] if by_process else []
    process = {"_host": pl.col("host").cast(pl.String).fill_null(""), "_pid": pl.col("pid")}
    steps = (
        events.filter(is_step)
        .select(
            *(process[k].alias(k) for k in keys),
            pl.col("start_ns").alias("step_start"),
            pl.col("end_ns").alias("step_end"),
            # a step number beyond int64 is no step (null), not an error
            text("name").str.extract(r"#(\d+)$").cast(pl.Int64, strict=False).alias("step_no"),
        )
        .sort("step_start")
    )
    if steps.is_empty():
        return events
    # on the row numbers and start times alone, then set: no copy of the wide table
    order = (
        events.select(*(process[k].alias(k) for k in keys), "start_ns")
        .with_row_index("_row")
        .sort("start_ns")
    )
    joined = order.join_asof(
        steps,
        left_on="start_ns",
        right_on="step_start",
        strategy="backward",
        by=keys or None,
        check_sortedness=False,  # sorted by start_ns: within each process too
    )
    step = (
        joined.sort("_row")
        .select(pl.when(pl.col("start_ns") < pl.col("step_end")).then(pl.col("step_no")))
        .to_series()
    )
    return events.with_columns(step=step.cast(pl.Int64))
