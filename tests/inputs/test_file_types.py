"""Discovery's table of file names (FILE_TYPES): what each name is, in a folder and named.

A file found in a folder is what the first matching row says; a file the user names is read
as the first *source* kind its name matches (a capture.json or device JSON named directly is
read as JSON, and refused if it is no trace); a name no row matches is not traceana's.
"""

from __future__ import annotations

import pytest
from conftest import X, kineto, write_trace

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.discover import discover, file_type

BASE = 1_793_620_800_000_000_000


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("trace.json", "json"),
        ("worker0.1712345.pt.trace.json.gz", "json"),
        ("SystemProfileEvents.parquet", "explorer-parquet"),
        ("SystemProfileEvents_12.parquet", "explorer-parquet"),
        ("Metadata.parquet", None),
        ("neff_14382885777943380728.neff", "neff"),
        ("14382885777943380728_instid_0_vnc_0.ntff", "ntff"),
        ("ntrace.pb", "raw"),
        ("host_mem.pb", "raw"),
        ("capture.json", "capture"),
        ("truth.json", "not-a-trace"),
        ("profile_nc_0_session_1.json", "device-json"),
        ("device_profile_model_3.json.gz", "device-json"),
        ("trace.json.bak", None),
        ("README.md", None),
    ],
)
def test_names_in_a_folder(name, kind):
    ft = file_type(name)
    assert (ft.kind if ft else None) == kind


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("capture.json", "json"),
        ("truth.json", "json"),
        ("profile_nc_0_session_1.json", "json"),
        ("SystemProfileEvents_1.parquet", "explorer-parquet"),
        ("neff_1.neff", None),
        ("ntrace.pb", None),
    ],
)
def test_names_the_user_names(name, kind):
    ft = file_type(name, sources_only=True)
    assert (ft.kind if ft else None) == kind


def test_a_folder_files_each_kind_in_its_place(tmp_path):
    write_trace(tmp_path / "trace.json", kineto([X("cpu_op", "a", 1, 2)], baseTimeNanoseconds=BASE))
    for name in ("truth.json", "capture.json", "x_nc_0_session_0.json", "ntrace.pb", "notes.txt"):
        (tmp_path / name).write_text("{}")
    (run,) = discover(tmp_path)
    assert [(s.path.name, s.kind) for s in run.sources] == [("trace.json", "json")]
    assert [p.name for p in run.captures] == ["capture.json"]
    assert [p.name for p in run.raw] == ["ntrace.pb"]
    assert [(p.name, why) for p, why in run.skipped] == [
        ("x_nc_0_session_0.json", "per-core device JSON: not read")
    ]


def test_a_named_capture_json_is_read_as_json(tmp_path):
    path = tmp_path / "capture.json"
    path.write_text('{"backend": "cpu"}')
    (run,) = discover(path)
    (src,) = run.sources
    assert (src.kind, src.named) == ("json", True)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("ntrace.pb", "a Neuron .pb file is not decoded by traceana"),
        ("notes.txt", "not a profile traceana reads"),
    ],
)
def test_a_named_file_of_no_source_kind(tmp_path, name, problem):
    path = tmp_path / name
    path.write_bytes(b"\x00")
    with pytest.raises(InputError, match=problem):
        discover(path)


def test_a_named_neff_or_ntff_is_its_folders_run(tmp_path):
    """A NEFF or NTFF named alone is the run of its folder that holds it (issue 38): the same
    answer as the folder's, the pair's export command included, not a refusal."""
    for name in ("neff_1.neff", "1_instid_0_vnc_0.ntff"):
        (tmp_path / name).write_bytes(b"\x00")
    (folder,) = discover(tmp_path)
    for name in ("neff_1.neff", "1_instid_0_vnc_0.ntff"):
        (run,) = discover(tmp_path / name)
        assert (run.root, run.neffs, run.ntffs) == (folder.root, folder.neffs, folder.ntffs)

