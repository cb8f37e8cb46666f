"""The compiled Kineto scanner (``kineto_native``, _kscan.c) against the polars and exact paths.

What users rely on: whichever of the three paths reads a trace (``TRACEANA_KINETO_SCAN``:
native, polars, exact), the events table, notes, warnings and rank are the same; the compiled
scanner takes every real trace (it is the fast one) and declines, never misreads, what it is
not sure of, which the other paths then read; a build without the extension reads every trace
the polars way. Expected values come from the exact path (the whole file parsed by orjson) or
are typed in. test_kineto_fast.py runs its every case under both streaming paths too.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import CORPUS, CORPUS_DATA, X, one_error, run_process
from test_kineto_fast import (
    AFTER,
    BEFORE,
    BLOCKS,
    EVENTS,
    FIXTURES,
    HOST,
    STYLES,
    assert_same,
    exact,
    render,
    source,
    write,
)

from trace_analyzer.errors import InputError, UsageError
from trace_analyzer.readers import kineto, kineto_bytes, kineto_native, read_source
from trace_analyzer.readers.common import ReadResult, load_json
from trace_analyzer.readers.kineto_bytes import NotFast

BUILT = kineto_native._kscan is not None
needs_native = pytest.mark.skipif(
    not BUILT, reason="the compiled scanner is not built here (no compiler at install)"
)
ENV = kineto_native.ENV
REAL = CORPUS.parent / "real"  # ../shared/corpus/real: traces from public repositories
CORPUS_FILES = sorted(  # relative to ../shared/corpus
    str(p.relative_to(CORPUS.parent))
    for root in (CORPUS_DATA, REAL)
    if root.is_dir()
    for p in root.rglob("*.json*")
    if not p.name.endswith("_et.json.gz") and "rocprof" not in p.parts
)
ABSENT = f"../shared/corpus is absent: no {CORPUS_DATA} nor {REAL}"


def native(src) -> ReadResult:
    """Return the compiled scanner's result (NotFast when it declines the file): its records
    split in C, their flows bound there, as read_fast takes them."""
    meta, records, metadata = kineto_native.native_scan(
        src.path, False, max_bytes=None, table=False
    )
    return kineto._result(src, meta, [records], 0, metadata)


def polars_path(src, monkeypatch) -> ReadResult | None:
    monkeypatch.setenv(ENV, "polars")
    try:
        return kineto.read_fast(src)
    finally:
        monkeypatch.delenv(ENV)


def three_paths(path: Path, monkeypatch) -> ReadResult:
    """Assert the native, polars and exact results of ``path`` are one; return the exact."""
    src = source(path)
    ref = exact(src)
    assert_same(native(src), ref, keep_args=False, where=f"native: {path}")
    fast = polars_path(src, monkeypatch)
    if fast is not None:  # where the polars path declines, the exact one reads
        assert_same(fast, ref, keep_args=False, where=f"polars: {path}")
    return ref


# --- 1. every trace at hand: the three paths agree, and the scanner takes them all ---------


@needs_native
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.parts[-4])
def test_fixture_three_paths(path, monkeypatch):
    assert three_paths(path, monkeypatch).events.height > 0


@needs_native
@pytest.mark.parametrize("path", CORPUS_FILES or ["<absent>"])
def test_corpus_three_paths(path, monkeypatch):
    if not CORPUS_FILES:
        pytest.skip(ABSENT)
    assert three_paths(CORPUS.parent / path, monkeypatch).events.height > 0


@needs_native
@pytest.mark.parametrize("style", STYLES)
def test_synthetic_layouts_at_every_block_size(tmp_path, monkeypatch, style):
    """Records cut by block ends anywhere (64 and 333 bytes) read as in one block."""
    path = write(tmp_path, render(BEFORE, EVENTS, AFTER, style))
    ref = exact(source(path))
    assert ref.events.height == 9 and ref.rank == 3  # what EVENTS and AFTER hold
    for block, _ in BLOCKS:
        monkeypatch.setattr(kineto_bytes, "BLOCK", block or kineto_bytes.BLOCK)
        assert_same(native(source(path)), ref, keep_args=False, where=f"block {block}")


@needs_native
def test_metadata_records_are_counted_not_kept(tmp_path):
    meta = {"ph": "M", "name": "thread_name", "pid": HOST, "tid": 1, "args": {"name": "t"}}
    events = [meta] * 5 + [X("cpu_op", "aten::mm", 1, 2, pid=HOST, tid=HOST)] + [meta] * 2
    path = write(tmp_path, render(BEFORE, events, AFTER, "kineto"))
    _, raw, metadata = kineto_native.native_scan(path, False, max_bytes=None)
    assert (raw.height, metadata) == (1, 7)
    assert raw["ph"].to_list() == ["X"]
    got, ref = native(source(path)), exact(source(path))
    assert "not events: 7 metadata records" in got.notes
    assert got.notes == ref.notes


# --- 2. what the scanner reads, and what it declines ----------------------------------------

# Records (as JSON text) the scanner reads exactly: each is checked against the exact path.
READ = {
    "string pid with letters": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": "Spans", '
    '"tid": "stream 7", "ts": 1, "dur": 2}',
    "string digits": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": "12", "tid": "-3", '
    '"ts": 1, "dur": 2, "args": {"External id": "77", "stream": "0x0"}}',
    "2**63 and beyond": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
    '"ts": 1, "dur": 2, "args": {"External id": 9223372036854775808, "correlation": '
    '-9223372036854775809, "exec_id": 9223372036854775807, "device": -9223372036854775808}}',
    "nested args": '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5, '
    '"dur": 2, "args": {"grid": [1, [2, {"a": [3]}]], "x": {"y": {"stream": 5}}, "stream": 7}}',
    "unicode and escapes in names": '{"ph": "X", "cat": "cpu_op", "name": "\\u00e9t\\u00e9 '
    'caf\u00e9 \u65e5\u672c \U0001f600 \\"q\\" \\\\ \\n \\t \\/", "pid": 1, "tid": 1, "ts": 1, '
    '"dur": 2}',
    "null and odd values": '{"ph": "X", "cat": null, "name": null, "pid": true, "tid": [1], '
    '"ts": "1", "dur": null, "id": {"a": 1}, "args": [1, 2]}',
    "no dur, other id spelling": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, '
    '"tid": 1, "ts": 1e3, "args": {"External id": null, "external id": 5, "stream_id": 3}}',
    "times": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
    '"ts": 1695835542514261.125, "dur": -0.0}',
    "big times are null": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
    '"ts": 2e300, "dur": 1.7976931348623157e308}',
    "keys it does not read twice": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, '
    '"tid": 1, "ts": 1, "dur": 2, "x": 1, "x": 2, "args": {"y": 1, "y": 2}}',
    "numbers in range": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
    '"ts": 1, "dur": 2, "x": [1e-400, 0.001e310, 1.7976931348623158e308, -0e999]}',
    "padding": '{  "ph"  :  "X" ,\r\n\t"cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,'
    '"dur":2' + " " * 5000 + "}",
}
# Records the scanner must decline (the polars or the exact path reads them instead).
DECLINED = {
    "duplicate key": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, '
    '"ts": 2, "dur": 2}',
    "duplicate arg": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, '
    '"dur": 2, "args": {"correlation": 1, "correlation": 2}}',
    "escaped key": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
    '"\\u0074s": 1, "dur": 2}',
    "blank around a string id": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": " 12", '
    '"tid": 1, "ts": 1, "dur": 2}',
    "float id": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1.5, "tid": 1, "ts": 1, '
    '"dur": 2}',
    "number name": '{"ph": "X", "cat": "cpu_op", "name": 5, "pid": 1, "tid": 1, "ts": 1}',
    "lone surrogate": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
    '"ts": 1, "dur": 2, "x": "\\ud800"}',
    "deep nesting": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, '
    '"args": {"x": ' + "[" * 300 + "]" * 300 + "}}",
    "a number out of range where nothing reads it": '{"ph": "X", "cat": "cpu_op", '
    '"name": "a", "pid": 1, "tid": 1, "ts": 1, "args": {"x": [1.7976931348623159e308]}}',
    "time out of range": '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
    '"ts": 1e400}',
    "not an object": "7",
}


def trace_of(records: list[str]) -> bytes:
    head = '{"schemaVersion": 1, "traceEvents": [\n'
    return (head + ",\n".join(records) + '\n], "baseTimeNanoseconds": 1000}').encode()


@needs_native
@pytest.mark.parametrize("case", sorted(READ))
def test_records_read_exactly(tmp_path, monkeypatch, case):
    good = '{"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 0, "dur": 1}'
    path = write(tmp_path, trace_of([good, READ[case], good]))
    for block in (None, 64):
        monkeypatch.setattr(kineto_bytes, "BLOCK", block or kineto_bytes.BLOCK)
        assert_same(native(source(path)), exact(source(path)), keep_args=False, where=case)


def test_a_typed_in_record(tmp_path):
    """One record, its values typed in: string ids, 2**63 and an escaped name."""
    if not BUILT:
        pytest.skip("the compiled scanner is not built here")
    path = write(tmp_path, trace_of([READ["string digits"], READ["2**63 and beyond"]]))
    _, raw, _ = kineto_native.native_scan(path, False, max_bytes=None)
    rows = raw.to_dicts()
    assert (rows[0]["pid"], rows[0]["tid"], rows[0]["external_id"]) == (12, -3, 77)
    assert rows[0]["stream"] is None  # "0x0": int() fails on it
    assert rows[1]["external_id"] is None and rows[1]["correlation"] is None
    assert (rows[1]["exec_id"], rows[1]["device"]) == (2**63 - 1, -(2**63))
    path = write(tmp_path, trace_of([READ["unicode and escapes in names"]]), name="u.json")
    _, raw, _ = kineto_native.native_scan(path, False, max_bytes=None)
    assert raw["name"].to_list() == ['été café 日本 😀 "q" \\ \n \t /']


@needs_native
@pytest.mark.parametrize("case", sorted(DECLINED))
def test_records_declined(tmp_path, case):
    good = '{"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 0, "dur": 1}'
    path = write(tmp_path, trace_of([good, DECLINED[case], good]))
    with pytest.raises(NotFast):
        kineto_native.native_scan(path, False, max_bytes=None)
    src = source(path)
    try:
        ref = exact(src)
    except InputError:  # 1e400, a lone surrogate: orjson refuses them; the scanner declined
        return
    got = read_source(src)  # native declines, then polars or exact reads
    assert got.events.drop("args_json").equals(ref.events.drop("args_json"))
    assert (got.notes, got.warnings) == (ref.notes, ref.warnings)


@needs_native
@pytest.mark.parametrize(
    "data",
    [
        b'{"traceEvents": [{"ph": "X", "ts": 1}',  # no end of the array
        b'{"traceEvents": [{"ph": "X", "ts": 1}], "x": }',  # bad keys after it
        b'{"traceEvents": [{"ph": "X", "ts": 1}]} trailing',
        b'{"traceEvents": [{"ph": "X", "ts": 1}], "traceEvents": []}',  # the last one wins
        b'{"traceEvents": [{"ph": "X", "ts": 1},]}',
        b'{"traceEvents": [{"ph": "X", "name": "\xff"}]}',  # not UTF-8
        b'{"traceEvents": [{"ph": "X", "name": "a\x01"}]}',  # a control character
        b'{"traceEvents": [{"ph": "X", "ts": 01}]}',
    ],
    ids=["truncated", "bad tail", "trailing", "two arrays", "comma", "utf8", "control", "zero"],
)
def test_broken_files_are_declined(tmp_path, data):
    path = write(tmp_path, data)
    with pytest.raises(NotFast):
        kineto_native.native_scan(path, False, max_bytes=None)


@needs_native
def test_truncated_file_gives_the_exact_paths_error(tmp_path):
    data = render(BEFORE, EVENTS, AFTER, "kineto")
    path = write(tmp_path, data[: len(data) // 2])
    with pytest.raises(InputError) as want:
        load_json(path)
    with pytest.raises(InputError) as got:
        read_source(source(path))
    assert str(got.value) == str(want.value)


@needs_native
def test_long_padding_streams_through_small_blocks(tmp_path, monkeypatch):
    """Blanks between records, far longer than a block, are read as they come."""
    good = '{"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 0, "dur": 1}'
    path = write(tmp_path, trace_of([good, " " * 100_000 + good]))
    monkeypatch.setattr(kineto_bytes, "BLOCK", 4096)
    assert native(source(path)).events.height == 2


@needs_native
@pytest.mark.parametrize("block", [1024, None], ids=["cut by blocks", "in one block"])
def test_record_longer_than_max_record_is_left_to_the_polars_path(tmp_path, monkeypatch, block):
    monkeypatch.setattr(kineto_bytes, "BLOCK", block or kineto_bytes.BLOCK)
    monkeypatch.setattr(kineto_bytes, "MAX_RECORD", 8192)
    big = '{"ph": "X", "ts": 1, "args": {"x": "' + "a" * 10_000 + '"}}'
    path = write(tmp_path, trace_of([big]))
    with pytest.raises(NotFast):
        kineto_native.native_scan(path, False, max_bytes=None)
    if block is None:  # the polars path looks only at records cut by a block's end
        assert_same(kineto.read_fast(source(path)), exact(source(path)), keep_args=False)
        return
    with pytest.raises(InputError, match="longer than 8,192 bytes"):
        kineto.read_fast(source(path))  # the polars path's own error, as before


# Random records: every key the scanner reads, with values of every kind (ids near int64's
# ends, strings int() reads or not, escapes, non-ASCII text, nesting), keys written twice
# now and then, in random spacing. Each file the scanner takes must read as the exact path.
VALUES = [0, -1, 7, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**19, 2**64, "",
          "12", "-5", "abc", "0x10", None, True, False, [1, [2.5, "x"]], {"a": {"b": [1]}}]
ODD = [1.5, -0.0, 1e-7, 1e300, 2.5e3, " 12", "1_0", "é", 'a"b', "\\", "日本", "\U0001f600"]
PHASES = ["X", "X", "X", "M", "i", "s", "f", "B", "E", 5]
CATS = ["cpu_op", "kernel", "cuda_runtime", "ac2g", "gpu_memcpy", "Trace", None, "é"]
ARG_NAMES = ["device", "stream", "stream_id", "External id", "external id", "correlation",
             "nrt_sequence_id", "exec_id", "name", "Input Dims"]


def random_record(rng: random.Random) -> str:
    def value():
        return rng.choice(ODD if rng.random() < 0.03 else VALUES)

    pairs = [("ph", rng.choice(PHASES)), ("cat", rng.choice(CATS)),
             ("name", rng.choice(["aten::mm", "é\"x\\", "", None, "k<1>"])),
             ("pid", rng.choice([1, 2, "1", "Spans", *VALUES[:4]])),
             ("tid", rng.choice([1, 7, "7", "stream 7"])),
             ("ts", rng.choice([0, 1, 2.5, 1695835542514261.125, 10.001, "x", None])),
             ("dur", rng.choice([1, 0.5, 3.001, None]))]
    if rng.random() < 0.3:
        pairs.append(("id", value()))
    args = [(k, value()) for k in rng.sample(ARG_NAMES, rng.randint(0, 5))]
    if rng.random() < 0.02 and args:
        args.append(args[0])  # a key twice
    if rng.random() < 0.9:
        pairs.append(("args", args))
    rng.shuffle(pairs)
    if rng.random() < 0.02:
        pairs.append(pairs[0])

    def text(v) -> str:
        if isinstance(v, list) and v and isinstance(v[0], tuple):
            return "{" + ", ".join(f"{json.dumps(k)}: {text(x)}" for k, x in v) + "}"
        return json.dumps(v, ensure_ascii=rng.random() < 0.5)

    sep = rng.choice([", ", ",", ",\n    ", " ,\t"])
    fields = (f"{json.dumps(k)}:{rng.choice(['', ' '])}{text(v)}" for k, v in pairs)
    return "{" + sep.join(fields) + "}"


@needs_native
def test_random_records_read_as_the_exact_path(tmp_path):
    rng = random.Random(19)
    taken = 0
    for i in range(60):
        path = write(tmp_path, trace_of([random_record(rng) for _ in range(4)]), name=f"{i}.json")
        try:
            got = native(source(path))
        except NotFast:
            continue
        taken += 1
        assert_same(got, exact(source(path)), keep_args=False, where=path.read_text())
    assert taken >= 20  # the scanner is exercised, not only declining


def random_flow_trace(rng: random.Random) -> list[str]:
    """Events and device flows crowded on a few points: flows bound to several events at
    once, to none, ids null or shared, a start and an end on one event, times that differ
    below a ns, B/E pairs now and then."""
    cats = ["cuda_runtime", "kernel", "cpu_op", "cuda_sync", "gpu_memcpy", None, "Trace"]
    times = [1.0, 1.0004, 1.0001, 2.5, 2.0005, 2.0015, None, 1e300]
    records = []
    for _ in range(rng.randint(1, 40)):
        r = {"ph": rng.choice(["X", "X", "s", "f", "i", "B", "E"] if rng.random() < 0.1
                              else ["X", "X", "s", "f"]),
             "cat": rng.choice(cats), "name": rng.choice(["a", "b"]),
             "pid": rng.choice([0, 1, None]), "tid": rng.choice([1, 2]),
             "ts": rng.choice(times)}
        if r["ph"] in ("s", "f"):
            r["cat"] = rng.choice(["ac2g", "ac2g", "async_gpu", "fwdbwd"])
            if rng.random() < 0.9:
                r["id"] = rng.choice([1, 2, 3, None, -4])
        else:
            r["dur"] = rng.choice([1, 0.5])
        records.append(json.dumps(r))
    return records


@needs_native
def test_flows_bound_in_the_scanner_as_the_exact_path_binds_them(tmp_path):
    rng = random.Random(7)
    for i in range(150):
        trace = trace_of(random_flow_trace(rng))
        if rng.random() < 0.5:  # no base: ts taken as they are
            trace = trace.replace(b', "baseTimeNanoseconds": 1000}', b"}")
        path = write(tmp_path, trace, name=f"{i}.json")
        got = native(source(path))
        assert_same(got, exact(source(path)), keep_args=False, where=trace.decode())


# --- 3. the choice of path ------------------------------------------------------------------


def test_env_var_forces_each_path(tmp_path, monkeypatch):
    path = write(tmp_path, render(BEFORE, EVENTS, AFTER, "kineto"))
    src = source(path)
    ref = exact(src)
    calls = []
    real_native = kineto_native.native_scan

    def spy(*a, **k):
        calls.append("native")
        return real_native(*a, **k)

    monkeypatch.setattr(kineto_native, "native_scan", spy)
    monkeypatch.setenv(ENV, "exact")
    assert kineto.read_fast(src) is None  # the caller parses the file whole
    assert calls == []
    monkeypatch.setenv(ENV, "polars")
    assert_same(kineto.read_fast(src), ref, keep_args=False)
    assert calls == []
    monkeypatch.setenv(ENV, "native")
    assert_same(kineto.read_fast(src), ref, keep_args=False)
    assert calls == (["native"] if BUILT else [])
    monkeypatch.setenv(ENV, "bogus")
    with pytest.raises(UsageError, match="TRACEANA_KINETO_SCAN must be one of"):
        kineto.read_fast(src)


def test_a_trace_only_the_exact_path_reads_still_reads_under_native(tmp_path, monkeypatch):
    """A record that is not an object: both streaming paths decline; the exact one counts it."""
    monkeypatch.setenv(ENV, "native")
    good = '{"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 0, "dur": 1}'
    path = write(tmp_path, trace_of([good, "7", good]))
    src = source(path)
    assert kineto.read_fast(src) is None
    got = read_source(src)
    assert got.events.height == 2 and "not events: 1 non-object records" in got.notes


def test_without_the_extension_the_polars_path_reads(tmp_path, monkeypatch):
    path = write(tmp_path, render(BEFORE, EVENTS, AFTER, "kineto"))
    monkeypatch.setattr(kineto_native, "_kscan", None)
    for chosen in ("native", "polars"):
        monkeypatch.setenv(ENV, chosen)
        assert len(kineto_native.scans()) == 2  # the polars path's two splitters
        assert_same(kineto.read_fast(source(path)), exact(source(path)), keep_args=False)


def test_a_process_without_the_extension_gives_the_same_answer(tmp_path, monkeypatch):
    """The CLI, as a process where importing _kscan fails (a build without a compiler)."""
    path = write(tmp_path, render(BEFORE, EVENTS, AFTER, "kineto"))
    monkeypatch.setenv(ENV, "native")
    code, with_ext, err, *_ = run_process("gaps", path, "--no-cache", "--format", "json")
    assert code == 0, err
    blocked = tmp_path / "sitecustomize.py"  # runs first in the child: the import fails
    blocked.write_text("import sys\nsys.modules['trace_analyzer.readers._kscan'] = None\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    code, without, err, *_ = run_process("gaps", path, "--no-cache", "--format", "json")
    assert code == 0, err
    assert json.loads(without) == json.loads(with_ext)
    check = "import trace_analyzer.readers.kineto_native as k; print(k._kscan is None)"
    import subprocess

    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr


def test_a_bad_env_value_is_one_error_line(tmp_path, monkeypatch):
    path = write(tmp_path, render(BEFORE, EVENTS, AFTER, "kineto"))
    monkeypatch.setenv(ENV, "fastest")
    line = one_error(*run_process("gaps", path, "--no-cache"))
    assert "TRACEANA_KINETO_SCAN must be one of native, polars, exact, not 'fastest'" in line


@needs_native
def test_keep_args_is_the_polars_paths(tmp_path, monkeypatch):
    """args_json is the polars path's work: with keep_args the scanner declines."""
    path = write(tmp_path, render(BEFORE, EVENTS, AFTER, "kineto"))
    with pytest.raises(NotFast):
        kineto_native.native_scan(path, True, max_bytes=None)
    got = kineto.read_fast(source(path), keep_args=True)
    assert got is not None and got.events["args_json"].null_count() < got.events.height


