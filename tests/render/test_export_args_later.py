"""`traceana export` holds no args of a plain Kineto trace: the compiled scanner says where each
event's args object lies in the file (``args_at``), and the export reads them as it writes
(``load(args=LATER)``, loading/args_at.py). What the reader gives in memory (``args=True``: the
polars path reads them again) is the reference, and the spans are checked on the raw bytes.
"""

from __future__ import annotations

import gzip
import shutil
from collections import Counter
from pathlib import Path

import orjson
import polars as pl
import pytest
from conftest import X, kineto, one_line_error, run_cli, write_trace

import trace_analyzer as ta
from trace_analyzer.errors import InputError
from trace_analyzer.loading.args_at import LEN_MASK, SPAN_LEN_BITS
from trace_analyzer.model.schema import LATER
from trace_analyzer.questions.export import perfetto
from trace_analyzer.readers.kineto_native import native_with_args

pytestmark = pytest.mark.skipif(
    not native_with_args(), reason="the compiled scanner is not built: args are held, as before"
)

REAL3 = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "real3"
PLAIN = [
    "dtu_mlops/cpu_minimal/trace.json",
    "particle_transformer/a100_fwd_bs128/single_epoch_forward_pass_batch_size_128.json",
]


def document(path: Path, args: object) -> list[dict]:
    """The exported records of the run at ``path`` read with ``args``."""
    profile = ta.load(path, args=args, cache=False)
    return perfetto.build(profile, ta.gaps(profile), source="run")["traceEvents"]


def spans(path: Path) -> list[bytes]:
    """The bytes of every event's args where ``load(args=LATER)`` says they lie."""
    raw = path.read_bytes()
    at = ta.load(path, args=LATER, cache=False).events["args_at"].drop_nulls().to_list()
    return [raw[(a >> SPAN_LEN_BITS) : (a >> SPAN_LEN_BITS) + (a & LEN_MASK)] for a in at]


def records_args(path: Path) -> Counter[bytes]:
    """Every X record's args in the file, parsed whole by orjson, as canonical JSON."""
    doc = orjson.loads(path.read_bytes().removeprefix(b"\xef\xbb\xbf"))
    return Counter(
        orjson.dumps(r["args"], option=orjson.OPT_SORT_KEYS)
        for r in doc["traceEvents"]
        if r.get("ph") == "X" and isinstance(r.get("args"), dict)
    )


def check(path: Path) -> None:
    """The spans are args objects of the file's records, and the export made from them is the
    one made with the args held."""
    found = spans(path)
    assert found, "no event's args were placed"
    canonical = Counter(orjson.dumps(orjson.loads(b), option=orjson.OPT_SORT_KEYS) for b in found)
    assert not canonical - records_args(path), "a span is no record's args"
    later = ta.load(path, args=LATER, cache=False).events
    assert later["args_json"].null_count() == later.height  # no args held
    assert document(path, LATER) == document(path, True)


@pytest.mark.parametrize("name", PLAIN)
def test_real_traces_export_the_args_they_hold(name):
    path = REAL3 / name
    if not path.is_file():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    check(path)


def test_a_corpus_cuda_trace_inflated(corpus, tmp_path):
    gz = next((corpus / "critical_path" / "simple_add").glob("*.json.gz"))
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    check(plain)


def events(n: int) -> list[dict]:
    return [
        X("cpu_op", f"op{i % 7}", 1000.0 + 10 * i, 5.0, **{"External id": i, "Input Dims": [[i]]})
        for i in range(n)
    ] + [X("kernel", "k", 1002.0, 1.0, pid=0, tid=7, device=0, stream=7, correlation=1)]


def test_a_byte_order_mark_and_records_cut_by_blocks(tmp_path, monkeypatch):
    import trace_analyzer.readers.kineto_bytes as kb

    monkeypatch.setattr(kb, "BLOCK", 4096)  # many blocks: records cut at their ends
    path = tmp_path / "trace.json"
    path.write_bytes(
        b"\xef\xbb\xbf" + orjson.dumps(kineto(events(2000)), option=orjson.OPT_INDENT_2)
    )
    check(path)


def test_what_cannot_be_placed_is_held(tmp_path):
    """A gzip trace (its offsets are in the inflated text) and one whose head is longer than a
    block of whitespace (cut as it is read) keep their args' text, as ``args=True`` does."""
    doc = kineto(events(50))
    gz = write_trace(tmp_path / "a" / "trace.json.gz", doc)
    padded = tmp_path / "b" / "trace.json"
    padded.parent.mkdir()
    padded.write_bytes(b"{" + b" " * (9 << 20) + orjson.dumps(doc)[1:])
    for path in (gz, padded):
        later = ta.load(path, args=LATER, cache=False).events
        assert later["args_at"].null_count() == later.height
        assert later["args_json"].drop_nulls().len() == 51  # every event has args
        assert document(path, LATER) == document(path, True)


def test_a_trace_changed_after_it_was_read(tmp_path):
    path = write_trace(tmp_path / "trace.json", kineto(events(50)))
    profile = ta.load(path, args=LATER, cache=False)
    doc = perfetto.document(profile, ta.gaps(profile), source="run", critical=None)
    with path.open("ab") as f:
        f.write(b"\n")
    with pytest.raises(InputError, match="changed since it was read"):
        perfetto.write(doc, tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_the_command_says_so_in_one_line(tmp_path, monkeypatch):
    """`traceana export` of a trace rewritten while it runs: one line naming it, exit 2."""
    path = write_trace(tmp_path / "run" / "trace.json", kineto(events(50)))
    real = perfetto.write

    def rewritten(doc, out):
        shutil.copy(path, tmp_path / "copy.json")
        path.write_bytes(b" " + (tmp_path / "copy.json").read_bytes())
        real(doc, out)

    monkeypatch.setattr(perfetto, "write", rewritten)
    line = one_line_error(*run_cli("export", path, "--no-cache", "-o", tmp_path / "out.json"))
    assert str(path) in line
    assert "changed since it was read" in line


def test_the_events_table_says_where_the_args_lie():
    from trace_analyzer.model.schema import EVENTS_SCHEMA

    assert EVENTS_SCHEMA["args_at"] == pl.Int64
