"""Perfetto protobuf traces (readers/perfetto.py): one trace written as Kineto JSON and as a
Perfetto trace (tests/readers/perfetto_traces.py) reads to the same events and links, in
every encoding (inline or interned names, Perfetto's compressed_packets, gzip, a clock
snapshot), and Perfetto's own trace processor counts the same slices and flows."""

from __future__ import annotations

import gzip
import json

import perfetto_traces as pt
import polars as pl
import pytest

import trace_analyzer as ta
from trace_analyzer.inputs.discover import file_type

pytest.importorskip("google.protobuf")
pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

# the columns a Kineto trace's reading and a Perfetto trace's must agree on
COLUMNS = [
    "event_id", "name", "category", "lane_kind", "lane", "source", "start_ns", "end_ns",
    "duration_ns", "pid", "tid", "device", "stream", "correlation", "external_id", "flow_ids",
    "step",
]  # fmt: skip
VARIANTS = {
    "inline": {},
    "interned": {"interned": True},
    "compressed_packets": {"interned": True, "compressed": True},
    "clock_snapshot": {"snapshot": True},
    "everything": {"interned": True, "compressed": True, "snapshot": True},
}


def write(tmp_path, name, variant="inline", gz=False):
    data = pt.pftrace(**VARIANTS[variant])
    path = tmp_path / (name + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.fixture(scope="module")
def kineto(tmp_path_factory):
    path = tmp_path_factory.mktemp("kineto") / "trace.json"
    path.write_text(json.dumps(pt.kineto_json()))
    return ta.load(path, cache=False)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_pftrace_reads_as_the_same_trace_in_kineto_json(tmp_path, kineto, variant, gz):
    profile = ta.load(write(tmp_path, "trace.pftrace", variant, gz), cache=False)
    (read,) = profile.reads
    assert read.format == "perfetto-protobuf" and read.read
    assert profile.events.height == pt.SLICES
    assert profile.events.select(COLUMNS).equals(kineto.events.select(COLUMNS))
    assert profile.edges.equals(kineto.edges)
    assert set(profile.edges["hop"].cast(pl.String)) == {"launch", "device"}
    assert sorted(profile.events["pid"].unique()) == [100, 200]  # two processes
    assert not profile.warnings and not profile.dropped
    assert any(n.startswith("clock: ") for n in read.notes)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_perfettos_trace_processor_counts_the_same_slices_and_flows(
    tmp_path, trace_processor, variant
):
    path = write(tmp_path, "trace.pftrace", variant)
    profile = ta.load(path, cache=False)
    trace_processor.load(path)
    slices = trace_processor.query("select count(*) as n from slice")[0]["n"]
    flows = trace_processor.query("select count(*) as n from flow")[0]["n"]
    depth = trace_processor.query("select max(depth) as d from slice")[0]["d"]
    assert slices == profile.events.height == pt.SLICES
    # a flow id shared by k events is k - 1 flows (Perfetto chains them)
    ids = profile.events.select(pl.col("flow_ids").explode().drop_nulls())["flow_ids"]
    assert flows == int((ids.value_counts()["count"] - 1).sum()) == pt.FLOWS
    assert depth == 2  # step > op > launch: nested, as the events' times say
    assert profile.edges.filter(pl.col("hop") == "device").height == flows


@pytest.mark.parametrize(
    "name",
    ["x.pftrace", "x.pftrace.gz", "trace.perfetto-trace", "trace.perfetto-trace.gz"],
)
def test_perfetto_names_are_found_as_perfetto_sources(name, tmp_path):
    assert file_type(name).kind == "perfetto"
    assert file_type("ntrace.pb").kind == "raw"  # Neuron's .pb files stay Neuron's


def test_a_pftrace_in_a_folder_is_read_as_one_of_its_sources(tmp_path):
    write(tmp_path, "rank0.pftrace", "everything")
    profile = ta.load(tmp_path, cache=False)
    assert [r.format for r in profile.reads] == ["perfetto-protobuf"]
    assert profile.events.height == pt.SLICES