@needs_native
def test_columns_outlive_the_scanner(tmp_path):
    """The table holds the scanner's buffers (Arrow's C interface): they stay when it goes."""
    import gc

    path = write(tmp_path, render(BEFORE, EVENTS * 50, AFTER, "minified"))
    _, raw, _ = kineto_native.native_scan(path, False, max_bytes=None)
    gc.collect()
    again = pl.DataFrame(raw.to_dicts(), schema=raw.schema)
    assert raw.equals(again) and raw.height == sum(e["ph"] != "M" for e in EVENTS) * 50


def test_two_equally_busy_host_pids_read_the_same_every_time(tmp_path):
    """The process a device's events are put under is the one that runs the most host
    events; of two as busy, the lower pid, on every read (the paths were compared so)."""
    events = [
        X("cpu_op", "a", 1, 1, pid=7, tid=7),
        X("cpu_op", "b", 2, 1, pid=3, tid=3),
        X("kernel", "k", 3, 1, pid=0, tid=9, device=0, stream=9),
    ]
    path = write(tmp_path, render(BEFORE, events, AFTER, "kineto"))
    lanes = {exact(source(path)).events.filter(pl.col("name") == "k")["lane"][0] for _ in range(20)}
    assert lanes == {"PID:3/GPU:0/stream:9"}


