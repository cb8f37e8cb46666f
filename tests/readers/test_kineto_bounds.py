"""Kineto traces that are hostile or unusual in shape (issue 18): what a user relies on.

- A ``.json.gz`` of padding (whitespace, no record boundary) streams in bounded memory and
  time; a single record longer than ``kineto_bytes.MAX_RECORD`` is one error line naming
  its byte offset.
- A record holding a key twice reads the same on the streaming and the exact path: JSON's
  last value wins.
- B/E duration events are read as the complete events they describe, on both paths; those
  left unmatched are counted by reason.
- Running out of memory while parsing is never reported as "not valid JSON".

Memory and time are measured on real processes (``os.wait4`` gives one child's rusage).
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import PEAK_ENTRY, X, kineto, one_line_error, peak_mib, run_cli, write_trace

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.discover import discover
from trace_analyzer.readers import kineto as kineto_reader
from trace_analyzer.readers import kineto_bytes, read_source
from trace_analyzer.readers.common import load_json

ENTRY = PEAK_ENTRY
MIB = 1 << 20
BASE = 1_793_620_800_000_000_000


def source(path: Path):
    (run,) = discover(path)
    (src,) = run.sources
    return src


def both_paths(path: Path, keep_args: bool = False):
    """Return the exact path's result and the streaming path's (which must take the file)."""
    src = source(path)
    exact = kineto_reader.read(src, load_json(src.path))
    fast = kineto_reader.read_fast(src, keep_args)
    assert fast is not None, "the streaming path declined the file"
    return exact, fast


def gz_members(path: Path, head: bytes, filler: bytes, mib: int, tail: bytes) -> int:
    """Write ``head``, ``mib`` MiB of ``filler`` and ``tail`` as one gzip file (a member per
    part: one MiB compressed once, written ``mib`` times); return its inflated size."""
    chunk = gzip.compress(filler * (MIB // len(filler)), compresslevel=9)
    with path.open("wb") as f:
        f.write(gzip.compress(head))
        for _ in range(mib):
            f.write(chunk)
        f.write(gzip.compress(tail))
    return len(head) + mib * MIB + len(tail)


def run_measured(*args: str, limit_as: int | None = None, cpu_s: int = 120):
    """Run ``traceana ARGS`` as a real process; return its exit code, stdout, stderr, and
    its own peak RSS (MiB) and CPU seconds. ``limit_as``: its address space, in bytes, past
    what it holds once traceana is imported (RLIMIT_AS, set by the process itself)."""
    code = ENTRY
    if limit_as is not None:
        code = (
            "import os, resource, polars as pl; from trace_analyzer.cli import main; "
            "pl.DataFrame({'a': [1]}).select(pl.col('a') + 1); "
            "vm = int(open('/proc/self/statm').read().split()[0]) * os.sysconf('SC_PAGE_SIZE'); "
            f"resource.setrlimit(resource.RLIMIT_AS, (vm + {limit_as}, resource.RLIM_INFINITY)); "
            + ENTRY
        )

    def bounded() -> None:  # a hang or a quadratic scan ends at cpu_s rather than never
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))

    with open(os.devnull, "rb") as stdin, _temp() as out, _temp() as err:
        with tempfile.NamedTemporaryFile("r") as peak:
            p = subprocess.Popen(
                [sys.executable, "-c", code, *args],
                stdin=stdin,
                stdout=out,
                stderr=err,
                preexec_fn=bounded,
                env={**os.environ, "PEAK_FILE": peak.name},
            )
            _, status, ru = os.wait4(p.pid, 0)  # its CPU time; its memory from its own status
            p.returncode = os.waitstatus_to_exitcode(status)
            own = peak.read()
        out.seek(0), err.seek(0)
        text = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    rss = peak_mib(own) if own else ru.ru_maxrss // 1024  # killed before its atexit: rusage
    use = {"rss_mib": rss, "cpu_s": ru.ru_utime + ru.ru_stime}
    return p.returncode, *text, use


def _temp():
    return tempfile.TemporaryFile()


# --- padding and one enormous record -------------------------------------------------------

HEAD = b'{"baseTimeNanoseconds": 1793620800000000000, "traceEvents": ['
ONE = b'{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 2}'


def test_a_gzip_of_whitespace_streams_in_bounded_memory_and_time(tmp_path):
    """192 MiB of blanks inside the array (a 200 KB file): read at the inflater's pace, in
    memory that does not grow with the padding (before: the padding, then the whole text,
    was held, and cut again each block)."""
    path = tmp_path / "padded.json.gz"
    inflated = gz_members(path, HEAD, b" \n\t", 192, ONE + b"]}")
    assert path.stat().st_size < inflated // 500
    code, out, err, use = run_measured("info", str(path), "--no-cache", "--format", "json")
    assert code == 0, err
    (source,) = json.loads(out)["runs"][0]["sources"]
    assert source["events"] == 1
    assert use["rss_mib"] < 250, use  # the interpreter, polars and a few 8 MiB blocks
    assert use["cpu_s"] < 8, use


def test_padding_before_the_array_and_between_records_streams(tmp_path, monkeypatch):
    """Blanks longer than a block before ``traceEvents`` and between two records: the
    streaming path takes the file, and reads what the exact path reads."""
    monkeypatch.setattr(kineto_bytes, "BLOCK", 4096)
    pad = b" " * 10_000
    data = b"{" + pad + HEAD[1:] + ONE + b"," + pad + ONE.replace(b'"ts": 5', b'"ts": 9') + b"]}"
    path = tmp_path / "t.json"
    path.write_bytes(data)
    exact, fast = both_paths(path)
    assert fast.events.drop("args_json").equals(exact.events.drop("args_json"))
    assert fast.events["start_ns"].to_list() == [BASE + 5000, BASE + 9000]


def test_a_record_longer_than_the_limit_is_one_line_naming_its_offset(tmp_path):
    """A 65 MiB name (past MAX_RECORD, 64 MiB) after one good record: exit 2, one line with
    the offset where that record starts in the inflated text."""
    assert kineto_bytes.MAX_RECORD == 64 * MIB  # the limit docs/formats.md states
    path = tmp_path / "huge.json.gz"
    head = HEAD + ONE + b", " + b'{"ph": "X", "name": "'
    gz_members(path, head, b"a", 65, b'"}]}')
    code, out, err, use = run_measured("gaps", str(path), "--no-cache")
    line = one_line_error(code, out, err)
    offset = len(HEAD + ONE + b", ")
    assert line == (
        f"traceana: error: {path}: a record of traceEvents, at byte {offset:,} (decompressed), "
        f"is longer than {64 * MIB:,} bytes, the most traceana reads in one record"
    )
    assert use["rss_mib"] < 700, use


@pytest.mark.parametrize("crlf", [False, True])
def test_the_offset_is_the_records_in_the_file_as_written(tmp_path, monkeypatch, crlf):
    """With small limits: blanks and line ends before the long record do not move the
    offset named (it is where the record's ``{`` is in the file)."""
    monkeypatch.setattr(kineto_bytes, "BLOCK", 64)
    monkeypatch.setattr(kineto_bytes, "MAX_RECORD", 1000)
    nl = b"\r\n" if crlf else b"\n"
    long = b'{"ph": "X", "name": "' + b"x" * 2000 + b'"}'
    data = HEAD + nl + b" " * 300 + ONE + b"," + nl + b" " * 500 + long + b"]}"
    path = tmp_path / "t.json"
    path.write_bytes(data)
    with pytest.raises(InputError, match=f"at byte {data.index(long):,} "):
        kineto_reader.read_fast(source(path))


def test_a_long_string_of_blanks_is_not_cut_to_one(tmp_path, monkeypatch):
    """Blanks inside a string are text, not padding: kept whole (under the limit)."""
    monkeypatch.setattr(kineto_bytes, "BLOCK", 256)
    name = "a" + " " * 700 + "b"
    path = write_trace(
        tmp_path / "t.json", kineto([X("cpu_op", name, 1, 1)], baseTimeNanoseconds=1)
    )
    exact, fast = both_paths(path)
    assert exact.events["name"].to_list() == fast.events["name"].to_list() == [name]


# --- a key twice in one record ------------------------------------------------------------


def test_a_key_twice_reads_its_last_value_on_both_paths(tmp_path):
    """``dur``, ``ts``, ``name`` and an arg twice: JSON's last value, whichever path reads."""
    dup = (
        b'{"ph": "X", "cat": "cpu_op", "name": "first", "pid": 1, "tid": 1, "ts": 5, "dur": 2,'
        b' "dur": 7, "ts": 6, "name": "last", "args": {"External id": 1, "External id": 9}}'
    )
    data = HEAD + ONE.replace(b'"ts": 5', b'"ts": 1') + b",\n  " + dup + b"]}"
    path = tmp_path / "t.json"
    path.write_bytes(data)
    for keep_args in (False, True):
        exact, fast = both_paths(path, keep_args)
        for got in (exact, fast, read_source(source(path), keep_args)):
            row = got.events.filter(got.events["start_ns"] == BASE + 6000).row(0, named=True)
            assert (row["name"], row["duration_ns"], row["external_id"]) == ("last", 7000, 9)
        assert fast.events.drop("args_json").equals(exact.events.drop("args_json"))
        if keep_args:
            args = [json.loads(a) for a in fast.events["args_json"].drop_nulls()]
            assert args == [{"External id": 9}]


# --- B/E duration events ------------------------------------------------------------------


def span_events(pairs: list[tuple[str, str, float, float, int]]) -> list[dict]:
    """B and E records for each (cat, name, ts, dur, tid), nested as given, in time order."""
    out = []
    for cat, name, ts, dur, tid in pairs:
        out.append({"ph": "B", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts})
        out.append({"ph": "E", "pid": 1, "tid": tid, "ts": ts + dur})
    return sorted(out, key=lambda e: (e["ts"], e["ph"] == "B"))


SPANS = [
    ("cpu_op", "aten::mm", 10.0, 20.0, 1),
    ("cpu_op", "aten::addmm", 12.0, 5.0, 1),  # nested in aten::mm: closed first
    ("kernel", "gemm", 15.0, 4.0, 7),
    ("kernel", "gemm", 30.0, 6.0, 7),
]


def test_b_and_e_pairs_read_as_the_complete_events_they_describe(tmp_path):
    """A trace made only of B/E pairs reads like the same trace written with X events."""
    be = write_trace(
        tmp_path / "be" / "t.json", kineto(span_events(SPANS), baseTimeNanoseconds=BASE)
    )
    xs = [X(c, n, ts, dur, pid=1, tid=tid) for c, n, ts, dur, tid in SPANS]
    ref = kineto_reader.read(
        source(write_trace(tmp_path / "x" / "t.json", kineto(xs))),
        kineto(xs) | {"baseTimeNanoseconds": BASE},
    )
    want = ref.events.drop("file", "args_json").sort("start_ns", "name")
    for got in both_paths(be):
        assert got.events.drop("file", "args_json").sort("start_ns", "name").equals(want)
        assert not any("unmatched" in n for n in got.notes)
    code, out, err = run_cli("gaps", str(be), "--no-cache", "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["summary"]["busy_ns"] == (4 + 6) * 1000, run["summary"]


def test_unmatched_b_and_e_are_dropped_and_counted(tmp_path):
    """An E with nothing open and a B never closed: events lost, counted by reason (warned
    with the malformed events dropped: issue 37); the pairs between them still read."""
    events = [
        {"ph": "E", "pid": 1, "tid": 1, "ts": 1},
        *span_events(SPANS[:2]),
        {"ph": "B", "cat": "cpu_op", "name": "open", "pid": 1, "tid": 1, "ts": 50},
    ]
    path = write_trace(tmp_path / "t.json", kineto(events, baseTimeNanoseconds=BASE))
    for got in both_paths(path):
        assert sorted(got.events["name"].to_list()) == ["aten::addmm", "aten::mm"]
        assert got.dropped == {
            "a begin (B) record and no end (E)": 1,
            "an end (E) record and no begin (B)": 1,
        }, got.dropped
        assert not any("unmatched" in n for n in got.notes), got.notes
    code, out, err = run_cli("gaps", str(path), "--no-cache")
    assert code == 0, err
    assert (
        "malformed events dropped: 1 with a begin (B) record and no end (E), 1 with an end (E) "
        "record and no begin (B)"
    ) in out, out


# --- out of memory ------------------------------------------------------------------------


def test_out_of_memory_while_parsing_is_not_called_invalid_json(tmp_path):
    """A 64 MB trace the exact path parses (its traceEvents come after a long key), under
    address-space limits where orjson's buffer does not fit: never "not valid JSON"."""
    rec = b'{"i": 1, "name": "xxxxxxxxxxxxxxxxxxxx"},'
    path = tmp_path / "t.json"
    path.write_bytes(
        b'{"deviceProperties": [' + rec * 1_600_000 + b"{}], " + HEAD[1:] + ONE + b"]}"
    )
    said = []
    for mib in (200, 300, 400):
        code, out, err, _ = run_measured("info", str(path), "--no-cache", limit_as=mib * MIB)
        assert "not valid JSON" not in err, (mib, err)
        said.append((code, err))
    assert any(code == 2 and "out of memory" in err for code, err in said), said
