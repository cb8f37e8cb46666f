"""The PyTorch <= 1.9 Kineto format (issue 15): `cat: "Operator"` is a framework op.

Checked on a real 2021 trace (../shared/corpus/real/kineto/tb_plugin_resnet50, ResNet-50 on
V100): every figure the test expects is computed here from the raw JSON in a few plain
lines, never from traceana's output.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

import trace_analyzer as ta

RUN = Path(__file__).resolve().parents[2].parent / "shared/corpus/real/kineto/tb_plugin_resnet50"
DEVICE_WORK = ("Kernel", "Memset")  # device work; Memcpy is a transfer, not busy time


@pytest.fixture(scope="module")
def raw() -> list[dict]:
    files = sorted(RUN.glob("*.json.gz")) if RUN.is_dir() else []
    if not files:
        pytest.skip(f"{RUN} is absent: the shared corpus is not checked out beside the repo")
    return json.loads(gzip.decompress(files[0].read_bytes()))["traceEvents"]


@pytest.fixture(scope="module")
def profile():
    return ta.load(RUN)


def test_every_kernel_links_to_an_op(raw, profile):
    kernels = [e for e in raw if e.get("ph") == "X" and e.get("cat") in DEVICE_WORK]
    result = ta.chains(profile)
    assert result.coverage["hardware_executions"] == len(kernels) == 9084
    assert result.coverage["linked_pct"] >= 99.0, result.coverage


def test_device_time_per_op_is_the_kernel_time_of_its_external_id(raw, profile):
    # A kernel names its op by "external id" (lower case in this format); the op is the
    # Operator event whose "External id" it is.
    op_of = {e["args"]["External id"]: e["name"] for e in raw
             if e.get("ph") == "X" and e.get("cat") == "Operator"}
    want: Counter[str] = Counter()
    for e in raw:
        if e.get("ph") == "X" and e.get("cat") in DEVICE_WORK:
            want[op_of[e["args"]["external id"]]] += e["dur"]  # µs
    got = {r["name"]: r["device_us"] for r in ta.ops(profile).table.to_dicts() if r["device_us"]}
    assert got == pytest.approx(dict(want))


def test_operator_calls_are_counted(raw, profile):
    calls = Counter(e["name"] for e in raw if e.get("ph") == "X" and e.get("cat") == "Operator")
    got = {r["name"]: r["calls"] for r in ta.ops(profile).table.to_dicts() if r["calls"]}
    assert got == dict(calls)


# --- the JSON Array Format: a bare list of events, no traceEvents (Kineto until 2021) ------

ARRAY = (Path(__file__).resolve().parents[2].parent
         / "shared/corpus/real3/kineto_array/resnet50_num_workers_4")


def test_a_bare_event_array_is_read_named_or_in_its_folder():
    """The Trace Event Format's JSON Array Format: the trace is the list itself. Read, named
    or found in its folder, with every kernel and the same gaps as the raw figures: the GPU's
    kernels merged, the gaps between them (SOURCE.md read 9,804 by hand, its 352 memsets then
    counted as busy: a memset is no compute since the device's states, docs/gaps.md)."""
    files = sorted(ARRAY.glob("*.json.gz")) if ARRAY.is_dir() else []
    if not files:
        pytest.skip(f"{ARRAY} is absent: the shared corpus is not checked out beside the repo")
    doc = json.loads(gzip.decompress(files[0].read_bytes()))
    assert isinstance(doc, list)
    # epoch µs as integers: in ns they are past a float's 2**53, so in integers here
    spans = sorted((int(e["ts"]) * 1000, (int(e["ts"]) + int(e["dur"])) * 1000)
                   for e in doc if e.get("ph") == "X" and e.get("cat") == "Kernel")
    gaps, reach = 0, spans[0][1]
    for s, e in spans[1:]:
        gaps += s > reach + 1
        reach = max(reach, e)
    for path in (files[0], ARRAY):
        g = ta.gaps(ta.load(path, cache=False))
        assert g.summary["executions"] == len(spans) + sum(
            e.get("ph") == "X" and e.get("cat") == "Memset" for e in doc)
        assert g.summary["gap_count"] == gaps == 9452


def test_a_list_that_is_not_events_is_still_refused(tmp_path):
    path = tmp_path / "numbers.json"
    path.write_text("[1, 2, 3]")
    with pytest.raises(ta.InputError, match="a JSON list without traceEvents"):
        ta.load(path, cache=False)