# --- a read that keeps args: the scanner's events, their args from a second, narrow read ---


@needs_native
def test_args_are_read_again_beside_the_scanner_s_events(monkeypatch, tmp_path):
    """``traceana export``, ``tables`` and ``ta.load(args=True)`` keep every event's args:
    the scanner's events, their args read by the polars path with only the events' name, ts
    and args kept (kineto_args.py), the same as the exact path's; a trace of B/E records,
    which the scanner does not pair, is read the polars way with its args, as before."""
    from trace_analyzer.readers import kineto_args

    placed = []
    real = kineto_args.ArgsOf.__call__

    def spy(self, rows, base):
        out = real(self, rows, base)
        placed.append(rows.height)
        return out

    monkeypatch.setattr(kineto_args.ArgsOf, "__call__", spy)
    if not CORPUS_FILES:
        pytest.skip(ABSENT)
    for rel in CORPUS_FILES[::4]:  # a quarter of the corpus: HTA's and the real projects'
        src = source(CORPUS.parent / rel)
        got = kineto.read_fast(src, keep_args=True)
        assert got is not None, rel
        assert_same(got, exact(src), keep_args=True, where=rel)
    assert len(placed) == len(CORPUS_FILES[::4])  # each through the second read
    trace = tmp_path / "be" / "trace.json"
    trace.parent.mkdir()
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "B", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.0,
         "args": {"External id": 3, "note": "é"}},
        {"ph": "E", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 9.5},
        X("kernel", "k", 2.0, 3.0, pid=0, tid=7, device=0, stream=7, correlation=3)]}))  # fmt: skip
    placed.clear()
    src = source(trace.parent)
    got = kineto.read_fast(src, keep_args=True)
    assert got is not None and placed == []  # not the second read: the polars path's
    assert_same(got, exact(src), keep_args=True)
