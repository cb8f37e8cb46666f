"""Both idle percentages of docs/gaps.md ("Definitions"), checked on the 8 DLRM ranks against
figures computed here from the raw JSON (issue 16).

Per GPU: busy is the union of its kernel and memset intervals (what traceana counts as
hardware on a GPU, docs/formats.md); its active span runs from its first execution start to
its last execution end; idle is active − busy. The window is the run's hardware span, over
all ranks. So: idle % window = idle / window, idle % active = idle / active.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import run_cli

import trace_analyzer as ta

DLRM = Path(__file__).resolve().parents[2].parent / "shared/corpus/real/param/dlrm_kineto"
HARDWARE = ("kernel", "gpu_memset")


def _per_gpu() -> dict[int, list[tuple[int, int]]]:
    """Return each GPU's compute intervals (ns), read from the raw rank files: the kernels and
    memsets of its streams but the communication ones (most of a stream's executions NCCL
    kernels: they take no part in the device's idle, docs/gaps.md)."""
    if not DLRM.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {DLRM}")
    streams: dict[tuple[int, int], list[tuple[int, int, bool]]] = {}
    for f in sorted(DLRM.glob("*.json.gz")):
        for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") in HARDWARE:
                start, dur = round(e["ts"] * 1000), round(e["dur"] * 1000)
                lane = (e["args"]["device"], e["args"]["stream"])
                nccl = "nccl" in e["name"].lower()
                streams.setdefault(lane, []).append((start, start + dur, nccl))
    out: dict[int, list[tuple[int, int]]] = {}
    for (gpu, _), iv in streams.items():
        out.setdefault(gpu, [])
        if sum(c for *_, c in iv) < len(iv) / 2:  # a compute stream
            out[gpu] += [(s, e) for s, e, _ in iv]
    return out


def _window() -> tuple[int, int]:
    """Return the run's hardware span (ns): every kernel and memset, communication included."""
    starts, ends = [], []
    for f in sorted(DLRM.glob("*.json.gz")):
        for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") in HARDWARE:
                starts.append(round(e["ts"] * 1000))
                ends.append(starts[-1] + round(e["dur"] * 1000))
    return min(starts), max(ends)


def _busy(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for s, e in sorted(intervals):
        if reach is None or s > reach:
            total, reach = total + e - s, e
        elif e > reach:
            total, reach = total + e - reach, e
    return total


def _expected() -> tuple[dict[int, dict[str, float]], int]:
    gpus = _per_gpu()
    start, end = _window()
    window = end - start
    want = {}
    for gpu, iv in gpus.items():
        first, last = min(s for s, _ in iv), max(e for _, e in iv)
        idle = (last - first) - _busy(iv)
        want[gpu] = {
            "idle_ns": idle,
            "active_ns": last - first,
            "leading_ns": first - start,
            "trailing_ns": end - last,
            "idle_pct": round(100 * idle / window, 2),
            "active_idle_pct": round(100 * idle / (last - first), 2),
        }
    return want, window


def test_dlrm_both_idle_percentages_per_gpu():
    want, window = _expected()
    result = ta.gaps(ta.load(DLRM))
    assert result.window is not None and result.window.duration_ns == window
    got = {int(r["device"].rsplit("GPU:", 1)[1]): r for r in result.devices.to_dicts()}
    assert set(got) == set(want) and len(want) == 8
    for gpu, figures in want.items():
        for name, value in figures.items():
            assert got[gpu][name] == value, (gpu, name)
        # the two add up as documented: busy + idle = active; + leading + trailing = window
        row = got[gpu]
        assert row["busy_ns"] + row["idle_ns"] == row["active_ns"]
        assert row["active_ns"] + row["leading_ns"] + row["trailing_ns"] == window
    s = result.summary
    idle, active = sum(w["idle_ns"] for w in want.values()), sum(
        w["active_ns"] for w in want.values()
    )
    assert s["active_ns"] == active
    assert s["active_idle_pct"] == round(100 * idle / active, 2)
    assert s["idle_pct"] == round(100 * idle / (8 * window), 2)


def test_dlrm_gate_and_json_name_both(tmp_path):
    want, _ = _expected()
    idle = sum(w["idle_ns"] for w in want.values())
    active_pct = round(100 * idle / sum(w["active_ns"] for w in want.values()), 2)
    code, out, err = run_cli(
        "gaps", DLRM, "--no-cache", "--format", "json", "--fail-on", f"active_idle_pct>={active_pct}"
    )
    assert code == 1, err
    assert f"active_idle_pct = {active_pct}" in err
    run = json.loads(out)["runs"][0]
    for row in run["devices"]:
        for key in ("idle_pct", "active_idle_pct", "active_ns", "leading_ns", "trailing_ns"):
            assert key in row
    code, _, err = run_cli("gaps", DLRM, "--no-cache", "--fail-on", f"active_idle_pct<{active_pct}")
    assert code == 0, err
