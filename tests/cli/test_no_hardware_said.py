"""Why a run has no hardware lanes, said alike by ``gaps``, ``info`` and ``report`` (issue 38),
as real processes on real traces: a GPU run whose device activity was never recorded (the
launches are there, their kernels are not: real3/gpu_practice/rtx4060_no_kernels) and a folder
of a bare Trainium2 NEFF/NTFF pair (real3/allenkchau), where "host activity only" was said."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import run_process

REAL3 = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "real3"
NO_KERNELS = REAL3 / "gpu_practice" / "rtx4060_no_kernels"
BARE = REAL3 / "allenkchau" / "fused_attention"


def _need(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} absent (../shared/corpus/real3: see its SOURCE.md)")


def _said(command: str, path: Path, tmp_path: Path) -> list[str]:
    """What ``command`` says of the run at ``path`` (exit 0): gaps' verdict, info's notes,
    report's headline."""
    if command == "report":
        out = tmp_path / "r.md"
        code, _, err, *_ = run_process("report", path, "--no-cache", "-o", out)
        assert code == 0, err
        return out.read_text().splitlines()
    code, out, err, *_ = run_process(command, path, "--no-cache", "--format", "json")
    assert code == 0, err
    runs = [r for r in json.loads(out)["runs"] if Path(r["root"]) in (path, path.parent)]
    assert len(runs) == 1, out
    return [runs[0]["no_hardware"]] if command == "gaps" else runs[0]["notes"]


@pytest.mark.parametrize("command", ["gaps", "info", "report"])
@pytest.mark.parametrize("named", ["folder", "file"])
def test_launches_without_device_records_are_said(command, named, tmp_path):
    _need(NO_KERNELS)
    (trace,) = NO_KERNELS.glob("*.json")
    events = json.loads(trace.read_bytes())["traceEvents"]
    launches = [e for e in events if e.get("cat") == "cuda_runtime" and "correlation" in
                e.get("args", {}) and re.search(r"(?i)launch|memcpy|memset", e["name"])]  # fmt: skip
    assert launches and not [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy")]
    lines = _said(command, trace if named == "file" else NO_KERNELS, tmp_path)
    said = [line for line in lines if "launched device work" in line]
    assert len(said) == 1, lines
    assert f"{len(launches):,} runtime calls that launch" in said[0]
    kernels = sum(e["name"] == "cudaLaunchKernel" for e in launches)
    assert f"cudaLaunchKernel ×{kernels}" in said[0] and "ProfilerActivity.CUDA" in said[0]
    assert not any("host activity only" in line for line in lines)


@pytest.mark.parametrize("command", ["gaps", "info"])
def test_a_bare_neff_and_ntff_say_where_the_device_work_is(command, tmp_path):
    _need(BARE)
    (ntff,), (neff,) = BARE.glob("*.ntff"), BARE.glob("*.neff")
    lines = _said(command, BARE, tmp_path)
    said = [line for line in lines if "NTFF" in line]
    assert said and all("host activity only" not in line for line in lines), lines
    assert any(f"-n {neff} -s {ntff}" in line for line in said) or command == "info", said


def test_a_host_only_run_names_the_foreign_trace_beside_it(tmp_path):
    rocprof = REAL3 / "rocm_blogs" / "rocprof_hip_trace" / "results.json"
    _need(rocprof)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "results.json").write_bytes(rocprof.read_bytes())
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10,
               "dur": 5}]  # fmt: skip
    (mixed / "trace.json").write_text(json.dumps({"traceEvents": events}))
    (said,) = _said("gaps", mixed, tmp_path)
    assert "host activity only" in said and "not read: results.json (a rocprof v1" in said, said
