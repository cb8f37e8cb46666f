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
