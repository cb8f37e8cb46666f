"""The fuzz harness (fuzz/fuzz_readers.py) inside the test suite, without atheris.

What users rely on: any bytes given to a reader give a result or a ``TraceanaError`` (one
``traceana: error:`` line, exit 2), never an internal error. Each fuzz target's one-input
function is run here over its seed corpus (fuzz/seeds.py) and over a few hundred fixed
mutations of it (random.Random(0): bit flips, truncations, inserted and repeated bytes, and
the fuzzer's own structure-aware mutations), so the harness is known to run and the contract
to hold. The inputs of the crashes the fuzzer found are replayed at the end, each with its
expected clean outcome. The fuzzing run itself is a separate command (fuzz/README.md).
"""

from __future__ import annotations

import functools
import importlib.util
import io
import json
import os
import random
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from trace_analyzer.errors import InputError
from trace_analyzer.readers import kineto
from trace_analyzer.readers.common import json_text

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("fuzz_readers", REPO / "fuzz" / "fuzz_readers.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)
seeds = fuzz.seeds

TARGETS = list(fuzz.TARGETS)
HAVE_CORPUS = seeds.corpus_available()
ABSENT = (f"../shared/corpus is absent: no {seeds.CORPUS_DATA}; the corpus seeds need the shared "
          "HTA sample traces checked out beside the repository")
# Mutated inputs per target: a few hundred in all, weighted by how fast a target runs.
MUTATIONS = {"kineto-fast": 40, "kineto-native": 80, "kineto-exact": 50, "kineto-gz": 40, "explorer-json": 50,
             "explorer-parquet": 40, "archive": 20, "pipeline": 20}
CORPUS_SEEDS = 5  # corpus seeds per target here (the smallest): the fuzzer takes them all


@functools.lru_cache(maxsize=None)
def target_seeds(target: str, corpus: bool = False) -> dict[str, bytes]:
    return seeds.seeds(target) if corpus else seeds.seeds(target, corpus=None)


def mutate(data: bytes, rng: random.Random) -> bytes:
    """Return ``data`` changed the ways libFuzzer changes it most often."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if not b or op == 0:  # insert random bytes
            i = rng.randint(0, len(b))
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 1:  # flip bits
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op == 2:  # truncate
            del b[rng.randint(0, len(b) - 1):]
        elif op == 3:  # repeat a slice somewhere else
            i = rng.randrange(len(b))
            part = b[i:i + rng.randint(1, 64)]
            j = rng.randint(0, len(b))
            b[j:j] = part
        else:  # an interesting byte or number text
            i = rng.randrange(len(b))
            tok = rng.choice([b"\x00", b"\xff", b"-1", b"1e309", b"9223372036854775808", b'"', b"{", b"]"])
            b[i:i + len(tok)] = tok
    return bytes(b)


def check(target: str, name: str, data: bytes) -> None:
    try:
        fuzz.run_one(target, data)
    except Exception as e:  # noqa: BLE001 - any escape is the failure being tested
        pytest.fail(f"{target}: {name}: {type(e).__name__}: {e}")


def test_harness_imports_without_atheris():
    assert not fuzz._FUZZING
    assert set(TARGETS) == set(seeds.TARGETS) == set(fuzz.TARGET_NAMES)


@pytest.mark.parametrize("target", TARGETS)
def test_seeds_hold_the_contract(target):
    found = target_seeds(target)
    assert found, f"{target}: no seeds"
    assert all(len(v) <= seeds.MAX_LEN for v in found.values())
    for name, data in sorted(found.items()):
        if target == "pipeline" and name.startswith("broken__"):
            continue  # tests/readers/test_broken_inputs.py runs `traceana gaps` on each of these
        check(target, name, data)


@pytest.mark.parametrize("target", TARGETS)
def test_corpus_seeds_hold_the_contract(target):
    if not HAVE_CORPUS:
        pytest.skip(ABSENT)
    local = target_seeds(target)
    found = {k: v for k, v in target_seeds(target, corpus=True).items() if k not in local}
    if target in ("explorer-json", "explorer-parquet"):
        assert not found  # Explorer targets have no corpus seeds
        return
    assert found, f"{target}: no corpus seeds"
    for name in sorted(found, key=lambda k: (len(found[k]), k))[:CORPUS_SEEDS]:
        check(target, name, found[name])


@pytest.mark.parametrize("target", TARGETS)
def test_mutations_hold_the_contract(target):
    """Byte mutations (half) and the fuzzer's structure-aware ones (fuzz.mutate, half)."""
    rng = random.Random(0)
    found = target_seeds(target)
    names = sorted(found)
    structural = 0
    for i in range(MUTATIONS[target]):
        name = rng.choice(names)
        data = fuzz.mutate(target, found[name], rng) if i % 2 else None
        structural += data is not None
        check(target, f"mutation {i} of {name}", mutate(found[name], rng) if data is None else data)
    assert structural >= MUTATIONS[target] // 5  # the structure-aware mutator applies to the seeds


def test_seed_folder_is_written_and_emptied(tmp_path):
    folder = tmp_path / "seeds"
    folder.mkdir()
    (folder / "stale").write_bytes(b"x")
    n = seeds.write("explorer-json", folder, corpus=None)
    assert n == len(list(folder.iterdir())) and not (folder / "stale").exists()


def test_all_summary_parses_libfuzzer_output():
    out = ("#42\tINITED cov: 1 corp: 18/145Kb\n#900\tNEW cov: 2 corp: 37/208Kb\n"
           "=== Uncaught Python exception: ===\nKeyError: 'x'\nTraceback (most recent call last):\n"
           '  File "/r/fuzz/fuzz_readers.py", line 9, in test_one_input\n'
           '  File "/r/trace_analyzer/readers/kineto.py", line 120, in _result\n'
           "stat::number_of_executed_units: 912\n")
    assert fuzz.EXECS.findall(out) == ["912"]
    assert fuzz.CORP.findall(out)[-1] == "37"
    assert fuzz._signature(out) == "KeyError at kineto.py:120 in _result"
    died = "memory allocation of 2305843009213693952 bytes failed\n==7== ERROR: libFuzzer: deadly signal\n"
    assert fuzz._signature(died) == "abort (a native allocation of ~2^61 bytes failed)"
    assert fuzz._signature("==7== ERROR: libFuzzer: timeout after 20 seconds\n") == "timeout"


# --- regressions: the crashes the fuzzer (or probing beside it) found, now clean -----------

BASE = 1_793_620_800_000_000_000


def _kineto(*events, **meta) -> bytes:
    return json.dumps({"schemaVersion": 1, "baseTimeNanoseconds": BASE, **meta,
                       "traceEvents": list(events)}).encode()


def _kernel(**kw) -> dict:
    e = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.0, "dur": 5.0,
         "args": {"device": 0, "stream": 7, "correlation": 1}}
    return {**e, **kw}


