"""JSON output written as bytes, in pieces, and text reports that make only the rows they
show (issue 19).

- The JSON a command writes to standard output and to ``-o`` is the same bytes, valid JSON
  with every name exactly as the trace wrote it, across the slices a long table is written
  in (some names hold characters written as ``\\u`` escapes, others plain non-ASCII text).
- A large JSON document is never held whole: writing it raises the process's peak memory by
  a small part of its size (it held about three copies of it: polars' text, orjson's bytes
  and the escaped text).
- ``-o`` replaces the file in one step: a write that fails half-way (a full disk, here a file
  size limit) is one error line and leaves the file as it was, not half a document.
- A Markdown chain report lists ten executions of thousands without making a dict of every
  one.

Expected values come from the traces built here: ``n`` kernels 40 µs long, 100 µs apart on one
stream, so ``n - 1`` gaps of 60 µs, each before the kernel of the op ``OPS[i % len(OPS)]``.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import polars as pl
import pytest
from conftest import PEAK_ENTRY, X, kineto, write_trace

import trace_analyzer as ta
from trace_analyzer.analyses.results import RunResults
from trace_analyzer.render import RENDERERS, View
from trace_analyzer.render import json as json_render

# Names with what JSON output writes as \u escapes (C1, DEL, bidirectional controls, line
# separators), non-ASCII text it keeps as it is, and plain ASCII.
OPS = [
    "aten::mm",
    "aten::µs≤",
    "c1 \x85 \x9b31m del \x7f",
    "bidi \u202eevil\u202c \u2066iso\u2069 \u061c \u200e\u200f",
    "lines \u2028 \u2029",
    "名前 ∑ 🙂",
]
ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"
# The characters no JSON output holds raw (docs/output.md): written as \u escapes.
RAW_UNSAFE = [chr(c) for c in [*range(0x7F, 0xA0), 0x61C, 0x200E, 0x200F,
              *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029]]  # fmt: skip


def trace(path: Path, n: int, names: list[str]) -> Path:
    """Write a trace of ``n`` ops, each launching one kernel (``"k " + op``)."""
    events = []
    for i in range(n):
        t, op = 1000 + 100 * i, names[i % len(names)]
        events.append(X("cpu_op", op, t, 20, **{"External id": i + 1}))
        events.append(X("cuda_runtime", "cudaLaunchKernel", t + 5, 5, correlation=i + 1))
        events.append(X("kernel", "k " + op, t + 30, 40, pid=0, tid=7, device=0, stream=7,
                        correlation=i + 1))  # fmt: skip
    return write_trace(path, kineto(events))


def traceana(*args: object, **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", ENTRY, *map(str, args)], capture_output=True,
                          timeout=60, **kw)  # type: ignore[call-overload]  # fmt: skip


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory) -> Path:
    """More gaps than one slice of the JSON renderer holds, so that the gaps list is written
    in several."""
    n = 2 * json_render.CHUNK_ROWS + 100
    return trace(tmp_path_factory.mktemp("long") / "trace.json", n, OPS)


def test_stdout_and_the_file_are_the_same_json_with_every_name_exact(long_trace, tmp_path):
    n = 2 * json_render.CHUNK_ROWS + 100
    out = tmp_path / "gaps.json"
    printed = traceana("gaps", long_trace, "--no-cache", "--format", "json")
    written = traceana("gaps", long_trace, "--no-cache", "-o", out)
    assert printed.returncode == 0 and written.returncode == 0, (printed.stderr, written.stderr)
    assert printed.stdout == out.read_bytes()

    text = printed.stdout.decode()  # UTF-8, whole
    assert not [hex(ord(c)) for c in RAW_UNSAFE if c in text]
    doc = json.loads(text)
    assert orjson.loads(printed.stdout) == doc
    gaps = doc["runs"][0]["gaps"]
    assert len(gaps) == len(doc["runs"][0]["device_gaps"]) == n - 1
    assert [g["duration_ns"] for g in gaps] == [60_000] * (n - 1)
    # each gap ends at kernel i + 1, launched by op i + 1: names exactly as written
    assert [g["next_op"] for g in gaps] == [OPS[(i + 1) % len(OPS)] for i in range(n - 1)]
    assert [g["prev_name"] for g in gaps] == ["k " + OPS[i % len(OPS)] for i in range(n - 1)]


@pytest.mark.parametrize("names", [OPS, ["aten::mm", "aten::add"]], ids=["escaped", "ascii"])
def test_the_pieces_of_a_long_table_join_to_the_document(tmp_path, names):
    """Whether or not a table holds a character to escape, the document in pieces is the
    document written at once: ``json.dumps`` of the parsed pieces gives back what
    ``json.dumps`` of the result's own data gives, and the pieces are many and small."""
    rows = 3 * json_render.CHUNK_ROWS
    frame = pl.DataFrame({"name": [names[i % len(names)] for i in range(rows)],
                          "cat": pl.Series([names[i % 2] for i in range(rows)],
                                           dtype=pl.Categorical),
                          "ns": list(range(rows))})  # fmt: skip
    pieces = [bytes(p) for p in json_render.table_pieces(frame)]
    assert len(pieces) > 3 and max(map(len, pieces)) < sum(map(len, pieces)) / 2
    whole = b"".join(pieces)
    assert json.loads(whole) == frame.to_dicts()
    assert not [hex(ord(c)) for c in RAW_UNSAFE if c in whole.decode()]


