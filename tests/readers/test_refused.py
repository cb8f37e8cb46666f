"""Profiles of another kind are refused with a line that says what the file is (issue 15):
rocprofiler-sdk JSON, rocprof v1's JSON trace and PyTorch execution traces, when nothing else
under the path is a trace. Beside a Kineto trace, such a file is a note, not an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import X, kineto, one_line_error, run_cli, write_trace

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "real"
ET = {"schema": "1.0.1", "pid": 1, "nodes": [{"id": 1, "name": "[pytorch|profiler|execution_trace|thread]"}]}
ROCPROF = {"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}}]}
# rocprof v1 --hip-trace's results.json as it writes it (real3/rocm_blogs): every value a string,
# the bounds in ns in args, no cat
V1 = {"traceEvents": [{}, {"args": {"name": "GPU0"}, "ph": "M", "pid": 6, "name": "process_name"},
                      {"ph": "X", "name": "CopyHostToDevice", "pid": "1", "tid": "1",
                       "ts": "773902396463", "dur": "8",
                       "args": {"BeginNs": "773902396463126", "EndNs": "773902396471606"}}]}
V1_SAYS = "a rocprof v1 HIP trace (rocprofiler JSON), not a PyTorch profiler trace"


@pytest.mark.parametrize("doc,what", [(ET, "a PyTorch execution trace (Chakra), not a timing trace"),
                                      (ROCPROF, "rocprofiler-sdk JSON"), (V1, V1_SAYS)])
@pytest.mark.parametrize("named", ["file", "folder"])
@pytest.mark.parametrize("command", ["info", "gaps", "ops"])
def test_alone_it_is_exit_2_naming_the_kind(tmp_path, doc, what, named, command):
    path = write_trace(tmp_path / "run" / "profile.json", doc)
    line = one_line_error(*run_cli(command, path if named == "file" else path.parent, "--no-cache"))
    assert line.startswith(f"traceana: error: {path}: {what}"), line


@pytest.mark.parametrize("doc,fmt", [(ET, "execution-trace"), (V1, "rocprof-v1")])
def test_beside_a_trace_it_is_a_note(tmp_path, doc, fmt):
    folder = tmp_path / "run"
    write_trace(folder / "x_et.json", doc)
    write_trace(folder / "trace.json", kineto([X("cpu_op", "aten::add", 1, 2)]))
    code, out, err = run_cli("info", folder, "--format", "json", "--no-cache")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert {(s["format"], s["read"]) for s in run["sources"]} == {(fmt, False), ("kineto-json", True)}


@pytest.mark.parametrize("change", [{"ts": 773902396463}, {"args": {"BeginNs": 1, "EndNs": 2}}])
def test_a_kineto_trace_is_not_taken_for_rocprof_v1(tmp_path, change):
    # the signature needs ts and both bounds written as strings of digits
    doc = json.loads(json.dumps(V1))
    doc["traceEvents"][2].update(change)
    path = write_trace(tmp_path / "trace.json", doc)
    code, out, err = run_cli("info", path, "--format", "json", "--no-cache")
    (run,) = json.loads(out)["runs"]
    assert [s["format"] for s in run["sources"]] == ["kineto-json"], err


@pytest.mark.parametrize("folder,what", [("tracelens/rocprof", "rocprofiler-sdk JSON"),
                                         ("param/et", "a PyTorch execution trace")])
def test_the_corpus_inputs_to_refuse(folder, what):
    if not (REAL / folder).is_dir():
        pytest.skip(f"{REAL / folder} is absent: the shared corpus is not checked out")
    line = one_line_error(*run_cli("gaps", REAL / folder, "--no-cache"))
    assert what in line, line