def _nested(depth: int) -> object:
    v: object = 1
    for _ in range(depth):
        v = [v]
    return v


def test_deep_args_on_the_exact_path():
    """orjson writes 255 levels but reads 1024: args 300 deep crashed kineto.read (TypeError)."""
    deep = _nested(300)
    data = _kineto(_kernel(args={"device": 0, "stream": 7, "deep": deep}))
    fuzz.run_one("kineto-exact", data)
    src = fuzz.Source(path=fuzz.scratch("t/trace.json", data), kind="json", named=True)
    r = kineto.read(src, fuzz.load_json(src.path))
    assert json.loads(r.events["args_json"][0]) == {"device": 0, "stream": 7, "deep": deep}


def test_deep_device_properties():
    fuzz.run_one("kineto-exact", _kineto(_kernel(), deviceProperties=[{"name": _nested(400)}]))
    fuzz.run_one("kineto-fast", _kineto(_kernel(), deviceProperties=[{"name": _nested(400)}]))


def test_json_text_too_deep_for_python_is_none():
    assert json_text(_nested(300)) == json.dumps(_nested(300), separators=(",", ":"))
    assert json_text(_nested(sys.getrecursionlimit() + 50)) is None


def _flip(data: bytes, changes: dict[int, int]) -> bytes:
    b = bytearray(data)
    for i, v in changes.items():
        b[i] = v
    return bytes(b)


PQ_DUPLICATE_IDS = REPO / "tests" / "broken" / "pq_duplicate_ids" / "SystemProfileEvents.parquet"


@pytest.mark.parametrize("case", ["footer", "page"])
def test_parquet_decoder_panic_is_an_input_error(case):
    """polars panics on some corrupt tables (PanicException, a BaseException, went through
    ``except Exception``): now the one-line 'not a readable Parquet table' error.

    footer: crash-39848c8a, one byte of tests/broken/pq_duplicate_ids's footer changed
    (``Option::unwrap()`` on None in the column-chunk metadata); page: crash-f7001e51, one byte
    of an uncompressed fixture table changed (an assertion in the row-group decoder).
    """
    if case == "footer":
        data = _flip(PQ_DUPLICATE_IDS.read_bytes(), {3524: 175})
    else:
        base = seeds.explorer_parquet()["made-uncompressed__rmsnorm_compiled__explorer__parquet__"
                                        "SystemProfileEvents.parquet"]
        data = _flip(base, {3573: 37})
    with pytest.raises(InputError, match="SystemProfileEvents.parquet: not a readable Parquet table"):
        fuzz.explorer_parquet_target(data)


