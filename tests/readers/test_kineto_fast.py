"""The streaming Kineto reader (``kineto.read_fast``) against the exact one (``kineto.read``).

What users rely on: whichever path reads a trace, the events table, notes, warnings and rank
are the same; the streaming path takes every real trace (it is the fast one); where it
declines a file, ``read_source`` still gives the exact result, or the exact path's error.
Expected values come from the exact path (the whole file parsed by orjson) or are typed in.
Every test runs twice: with the compiled scanner first (``TRACEANA_KINETO_SCAN=native``, the
default; where it declines, the polars path follows) and with the polars path alone.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import polars as pl
import pytest
from conftest import CORPUS_DATA, X

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.discover import discover
from trace_analyzer.readers import kineto, kineto_bytes, kineto_native, read_source
from trace_analyzer.readers.common import ReadResult, load_json

REPO = Path(__file__).resolve().parents[2]
FIXTURES = sorted((REPO / "fixtures").glob("*/**/trace.json"))
ABSENT = (
    f"../shared/corpus is absent: no {CORPUS_DATA}; the corpus tests need the shared HTA "
    "sample traces checked out beside the repository"
)
# Every Kineto trace of the corpus (the *_et.json.gz there is a PyTorch Execution Trace).
CORPUS_FILES = (
    sorted(
        str(p.relative_to(CORPUS_DATA))
        for p in CORPUS_DATA.rglob("*.json*")
        if not p.name.endswith("_et.json.gz")
    )
    if CORPUS_DATA.is_dir()
    else []
)
BIG = 100_000  # bytes on disk: corpus files above this are read with keep_args=False only (time)

BASE = 1_793_620_800_000_000_000  # baseTimeNanoseconds, epoch ns
HOST = 4242
FULL_BLOCK = kineto_bytes.BLOCK  # 16 MiB: each synthetic trace is one block
# Block sizes to read each synthetic trace with (None: FULL_BLOCK), and the keep_args values
# tried with each.
BLOCKS = ((64, (False, True)), (333, (False,)), (None, (False, True)))
HEAD = re.compile(rb'"traceEvents"\s*:\s*\[')


# --- helpers -------------------------------------------------------------------------------


@pytest.fixture(autouse=True, params=["native", "polars"])
def scan_path(request, monkeypatch) -> str:
    """The streaming path each test runs under (TRACEANA_KINETO_SCAN)."""
    if request.param == "native" and kineto_native._kscan is None:
        pytest.skip("the compiled scanner is not built here (no compiler at install)")
    monkeypatch.setenv(kineto_native.ENV, request.param)
    return request.param


def source(path: Path):
    (run,) = discover(path)
    (src,) = run.sources
    return src


def exact(src) -> ReadResult:
    return kineto.read(src, load_json(src.path))


def parsed_args(events: pl.DataFrame) -> list:
    return [None if a is None else json.loads(a) for a in events["args_json"]]


def assert_same(fast: ReadResult, ref: ReadResult, keep_args: bool, where: str = "") -> None:
    """Assert the streaming result equals the exact one (args_json as keep_args says)."""
    assert fast.format == ref.format, where
    got, want = fast.events, ref.events
    assert got.columns == want.columns, where
    assert got.drop("args_json").equals(want.drop("args_json")), (
        f"{where}: events differ:\nfast\n{got.drop('args_json')}\nexact\n{want.drop('args_json')}"
    )
    if keep_args:
        assert parsed_args(got) == parsed_args(want), where
    else:
        assert got["args_json"].null_count() == got.height, where
    assert fast.notes == ref.notes, where
    assert fast.warnings == ref.warnings, where
    assert (fast.rank, fast.rank_origin) == (ref.rank, ref.rank_origin), where


def header_fits(data: bytes, block: int) -> bool:
    """Whether the text up to the traceEvents ``[`` lies in the first block (the streaming
    path's one limit on where the array may start: 16 MiB of keys before it)."""
    m = HEAD.search(data)
    return m is not None and m.end() <= block


def check_file(path: Path, monkeypatch, blocks=BLOCKS, *, must_be_fast: bool = True) -> ReadResult:
    """Read ``path`` the exact way, then streaming (keep_args False and True) with each block
    size, and compare; return the exact result. Where the streaming path declines the file,
    read_source must still give the exact result."""
    src = source(path)
    ref = exact(src)
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    for block, modes in blocks:
        monkeypatch.setattr(kineto_bytes, "BLOCK", block or FULL_BLOCK)
        for keep_args in modes:
            where = f"{path.name}, block {block}, keep_args={keep_args}"
            fast = kineto.read_fast(src, keep_args)
            if fast is None:
                assert not (must_be_fast and header_fits(data, block or FULL_BLOCK)), (
                    f"the streaming path declined {where}"
                )
                got = read_source(src, keep_args)
                if keep_args:
                    assert_same(got, ref, keep_args, where)
                else:
                    assert_same_events(got, ref)
            else:
                assert_same(fast, ref, keep_args, where)
    return ref


def assert_same_events(got: ReadResult, ref: ReadResult) -> None:
    """Like assert_same, for a result that may come from either path (args_json ignored)."""
    assert got.events.drop("args_json").equals(ref.events.drop("args_json"))
    assert (got.notes, got.warnings, got.rank) == (ref.notes, ref.warnings, ref.rank)


# --- rendering a trace in the layouts found in the wild ------------------------------------


def _kineto_record(e: dict) -> str:
    """One record the way libkineto writes it: several lines, args one per line."""
    fields = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in e.items() if k != "args")
    text = "  {\n    " + fields
    if "args" in e:
        args = ",\n      ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in e["args"].items())
        text += ',\n    "args": {\n      ' + args + "\n    }"
    return text + "\n  }"


def render(before: dict, events: list, after: dict, style: str) -> bytes:
    """Return the trace text: keys ``before`` the traceEvents array, the array, keys ``after``."""
    doc = {**before, "traceEvents": events, **after}
    if style == "kineto":  # libkineto: records separated by "},\n  {"
        head = "{\n" + "".join(f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in before.items())
        body = ",\n".join(_kineto_record(e) for e in events)
        tail = "".join(f",\n  {json.dumps(k)}: {json.dumps(v)}" for k, v in after.items())
        return (head + '  "traceEvents": [\n' + body + "\n  ]" + tail + "\n}\n").encode()
    if style == "lines":  # one record per line
        head = "{" + "".join(f"{json.dumps(k)}: {json.dumps(v)}, " for k, v in before.items())
        body = ",\n".join(json.dumps(e) for e in events)
        tail = "".join(f", {json.dumps(k)}: {json.dumps(v)}" for k, v in after.items())
        return (head + '"traceEvents": [\n' + body + "\n]" + tail + "}\n").encode()
    if style == "minified":  # "},{"
        return json.dumps(doc, separators=(",", ":")).encode()
    if style == "dumps":  # Python's json.dumps default: "}, {"
        return json.dumps(doc).encode()
    if style == "indent":  # json.dumps(indent=2): "},\n    {"
        return json.dumps(doc, indent=2).encode()
    raise ValueError(style)


STYLES = ["kineto", "lines", "minified", "dumps", "indent"]


def write(tmp_path: Path, data: bytes, *, crlf=False, bom=False, gz=False, name="t.json") -> Path:
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    if bom:
        data = b"\xef\xbb\xbf" + data
    path = tmp_path / (name + ".gz" if gz else name)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def flow(ph: str, fid: int, ts: float, pid, tid) -> dict:
    e = {"ph": ph, "id": fid, "pid": pid, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"}
    return {**e, "bp": "e"} if ph == "f" else e


# A trace with what real ones hold: metadata, steps, ops with array args, a launch and its
# kernel tied by an ac2g flow, a memcpy, string pids/tids ("Spans", ""), instant events, a
# string External id, 3-decimal timestamps.
EVENTS = [
    {"name": "process_name", "ph": "M", "ts": 0, "pid": HOST, "tid": 0, "args": {"name": "python"}},
    {"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
    X("user_annotation", "ProfilerStep#1", 0.5, 500, pid=HOST, tid=HOST, **{"External id": 1}),
    X(
        "cpu_op",
        "aten::mm",
        10.251,
        35.125,
        pid=HOST,
        tid=HOST,
        **{
            "External id": 2,
            "Sequence number": 5,
            "Fwd thread id": 0,
            "Record function id": 0,
            "Input Dims": [[2, 3], [3, 4]],
            "Input type": ["float", "float"],
            "Concrete Inputs": ["", ""],
            "Ev Idx": 1,
        },
    ),
    X(
        "cuda_runtime",
        "cudaLaunchKernel",
        20.5,
        5.001,
        pid=HOST,
        tid=HOST,
        **{"External id": 2, "cbid": 211, "correlation": 7},
    ),
    flow("s", 7, 20.5, HOST, HOST),
    X(
        "kernel",
        "void gemm<float, 128>(float const*, float*)",
        30.003,
        12.5,
        pid=0,
        tid=7,
        **{
            "External id": 2,
            "queued": 0,
            "device": 0,
            "context": 1,
            "stream": 7,
            "correlation": 7,
            "registers per thread": 32,
            "shared memory": 0,
            "grid": [1, 2, 3],
            "block": [128, 1, 1],
            "est. achieved occupancy %": 12.5,
        },
    ),
    flow("f", 7, 30.003, 0, 7),
    X(
        "gpu_memcpy",
        "Memcpy HtoD (Pageable -> Device)",
        50,
        3,
        pid=0,
        tid=7,
        **{
            "device": 0,
            "stream": 7,
            "correlation": 9,
            "bytes": 1024,
            "memory bandwidth (GB/s)": 0.3,
        },
    ),
    X("cpu_op", "aten::add", 60.1, 1, pid=HOST, tid=HOST, **{"External id": "12"}),
    X(
        "python_function",
        "train.py(10): step",
        0.7,
        400,
        pid=HOST,
        tid=HOST + 1,
        **{"Python parent id": 1, "Python id": 3, "Python thread": 0},
    ),
    X(
        "cuda_runtime",
        "cudaDeviceSynchronize",
        70.25,
        2.5,
        pid=HOST,
        tid=HOST,
        **{"External id": 3, "correlation": 11},
    ),
    X(
        "cuda_sync",
        "Device Synchronize",
        70.3,
        2.4,
        pid=0,
        tid=7,
        **{"device": 0, "stream": -1, "correlation": 11},
    ),
    X(
        "Trace",
        "PyTorch Profiler (0)",
        0,
        600,
        pid="Spans",
        tid="PyTorch Profiler",
        **{"Op count": 0},
    ),
    {
        "name": "process_sort_index",
        "ph": "M",
        "ts": 0,
        "pid": "Spans",
        "tid": 0,
        "args": {"sort_index": 536870912},
    },
    {
        "name": "Iteration Start: PyTorch Profiler",
        "ph": "i",
        "s": "g",
        "pid": "Traces",
        "tid": "Trace PyTorch Profiler",
        "ts": 0,
    },
    {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 600},
]
INFO = [
    "INFO:2024-05-22 17:15:22 2910249:2910249 CuptiActivityProfiler.cpp:976] Enabling GPU tracing",
    "WARNING:2024-05-22 17:15:23 CuptiActivityProfiler.cpp:906] x] [y]",
    "]",
]
DEVICES = [
    {
        "id": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "totalGlobalMem": 85028569088,
        "computeMajor": 9,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "numSms": 132,
    }
]
# Where the top-level keys sit: a short head (libkineto's own order puts deviceProperties and
# distributedInfo first), and keys after the array, some holding "]" and arrays.
BEFORE = {"schemaVersion": 1}
AFTER = {
    "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
    "deviceProperties": DEVICES,
    "INFO": INFO,
    "traceName": "/tmp/x]y.json",
    "displayTimeUnit": "ms",
    "baseTimeNanoseconds": BASE,
}
LONG_BEFORE = {
    "schemaVersion": 1,
    "deviceProperties": DEVICES * 4,
    "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
    "record_shapes": 1,
    "with_stack": 0,
}
LONG_AFTER = {"traceName": "/tmp/x.json", "displayTimeUnit": "ms", "baseTimeNanoseconds": BASE}


# --- 1. the corpus and the bundled fixtures -------------------------------------------------


@pytest.mark.parametrize("rel", CORPUS_FILES or ["<absent>"])
def test_corpus_trace_streams_like_exact(rel):
    if not CORPUS_FILES:
        pytest.skip(ABSENT)
    path = CORPUS_DATA / rel
    src = source(path)
    ref = exact(src)
    assert ref.events.height > 0
    modes = (False, True) if path.stat().st_size < BIG else (False,)
    for keep_args in modes:
        fast = kineto.read_fast(src, keep_args)
        assert fast is not None, f"the streaming path declined {rel}"
        assert_same(fast, ref, keep_args)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.parts[-4])
def test_fixture_streams_like_exact(path):
    src = source(path)
    ref = exact(src)
    assert ref.events.height > 0
    for keep_args in (False, True):
        fast = kineto.read_fast(src, keep_args)
        assert fast is not None, f"the streaming path declined {path}"
        assert_same(fast, ref, keep_args)


def test_fixtures_are_bundled():
    assert len(FIXTURES) >= 4


# --- 2. synthetic traces in every layout, records straddling blocks -------------------------


@pytest.mark.parametrize("style", STYLES)
def test_layouts(tmp_path, monkeypatch, style):
    path = write(tmp_path, render(BEFORE, EVENTS, AFTER, style))
    ref = check_file(path, monkeypatch)
    # The exact result is what the trace says (so the comparison above is not vacuous).
    assert ref.events.height == 9  # the X records but the profiler's own "Trace" span
    assert ref.rank == 3 and ref.warnings == []
    kernel = ref.events.filter(pl.col("category") == "kernel").row(0, named=True)
    assert kernel["start_ns"] == BASE + 30_003 and kernel["stream"] == 7
    assert kernel["flow_ids"] == [7]
    add = ref.events.filter(pl.col("name") == "aten::add").row(0, named=True)
    assert add["external_id"] == 12


@pytest.mark.parametrize(
    ("style", "how"),
    [
        ("kineto", "crlf"),
        ("dumps", "gzip"),
        ("kineto", "bom"),
        ("dumps", "crlf+gzip+bom"),
        ("kineto", "crlf+gzip"),
    ],
)
def test_line_ends_gzip_bom(tmp_path, monkeypatch, style, how):
    flags = {"crlf": "crlf" in how, "gz": "gzip" in how, "bom": "bom" in how}
    path = write(tmp_path, render(BEFORE, EVENTS, AFTER, style), **flags)
    assert check_file(path, monkeypatch).events.height == 9


def test_long_head_and_amd_device_properties_after_the_events(tmp_path, monkeypatch):
    amd = [{"id": 0, "name": "AMD Instinct MI250X", "gcnArchName": "gfx90a:sramecc+:xnack-"}]
    path = write(tmp_path, render(LONG_BEFORE, EVENTS, LONG_AFTER, "kineto"), name="long.json")
    # 64 and 333 bytes hold no "traceEvents": [ here, so the streaming path may decline them.
    assert check_file(path, monkeypatch).rank == 3
    path = write(
        tmp_path,
        render(BEFORE, EVENTS, {**AFTER, "deviceProperties": amd}, "minified"),
        name="amd.json",
    )
    ref = check_file(path, monkeypatch)
    assert set(ref.events.filter(pl.col("category") == "kernel")["source"]) == {"rocm"}


@pytest.mark.parametrize("style", ["kineto", "lines", "minified"])
def test_empty_trace_events(tmp_path, monkeypatch, style):
    path = write(tmp_path, render(BEFORE, [], AFTER, style))
    ref = check_file(path, monkeypatch)
    assert ref.events.is_empty()


@pytest.mark.parametrize("style", ["kineto", "dumps"])
def test_epoch_microseconds_stay_exact(tmp_path, monkeypatch, style):
    """Older Kineto: no baseTimeNanoseconds, integer epoch µs; a float64 cannot hold epoch ns."""
    ts = 1695835542514261
    events = [
        X("cpu_op", "aten::mm", ts, 14, pid=HOST, tid=HOST),
        X("cpu_op", "aten::add", ts + 20.25, 3.001, pid=HOST, tid=HOST),
    ]
    path = write(tmp_path, render({"schemaVersion": 1}, events, {"traceName": "t"}, style))
    ref = check_file(path, monkeypatch)
    monkeypatch.setattr(kineto_bytes, "BLOCK", 64)
    fast = kineto.read_fast(source(path))
    for res in (ref, fast):
        mm = res.events.filter(pl.col("name") == "aten::mm").row(0, named=True)
        add = res.events.filter(pl.col("name") == "aten::add").row(0, named=True)
        assert (mm["start_ns"], mm["end_ns"]) == (1695835542514261000, 1695835542514275000)
        assert (add["start_ns"], add["duration_ns"]) == (1695835542514281250, 3001)


# Records the splitters cut in the wrong place: the streaming path may decline them (None),
# but must never read them differently, and read_source must give the exact result.
NESTED = [
    X("cpu_op", "list of objects", 1, 2, pid=HOST, tid=HOST, x=[{"a": 1}, {"b": 2}]),
    X("cpu_op", "a},   {b", 3, 2, pid=HOST, tid=HOST),
    X("cpu_op", "c}, {d", 5, 2, pid=HOST, tid=HOST),
    X("cpu_op", "e},{f", 7, 2, pid=HOST, tid=HOST, **{"External id": 4}),
    X("cpu_op", 'g"}, {"h', 9, 2, pid=HOST, tid=HOST, y={"z": [{"w": "}, {"}]}),
]
NESTED_NAMES = [e["name"] for e in NESTED]


@pytest.mark.parametrize("style", STYLES)
def test_separator_inside_records(tmp_path, monkeypatch, style):
    events = EVENTS[:5] + NESTED + EVENTS[5:] + NESTED[:1]
    # Two devices after the array: "}, {" in the keys after it too.
    path = write(
        tmp_path, render(BEFORE, events, {**AFTER, "deviceProperties": DEVICES * 2}, style)
    )
    ref = check_file(path, monkeypatch, must_be_fast=False)
    assert set(NESTED_NAMES) <= set(ref.events["name"])


def test_arg_id_too_large_for_int64_reads_as_exact(tmp_path, monkeypatch):
    events = [
        X("cpu_op", "big", 1, 2, pid=HOST, tid=HOST, **{"External id": 2**63 + 5}),
        X("cpu_op", "big2", 3, 2, pid=HOST, tid=HOST, correlation=2**63),
        X("cpu_op", "str", 5, 2, pid=HOST, tid=HOST, **{"External id": "12"}),
        X("cpu_op", "ok", 7, 2, pid=HOST, tid=HOST, **{"External id": 2**63 - 1}),
    ]
    path = write(tmp_path, render(BEFORE, events, AFTER, "kineto"))
    ref = check_file(path, monkeypatch, must_be_fast=False)
    ids = dict(zip(ref.events["name"], ref.events["external_id"], strict=True))
    assert ids == {"big": None, "big2": None, "str": 12, "ok": 2**63 - 1}
    assert ref.events["correlation"].null_count() == ref.events.height


def test_arg_id_too_large_for_int64_stays_on_the_fast_path(tmp_path):
    events = [X("cpu_op", "big", 1, 2, pid=HOST, tid=HOST, **{"External id": 2**63 + 5})]
    path = write(tmp_path, render(BEFORE, events, AFTER, "kineto"))
    assert kineto.read_fast(source(path)) is not None


def test_arg_id_below_int64_is_null(tmp_path):
    events = [X("cpu_op", "neg", 3, 2, pid=HOST, tid=HOST, correlation=-(2**63) - 5)]
    path = write(tmp_path, render(BEFORE, events, AFTER, "kineto"))
    src = source(path)
    fast = kineto.read_fast(src, keep_args=True)
    assert fast is not None and fast.events["correlation"].to_list() == [None]
    assert exact(src).events["correlation"].to_list() == [None]


# --- 3. read_source: files the streaming path declines -------------------------------------


def test_read_source_on_a_declined_file_is_exact(tmp_path, scan_path):
    path = write(tmp_path, render(BEFORE, EVENTS[:5] + NESTED, AFTER, "dumps"))
    src = source(path)
    ref = exact(src)
    if scan_path == "polars":  # "}, {" inside a record: the splitters cannot cut it
        assert kineto.read_fast(src) is None
    else:  # the compiled scanner reads records, not separators
        assert_same(kineto.read_fast(src), ref, keep_args=False)
    assert_same_events(read_source(src), ref)
    assert set(NESTED_NAMES) <= set(ref.events["name"])


def same_error(src) -> str:
    """Return read_source's error on src, after checking it is the exact path's own."""
    with pytest.raises(InputError) as want:
        load_json(src.path)
    assert kineto.read_fast(src) is None
    with pytest.raises(InputError) as got:
        read_source(src)
    assert str(got.value) == str(want.value)
    return str(got.value)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("style", ["kineto", "dumps"])
def test_truncated_file_raises_the_exact_paths_error(tmp_path, style, gz):
    data = render(BEFORE, EVENTS, AFTER, style)
    path = write(tmp_path, data[: len(data) * 2 // 3], gz=gz)
    msg = same_error(source(path))
    assert "\n" not in msg and str(path) in msg and "not valid JSON" in msg


def test_truncated_gzip_raises_the_exact_paths_error(tmp_path):
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(render(BEFORE, EVENTS, AFTER, "kineto"))[:-20])
    assert str(path) in same_error(source(path))


# --- 4. keep_args ---------------------------------------------------------------------------


def test_keep_args_holds_each_records_args(tmp_path):
    """args_json is the record's args object (typed-in expectations, beside the exact path)."""
    path = write(tmp_path, render(BEFORE, EVENTS, AFTER, "kineto"))
    src = source(path)
    fast = kineto.read_fast(src, keep_args=True)
    assert fast is not None
    assert_same(fast, exact(src), keep_args=True)
    by_name = dict(zip(fast.events["name"], parsed_args(fast.events), strict=True))
    assert by_name["aten::mm"]["Input Dims"] == [[2, 3], [3, 4]]
    assert by_name["aten::add"] == {"External id": "12"}
    assert by_name["void gemm<float, 128>(float const*, float*)"]["grid"] == [1, 2, 3]
    assert parsed_args(fast.events) == parsed_args(exact(src).events)  # no empty args here
    without = kineto.read_fast(src, keep_args=False)
    assert without.events["args_json"].null_count() == without.events.height


def test_empty_args_object_is_null_on_both_paths(tmp_path):
    events = [
        X("cpu_op", "a", 1, 2, pid=HOST, tid=HOST) | {"args": {}},
        X("cpu_op", "b", 3, 2, pid=HOST, tid=HOST, n=1),
    ]
    path = write(tmp_path, render(BEFORE, events, AFTER, "kineto"))
    src = source(path)
    assert exact(src).events["args_json"].to_list()[0] is None
    fast = kineto.read_fast(src, keep_args=True)
    assert fast is not None
    assert parsed_args(fast.events) == parsed_args(exact(src).events)


def test_ids_int_reads_but_polars_casts_not_read_as_exact(tmp_path):
    """Ids as text with blanks or underscores (int() reads " 12" and "1_0"), and a pid that
    is a fraction (int(1.5) is 1): read as the exact path reads them, on either path."""
    events = [
        X("cpu_op", "blank", 1, 2, pid=" 12", tid="1_0"),
        X("cpu_op", "float", 3, 2, pid=1.5, tid=HOST, **{"External id": " 7"}),
        X("cpu_op", "plain", 5, 2, pid="12", tid=HOST),
    ]
    path = write(tmp_path, render(BEFORE, events, AFTER, "kineto"))
    src = source(path)
    ref = exact(src)
    rows = {r["name"]: r for r in ref.events.to_dicts()}
    assert (rows["blank"]["pid"], rows["blank"]["tid"]) == (12, 10)
    assert (rows["float"]["pid"], rows["float"]["external_id"]) == (1, 7)
    got = kineto.read_fast(src)
    assert got is not None
    assert_same(got, ref, keep_args=False)
