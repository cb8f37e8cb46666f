"""One state per device (analyses/states.py): `gaps` and `ranks` say the same of every rank,
to the ns, and both say what the raw JSON says.

The expectation is computed here from the raw records in a few plain lines: each kind's
intervals (kernels named nccl/rccl are communication, copies and memsets memory, other kernels
compute) merged, clipped to the step's window (its host span, to the end of the last work it
launched), and the instants of each state counted. Nothing is taken from traceana's output.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from conftest import union_of

import trace_analyzer as ta
from trace_analyzer.questions.ranks.analysis import ranks

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
DLRM = SHARED / "real/param/dlrm_kineto"
MI300 = SHARED / "real/tracelens/mi300_resnet"
COMM = re.compile(r"nccl|rccl", re.I)
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def ns(us: float) -> int:
    return round(us * 1000)


def files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {folder}")
    return sorted(folder.glob("*.json.gz"))


def length(iv: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in iv)


def cut(iv: list[tuple[int, int]], a: int, b: int) -> list[tuple[int, int]]:
    return [(max(s, a), min(e, b)) for s, e in iv if min(e, b) > max(s, a)]


def both(x: list[tuple[int, int]], y: list[tuple[int, int]]) -> int:
    """The time two unions share."""
    return sum(length(cut(y, s, e)) for s, e in x)


def raw(path: Path) -> tuple[dict[int, tuple[int, int]], dict[str, list[tuple[int, int]]]]:
    """The trace's host steps (number: start, end of the last work it launched or its own
    end, the later) and its work by kind, each kind's intervals merged."""
    with gzip.open(path, "rt") as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = {int(m[1]): (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in ev
             if e.get("cat") == "user_annotation" and (m := STEP.match(e["name"]))}
    launch = {e["args"]["correlation"]: ns(e["ts"]) for e in ev
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    work: dict[str, list[tuple[int, int]]] = {"compute": [], "communication": [], "memory": []}
    ends = dict(steps)
    for e in ev:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset") or not e.get("dur"):
            continue
        s, t = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
        kind = ("memory" if e["cat"] != "kernel" else
                "communication" if COMM.search(e["name"]) else "compute")
        work[kind].append((s, t))
        at = launch.get(e.get("args", {}).get("correlation"), s)
        for n, (s0, s1) in steps.items():
            if s0 <= at < s1:
                ends[n] = (s0, max(ends[n][1], t))
    return ends, {k: union_of(v) for k, v in work.items()}


def states(work: dict[str, list[tuple[int, int]]], w0: int, w1: int) -> dict[str, int]:
    c, m, x = (cut(work[k], w0, w1) for k in ("compute", "communication", "memory"))
    exposed = length(m) - both(m, c)
    memory = length(x) - both(x, union_of(c + m))
    return {"compute": length(c), "exposed": exposed, "memory": memory,
            "idle": (w1 - w0) - length(c) - exposed - memory}


def from_gaps(profile, step: int) -> dict[str, int]:
    (d,) = ta.gaps(profile, step=step).devices.to_dicts()
    parts = ("busy_ns", "exposed_communication_ns", "memory_ns", "idle_ns", "leading_ns",
             "trailing_ns")
    assert sum(d[p] for p in parts) == d["window_ns"]  # the states add up to the window
    return {"compute": d["busy_ns"], "exposed": d["exposed_communication_ns"],
            "memory": d["memory_ns"], "idle": d["idle_ns"] + d["leading_ns"] + d["trailing_ns"]}


def from_ranks(profile) -> dict[int, dict[str, int]]:
    return {r["step"]: {"compute": r["compute_ns"], "exposed": r["exposed_communication_ns"],
                        "memory": r["memory_ns"], "idle": r["idle_ns"]}
            for r in ranks(profile).steps.to_dicts()}


@pytest.mark.parametrize("folder", [DLRM, MI300], ids=["dlrm-8-ranks", "mi300_resnet"])
def test_gaps_and_ranks_agree_on_every_rank_to_the_ns(folder):
    """DLRM's 8 ranks (one step each) and mi300_resnet's three steps (the device runs behind
    the host, so consecutive steps' windows overlap): each step of each rank, computing,
    exposed communication, copying alone and idle, as both commands say and the raw file."""
    checked = 0
    for path in files(folder):
        profile = ta.load(path, cache=False)
        steps, work = raw(path)
        by_ranks = from_ranks(profile)
        assert set(by_ranks) == set(steps)
        for n, (w0, w1) in steps.items():
            want = states(work, w0, w1)
            assert by_ranks[n] == want, (path.name, n)
            assert from_gaps(profile, n) == want, (path.name, n)
            checked += 1
        assert any(v["exposed"] for v in by_ranks.values())  # collectives ran alone
    assert checked == (8 if folder == DLRM else 3)


def test_dlrm_rank1_longest_gap_is_mostly_exposed_communication():
    """The 7.26 ms with no compute on rank 1: the SendRecv on another stream covers it, so
    its time is exposed communication, not idle; the gap's states add up to it."""
    path = next(p for p in files(DLRM) if p.name.startswith("worker1_"))
    _, work = raw(path)
    gaps = ta.gaps(ta.load(path, cache=False)).device_gaps
    g = gaps.sort("duration_ns", descending=True).row(0, named=True)
    a, b = g["start_ns"], g["end_ns"]
    assert not cut(work["compute"], a + 1, b - 1)  # no compute inside: a device gap
    comm = length(cut(work["communication"], a, b))
    memory = length(cut(work["memory"], a, b)) - both(cut(work["memory"], a, b),
                                                      cut(work["communication"], a, b))
    assert (g["exposed_communication_ns"], g["memory_ns"]) == (comm, memory)
    assert g["idle_ns"] == (b - a) - comm - memory
    assert comm > 0.9 * (b - a) and g["cause"] == "collective"
