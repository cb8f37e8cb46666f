"""Where Neuron Explorer and the profiler put things (issue 38; docs/neuron-formats.md §7),
built from the rmsnorm_naive fixture in a temporary folder and read as the fixture's own
layout reads: Explorer's processed profiles under ``<data-path>/profiles/global/<name>@latest/``
(system tables, a device profile named as DeviceProfileList names it, ``Summary.parquet``),
and a framework trace in the TensorBoard plugin layout (``*/plugins/*/*.pt.trace.json.gz``)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from conftest import run_process

import trace_analyzer as ta

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"
DEVICE = "rmsnorm_naive_i-0123456789abcdef0_pid_4242_nc_0_session_0"


def _gaps(path: Path) -> dict:
    code, out, err, *_ = run_process("gaps", path, "--no-cache", "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    return run


def _same(run: dict, want: dict) -> None:
    for key in ("summary", "lanes", "device_gaps", "engines"):
        assert run[key] == want[key], key


def test_explorer_data_path_layout(tmp_path):
    data = tmp_path / "data"
    glob = data / "profiles" / "global"
    shutil.copytree(FIXTURE / "explorer" / "parquet", glob / "rmsnorm_naive@latest")
    shutil.copytree(FIXTURE / "device_profiles" / DEVICE, glob / f"{DEVICE}@latest")
    shutil.copy(glob / f"{DEVICE}@latest" / "Summary.parquet", glob / "rmsnorm_naive@latest")
    shutil.copytree(FIXTURE / "i-0123456789abcdef0_pid_4242", data / "i-0123456789abcdef0_pid_4242")
    want = _gaps(FIXTURE)
    run = _gaps(data)
    assert run["engines"], "the device profile under its @latest folder is not read below the ops"
    _same(run, want)
    code, out, err, *_ = run_process("engines", data, "--format", "json")
    assert code == 0, err
    (profile,) = json.loads(out)["runs"][0]["profiles"]
    assert profile["root"].endswith(f"{DEVICE}@latest")
    # the folder is the profile DeviceProfileList names: its instance, process and core, and
    # so its lanes, are the system profile's (a name ending "@latest" matched none of them)
    (got,), (fixed,) = ta.load_device(data).profiles, ta.load_device(FIXTURE).profiles
    assert (got.name, got.instance_id, got.process_id, got.nc_id) == (
        fixed.name, fixed.instance_id, fixed.process_id, fixed.nc_id)  # fmt: skip
    assert got.instructions["lane"].to_list() == fixed.instructions["lane"].to_list()


def test_tensorboard_plugin_layout(tmp_path):
    cap = tmp_path / "cap"
    shutil.copytree(FIXTURE, cap, ignore=shutil.ignore_patterns(".traceana-*"))
    (trace,) = cap.glob("i-*/*/trace.json")
    plugin = cap / "plugins" / "profile" / "2026_11_02_12_00_00"
    plugin.mkdir(parents=True)
    (plugin / "host_4242.1762084800000.pt.trace.json.gz").write_bytes(
        gzip.compress(trace.read_bytes())
    )
    trace.unlink()
    run = _gaps(cap)
    assert run["root"] == str(cap)  # one run: the framework trace joins the capture
    _same(run, _gaps(FIXTURE))