def test_a_large_json_output_is_written_without_holding_it_whole(tmp_path):
    """The peak memory while the output is rendered and written rises by less than a
    quarter of the output's size (the peak is reset as the output starts: what is measured
    is the output's own; the tables whose evidence is written when read are made first)."""
    path = trace(tmp_path / "big" / "trace.json", 24_000, ["aten::mm", "aten::µs≤"])
    out = tmp_path / "gaps.json"
    measured = tmp_path / "peak.txt"
    entry = (
        "import os, trace_analyzer.cli.common as c\n"
        "real = c.emit\n"
        "def emit(*a, **k):\n"
        "    [(r.gaps, r.device_gaps) for r in a[0].runs]\n"
        "    open('/proc/self/clear_refs', 'w').write('5')\n"
        "    before = open('/proc/self/status').read()\n"
        "    real(*a, **k)\n"
        "    after = open('/proc/self/status').read()\n"
        f"    open({str(measured)!r}, 'w').write(before + '@@' + after)\n"
        "c.emit = emit\n"
        "import trace_analyzer.questions.gaps.command as an\n"
        "an.emit = emit\n" + PEAK_ENTRY.replace("atexit.register", "(lambda f: f)")
    )
    proc = subprocess.run([sys.executable, "-c", entry, "gaps", path, "--no-cache", "-o", out],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PEAK_FILE": os.devnull})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    before, after = measured.read_text().split("@@")

    def kib(status: str, key: str) -> int:
        line = next(x for x in status.splitlines() if x.startswith(key + ":"))
        return int(line.split()[1])

    size_kib = out.stat().st_size // 1024
    assert size_kib > 20_000  # tens of MB: much more than the process's noise
    rise = kib(after, "VmHWM") - kib(before, "VmRSS")
    assert rise < size_kib / 4, (rise, size_kib)


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="no file size limit here")
def test_a_write_that_fails_half_way_leaves_the_old_file(long_trace, tmp_path):
    out = tmp_path / "gaps.json"
    out.write_text('{"before": true}\n')
    limit = 1 << 20  # 1 MiB: the document is several

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = traceana("gaps", long_trace, "--no-cache", "-o", out, preexec_fn=small_files)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1, err
    assert err.startswith(f"traceana: error: {out}: cannot write: "), err
    assert out.read_text() == '{"before": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["gaps.json"]  # no temporary left


def test_the_written_file_keeps_its_mode_and_a_link_is_written_through(long_trace, tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    proc = traceana("gaps", long_trace, "--no-cache", "-o", link)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and json.loads(real.read_bytes())["schema_version"] == 1
    assert real.stat().st_mode & 0o777 == 0o640


def test_a_markdown_chain_makes_dicts_of_the_rows_it_shows_only(long_trace, monkeypatch):
    result = RunResults(str(long_trace), (ta.chains(ta.load(long_trace)),))
    executions = result.runs[0].table.height
    assert executions == 2 * json_render.CHUNK_ROWS + 100
    made: list[int] = []
    real = pl.DataFrame.to_dicts

    def to_dicts(self: pl.DataFrame) -> list[dict[str, object]]:
        made.append(self.height)
        return real(self)

    monkeypatch.setattr(pl.DataFrame, "to_dicts", to_dicts)
    text = RENDERERS["markdown"](result, options=View(top=10))
    assert f"{executions - 10:,} more" in text or f"{executions - 10} more" in text, text
    assert max(made, default=0) <= 10, made