def test_any_parquet_panic_is_an_input_error(monkeypatch):
    """Whatever the polars version panics on, a panic while reading is the same InputError."""
    import polars as pl

    from trace_analyzer.readers import explorer_parquet

    def panic(*a, **k):
        raise pl.exceptions.PanicException("called `Option::unwrap()` on a `None` value")

    monkeypatch.setattr(explorer_parquet.pl, "read_parquet_schema", panic)
    with pytest.raises(InputError, match=r"not a readable Parquet table \(PanicException: called"):
        fuzz.explorer_parquet_target(PQ_DUPLICATE_IDS.read_bytes())


T = 1_793_620_800_000_000_000


def _explorer(records) -> dict:
    from trace_analyzer.readers import explorer_json

    path = fuzz.scratch("regress/system_profile.json", json.dumps({"trace_event": records}).encode())
    r = explorer_json.read(fuzz.Source(path=path, kind="json", named=True), fuzz.load_json(path))
    return {row["orig_id"]: row for row in r.events.to_dicts()}


def test_legacy_json_names_and_hosts_of_any_type():
    """A name that is an object or a list crashed the legacy JSON reader (TypeError: unhashable
    in the HW_NAMES lookup): names, hosts and sources that are not text are read as their text,
    like the Kineto reader's names."""
    rows = _explorer([
        {"id": 1, "name": {"a": 1}, "timestamp": T, "duration": 5, "instance_id": 7},
        {"id": 2, "name": [1], "timestamp": T, "trace_event_source": ["x"]},
        {"id": 3, "name": 5, "timestamp": T, "trace_event_source": "neuron_rt"},
        {"id": 4, "name": "nc_exec_running", "timestamp": T, "trace_event_source": 3},
    ])
    assert [rows[i]["name"] for i in (1, 2, 3, 4)] == ["{'a': 1}", "[1]", "5", "nc_exec_running"]
    assert rows[1]["host"] == "7"
    assert [rows[i]["category"] for i in (1, 2, 3, 4)] == ["neuron_rt", "neuron_rt", "neuron_rt", "neuron_hw"]


def test_legacy_json_runtime_group_beyond_int64():
    """``group: nrt-nc-<digits>`` beyond int64 failed the device column (polars
    InvalidOperationError): such a core number is no number, like any other out of range."""
    rows = _explorer([{"id": 1, "name": "nrt_load", "timestamp": T, "group": "nrt-nc-" + "9" * 25},
                      {"id": 2, "name": "nrt_load", "timestamp": T, "group": "nrt-nc-003"}])
    assert rows[1]["device"] is None and rows[2]["device"] == 3
    fuzz.run_one("explorer-json", json.dumps({"trace_events": {"g": [
        {"name": "x", "timestamp": 5, "group": "nrt-nc-" + "9" * 25}]}}).encode())


def _zip(members: dict[str, bytes]) -> bytearray:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    return bytearray(buf.getvalue())


def _set_in_both_headers(b: bytearray, offset: int, value: int) -> bytes:
    """Set a byte of the (only) member's local header and its central directory entry alike."""
    central = b.find(b"PK\x01\x02")
    b[offset] = value          # local file header: flags at 6, method at 8
    b[central + offset + 2] = value  # central directory: the same fields 2 bytes later
    return bytes(b)


