"""Both idle percentages of docs/gaps.md ("Definitions"), checked on the 8 DLRM ranks against
figures computed here from the raw JSON (issue 16; the device's states of issue 35).

Per GPU: its compute is the union of its kernels but the collectives (NCCL, by name); its
collectives alone are exposed communication, its copies and memsets alone memory; its active
span runs from its first work of any kind to its last; idle is what remains of it. The window
is the run's hardware span (kernels and memsets), over all ranks. So: idle % window = idle /
window, idle % active = idle / active.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import device_model, run_cli

import trace_analyzer as ta

DLRM = Path(__file__).resolve().parents[2].parent / "shared/corpus/real/param/dlrm_kineto"
HARDWARE = ("kernel", "gpu_memset")
WORK = ("kernel", "gpu_memset", "gpu_memcpy")


def _records():
    if not DLRM.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {DLRM}")
    for f in sorted(DLRM.glob("*.json.gz")):
        for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") in WORK:
                start = round(e["ts"] * 1000)
                yield e, start, start + round(e["dur"] * 1000)


def _per_gpu() -> dict[int, dict[str, list[tuple[int, int]]]]:
    """Return each GPU's work (ns) by kind, read from the raw rank files."""
    out: dict[int, dict[str, list[tuple[int, int]]]] = {}
    for e, start, end in _records():
        kind = ("memory" if e["cat"] != "kernel" else
                "communication" if "nccl" in e["name"].lower() else "compute")
        gpu = out.setdefault(e["args"]["device"], {"compute": [], "communication": [],
                                                   "memory": []})
        gpu[kind].append((start, end))
    return out


def _window() -> tuple[int, int]:
    """Return the run's hardware span (ns): every kernel and memset, communication included."""
    spans = [(s, e) for r, s, e in _records() if r["cat"] in HARDWARE]
    return min(s for s, _ in spans), max(e for _, e in spans)


def _expected() -> tuple[dict[int, dict[str, float]], int]:
    gpus = _per_gpu()
    start, end = _window()
    window = end - start
    want = {}
    for gpu, kinds in gpus.items():
        m = device_model(kinds["compute"], kinds["communication"], kinds["memory"], start, end)
        active = window - m["leading_ns"] - m["trailing_ns"]
        want[gpu] = {
            "idle_ns": m["idle_ns"],
            "active_ns": active,
            "leading_ns": m["leading_ns"],
            "trailing_ns": m["trailing_ns"],
            "exposed_communication_ns": m["exposed_communication_ns"],
            "idle_pct": round(100 * m["idle_ns"] / window, 2),
            "active_idle_pct": round(100 * m["idle_ns"] / active, 2),
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
        # the states add up as documented: busy + exposed communication + memory + idle =
        # active; + leading + trailing = window
        row = got[gpu]
        states = row["busy_ns"] + row["exposed_communication_ns"] + row["memory_ns"]
        assert states + row["idle_ns"] == row["active_ns"]
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
