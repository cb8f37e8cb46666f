"""The reader registry: each format declared once, sniffed in registry order, read by its own.

What a user relies on: a trace is read by the format its top-level keys say, the same one
whichever of several keys it holds; a PyTorch Execution Trace beside a Kineto trace is
recognised and skipped, not an error; a JSON file that is no trace is an error when named,
a note when found in a folder. What a maintainer relies on: a new format is one declaration
plus one line in REGISTRY, and every source kind discovery makes has a reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import X, kineto, write_parquet, write_trace

from trace_analyzer import readers
from trace_analyzer.errors import InputError
from trace_analyzer.inputs.discover import FILE_TYPES, SOURCE_KINDS, Source, discover
from trace_analyzer.readers import FORMATS, REGISTRY, Format, ReadResult, read_source, registry, sniff

BASE = 1_793_620_800_000_000_000


def test_the_formats_are_the_registry_by_name():
    assert list(FORMATS) == [
        "rocprof-v1",
        "kineto-json",
        "chrome-array",
        "explorer-json",
        "explorer-parquet",
        "execution-trace",
        "rocprofiler-sdk",
        "neuron-profile-json",
        "perfetto-protobuf",
    ]
    assert all(FORMATS[f.name] is f for f in REGISTRY)
    assert all(f.description for f in REGISTRY)


def test_every_source_kind_has_a_reader_and_every_reader_a_source_kind():
    kinds = {ft.kind for ft in FILE_TYPES if ft.kind in SOURCE_KINDS}
    assert kinds == set(SOURCE_KINDS)
    assert {f.source_kind for f in REGISTRY} == set(SOURCE_KINDS)


@pytest.mark.parametrize(
    ("doc", "fmt"),
    [
        ({"traceEvents": []}, "kineto-json"),
        ({"trace_event": []}, "explorer-json"),
        ({"trace_events": {"group": []}}, "explorer-json"),
        ({"nodes": [], "schema": "1.0.1"}, "execution-trace"),
        ({"instruction": [], "active_time": [], "summary": [], "metadata": []},
         "neuron-profile-json"),  # `neuron-profile view --output-format json`
        ({"instruction": {}, "active_time": [], "summary": [], "metadata": []}, None),
        ({"instruction": [], "summary": []}, None),
        ({"traceEvents": [], "trace_event": []}, "kineto-json"),  # registry order
        ({"nodes": []}, None),
        ({}, None),
        ([{"traceEvents": []}], None),  # not an object
        ("traceEvents", None),
    ],
)
def test_sniff(doc, fmt):
    assert sniff(doc) == fmt


def test_an_execution_trace_is_recognised_and_skipped(tmp_path):
    path = write_trace(tmp_path / "run_et.json.gz", {"schema": "1.0.1", "nodes": [{"id": 1}]})
    result = read_source(Source(path=path, kind="json", named=True))
    assert result is not None
    assert (result.format, result.read, result.count) == ("execution-trace", False, 0)
    assert result.notes == ["a PyTorch execution trace (Chakra), not a timing trace: not read"]


def test_json_that_is_no_trace(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(InputError, match="a JSON object without traceEvents"):
        read_source(Source(path=path, kind="json", named=True))
    found = read_source(Source(path=path, kind="json"))
    assert found is not None and (found.format, found.read) == ("json", False)


def test_a_streaming_reader_comes_first_and_the_parse_is_the_fallback(tmp_path, monkeypatch):
    path = write_trace(
        tmp_path / "trace.json",
        kineto([X("cpu_op", "aten::mm", 10, 5)], baseTimeNanoseconds=BASE),
    )
    calls: list[str] = []

    def declining(
        src: Source, keep_args: bool = False, *, max_bytes: int | None = None, in_order: bool = False
    ) -> ReadResult | None:
        calls.append("path")
        return None

    def exact(src: Source, doc: dict[str, Any]) -> ReadResult:
        calls.append("doc")
        return readers.kineto.read(src, doc)

    fmt = Format(
        "kineto-json", "test", "json", sniff=readers.kineto.sniff, read=exact, read_path=declining
    )
    others = tuple(f for f in REGISTRY if f.name != "kineto-json")
    monkeypatch.setattr(registry, "REGISTRY", (fmt, *others))
    result = read_source(Source(path=path, kind="json", named=True))
    assert calls == ["path", "doc"]
    assert result is not None and result.events["name"].to_list() == ["aten::mm"]


def test_a_new_format_is_one_declaration(tmp_path, monkeypatch):
    def read(src: Source, doc: dict[str, Any]) -> ReadResult:
        return ReadResult.skipped(src, "my-format", f"{len(doc['myEvents'])} events")

    mine = Format(
        "my-format", "a format of our own", "json", sniff=lambda d: "myEvents" in d, read=read
    )
    monkeypatch.setattr(registry, "REGISTRY", (*REGISTRY, mine))
    path = write_trace(tmp_path / "mine.json", {"myEvents": [1, 2, 3]})
    (run,) = discover(path)
    result = read_source(run.sources[0])
    assert result is not None and (result.format, result.notes) == ("my-format", ["3 events"])
    assert sniff({"myEvents": []}) == "my-format"


def _read(src: Source, doc: dict[str, Any]) -> ReadResult:
    return ReadResult.skipped(src, "x", "x")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"source_kind": "nsys-sqlite", "sniff": lambda d: True, "read": _read},  # no such kind
        {"source_kind": "json", "sniff": lambda d: True},  # sniffed, then read by nothing
        {"source_kind": "json", "read": _read},  # read, but never sniffed
        {"source_kind": "json"},  # no reader at all
    ],
)
def test_a_format_that_cannot_be_read_is_refused_when_declared(kwargs):
    with pytest.raises(ValueError):
        Format("x", "x", **kwargs)


def test_a_folder_of_tables_is_read_by_its_path_reader(tmp_path: Path):
    folder = tmp_path / "export"
    write_parquet(
        folder / "SystemProfileEvents.parquet",
        [
            {
                "id": 1,
                "name": "nc_exec_running",
                "start_ts": BASE,
                "end_ts": BASE + 10,
                "trace_event_source": "neuron_hw",
                "process_id": 7,
            }
        ],
    )
    (run,) = discover(tmp_path)
    (src,) = run.sources
    assert src.kind == "explorer-parquet" and src.path == folder
    result = read_source(src)
    assert result is not None and (result.format, result.count) == ("explorer-parquet", 1)