def _corrupt_tar_gz() -> bytes:
    """A .tar.gz whose deflate stream turns bad inside its first member's data, past what
    tarfile reads when it opens the archive: a block of the reserved type (zlib.error
    'invalid block type' from the member's read, as in the fuzzer's first archive crash)."""
    n = 16384
    raw = seeds._tar({"run/trace.json": random.Random(0).randbytes(n)}, gz=False)
    deflate = zlib.compressobj(1, zlib.DEFLATED, -15)
    good = deflate.compress(raw[:512 + n // 2]) + deflate.flush(zlib.Z_FULL_FLUSH)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + good + b"\x06" + bytes(64)  # BFINAL 0, BTYPE 11 (reserved)


ARCHIVE_CRASHES = {
    # zlib.error from a corrupt .tar.gz stream (Archive.__init__ reading the members)
    "tar_gz_corrupt_deflate": _corrupt_tar_gz,
    # RuntimeError "password required" from an encrypted zip member (Archive.read)
    "zip_encrypted_member": lambda: _set_in_both_headers(_zip({"r/trace.json": _kineto(_kernel())}), 6, 1),
    # NotImplementedError "That compression method is not supported" (Archive.read)
    "zip_unknown_method": lambda: _set_in_both_headers(_zip({"r/trace.json": _kineto(_kernel())}), 8, 99),
}


@pytest.mark.parametrize("case", sorted(ARCHIVE_CRASHES))
def test_corrupt_or_unsupported_archive_members_are_input_errors(case):
    data = ARCHIVE_CRASHES[case]()
    with pytest.raises(InputError, match="input\\.(zip|tar\\.gz)"):
        fuzz.archive_target(data)


@pytest.mark.filterwarnings("error::UserWarning")  # deduplicate once compared pid == None
def test_parquet_rows_whose_label_columns_are_all_null(tmp_path):
    """crash-2591345f (structure-aware mutation): when every label column (source, name, pid,
    ...) is null in every row, _label's packed key was a literal, one value for the whole table
    (InvalidOperationError: length 1 vs height 2). Now each row is labelled; the load then drops
    them as malformed, counted by reason."""
    import polars as pl

    import trace_analyzer as ta
    from trace_analyzer.readers import explorer_lanes, explorer_parquet

    schema = {"id": pl.Int64, "name": pl.String, "start_ts": pl.Int64, "end_ts": pl.Int64,
              "trace_event_source": pl.String, "process_id": pl.Int64}
    df = pl.DataFrame({"id": [1, 2], "name": [None, None], "start_ts": [10, 20], "end_ts": [15, 25],
                       "trace_event_source": [None, None], "process_id": [None, None]}, schema=schema)
    df.write_parquet(tmp_path / "SystemProfileEvents.parquet")
    cols = explorer_parquet._columns(explorer_parquet._read_table(tmp_path / "SystemProfileEvents.parquet"))
    keys = ["name", "lane_kind", "lane", "category"]
    packed = explorer_lanes.lanes(cols).select(keys)
    assert packed.height == 2 and packed.equals(explorer_lanes.lanes(cols, packed=False).select(keys))
    p = ta.load(tmp_path)
    assert p.events.is_empty() and p.dropped == {"null name": 2, "null lane": 2, "null source": 2}


ABORT = REPO / "tests" / "fuzz_found" / "polars_abort_page_validity.parquet"
ENTRY = "from trace_analyzer.cli import main; main()"


def _info_process(folder: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RUST_BACKTRACE"}
    return subprocess.run([sys.executable, "-c", ENTRY, "info", str(folder), "--no-cache"],
                          capture_output=True, text=True, env=env, timeout=120)


def test_a_parquet_panic_as_a_process_ends_with_the_one_line_error(tmp_path):
    """The footer panic above, through the real command: exit 2, and the last line is
    traceana's (Rust prints its panic message first, which traceana cannot hold back)."""
    (tmp_path / "SystemProfileEvents.parquet").write_bytes(
        _flip(PQ_DUPLICATE_IDS.read_bytes(), {3524: 175}))
    proc = _info_process(tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"traceana: error: {tmp_path / 'SystemProfileEvents.parquet'}: not a readable Parquet "
        "table (PanicException: called `Option::unwrap()` on a `None` value)")


@pytest.mark.skipif(importlib.util.find_spec("trace_analyzer.cli._fault") is None,
                    reason="trace_analyzer/cli/_fault.c is not built (pip install -e . with gcc)")
def test_the_polars_abort_input_ends_with_traceanas_line_and_exit_2(tmp_path):
    """polars aborts the process on this corrupt page; the console script's handler
    (cli/fault.py) ends it with traceana's line naming the run, and exit 2, where it was
    SIGABRT (134 in a shell). Rust's own line comes first."""
    (tmp_path / "SystemProfileEvents.parquet").write_bytes(ABORT.read_bytes())
    proc = _info_process(tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"traceana: error: {tmp_path}: the process was aborted inside native")


@pytest.mark.xfail(strict=True, reason="polars 2.1.0 aborts the process on this corrupt page "
                   "(a ~2^61-byte allocation in decode_page_validity) after printing its own "
                   "line, which traceana cannot hold back. tests/fuzz_found/README.md")
def test_the_polars_abort_input_is_one_clean_error(tmp_path):
    (tmp_path / "SystemProfileEvents.parquet").write_bytes(ABORT.read_bytes())
    proc = _info_process(tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, \
        (proc.returncode, proc.stderr)
