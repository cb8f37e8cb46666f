"""Perfetto protobuf traces through the CLI as real processes: ``info`` and ``gaps`` of a
``.pftrace`` (gzip-compressed and not) answer as for the same trace in Kineto JSON; bad input
(cut short, not a trace, JSON named .pftrace, deflate cut short) and a missing ``perfetto``
extra are one line and exit 2, never a traceback."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import perfetto_traces as pt
import pytest
from conftest import one_line_error

pytest.importorskip("google.protobuf")
pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

ROOT = Path(__file__).resolve().parents[2]
ENTRY = (
    "import sys\n"
    "for m in sys.argv[1].split(','):\n"
    "    if m: sys.modules[m] = None  # importing it now raises ImportError\n"
    "from trace_analyzer.cli import main\n"
    "sys.argv = ['traceana'] + sys.argv[2:]\n"
    "main()\n"
)


def traceana(*args, blocked=()):
    """Run traceana in its own process; return (exit code, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-c", ENTRY, ",".join(blocked), *map(str, args)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    (d / "k").mkdir()
    (d / "k" / "trace.json").write_text(json.dumps(pt.kineto_json()))
    data = pt.pftrace(interned=True, compressed=True)
    (d / "p.pftrace").write_bytes(data)
    (d / "p.pftrace.gz").write_bytes(gzip.compress(data))
    return d


def _gaps(path):
    code, out, err = traceana("gaps", path, "--no-cache", "--format", "json")
    assert code == 0, err
    assert "Traceback" not in err
    run = json.loads(out)["runs"][0]
    return {k: v for k, v in run.items() if k not in ("root", "path", "sources", "files")}


@pytest.mark.parametrize("name", ["p.pftrace", "p.pftrace.gz"])
def test_info_and_gaps_of_a_pftrace(traces, name):
    code, out, err = traceana("info", traces / name, "--no-cache", "--format", "json")
    assert code == 0, err
    run = json.loads(out)["runs"][0]
    (source,) = run["sources"]
    assert source["format"] == "perfetto-protobuf" and source["events"] == pt.SLICES
    assert sorted(p["pid"] for p in run["processes"]) == [100, 200]
    assert run["hardware_lanes"] == 1 and run["links"]["linked_pct"] == 100.0
    assert _gaps(traces / name) == _gaps(traces / "k" / "trace.json")


def _bad(tmp_path):
    good = pt.pftrace()
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    cut = pb.Trace()
    cut.packet.add().compressed_packets = zlib.compress(good)[:200]
    return {
        "cut.pftrace": (good[: len(good) // 2], "cut short after"),
        "noise.pftrace": (bytes(range(256)) * 4, "not a Perfetto protobuf trace"),
        "text.pftrace": (b"hello, this is not a trace\n", "not a Perfetto protobuf trace"),
        "chrome.pftrace": (json.dumps(pt.kineto_json()).encode(), "JSON, not a Perfetto"),
        "empty.pftrace": (b"", "empty file"),
        "deflate.pftrace": (cut.SerializeToString(), "compressed_packets cut short"),
        "cut.pftrace.gz": (gzip.compress(good)[:300], "not a readable gzip file"),
    }


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    for name, (data, words) in _bad(tmp_path).items():
        path = tmp_path / name
        path.write_bytes(data)
        line = one_line_error(*traceana("info", path, "--no-cache"))
        assert str(path) in line and words in line, (name, line)


def test_without_the_extra_a_pftrace_says_what_to_install(traces):
    blocked = ("google.protobuf", "perfetto")
    line = one_line_error(*traceana("gaps", traces / "p.pftrace", "--no-cache", blocked=blocked))
    assert "p.pftrace" in line and "pip install 'traceana[perfetto]'" in line
    code, out, err = traceana("info", traces, "--no-cache", blocked=blocked)
    assert code == 0 and "Traceback" not in err, err  # a folder: the trace.json is read
    assert "traceana[perfetto]" in out
