"""traceana runs with its runtime dependencies only (orjson, polars, networkx, click, jinja2,
platformdirs).

The test environment also has numpy, torch and matplotlib (extras); a module that imports
one of them on the analysis path would pass every other test and fail on a user's machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = ("import sys\n"
         "for m in ('numpy', 'torch', 'matplotlib', 'pandas', 'pyarrow'):\n"
         "    sys.modules[m] = None  # importing it now raises ImportError\n"
         "from trace_analyzer.cli import main\n"
         "sys.argv = ['traceana'] + sys.argv[1:]\n"
         "main()\n")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_gaps_and_info_of_the_neuron_fixture_need_no_extra(tmp_path):
    for cmd in (["gaps", "fixtures/rmsnorm_naive", "--format", "json", "--no-cache"],
                ["info", "fixtures/rmsnorm_naive", "--no-cache"],
                ["ops", "fixtures/rmsnorm_naive", "--no-cache"],
                ["export", "fixtures/rmsnorm_naive", "-o", str(tmp_path / "e.json"), "--no-cache"],
                ["tables", "fixtures/rmsnorm_naive", "-o", str(tmp_path / "t"), "--no-cache"]):
        p = run(*cmd)
        assert p.returncode == 0, (cmd, p.stderr)
        assert "Traceback" not in p.stderr and "internal error" not in p.stderr


def test_engines_needs_no_extra(tmp_path):
    import importlib.util

    import pytest

    if importlib.util.find_spec("trace_analyzer.readers.device_profile") is None:
        pytest.skip("readers/device_profile.py (the device-profile reader) is not here yet")
    p = run("engines", "fixtures/rmsnorm_naive", "--format", "json")
    assert p.returncode in (0, 2), p.stderr  # 2: no export there, said in one line
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr


def test_a_report_a_rank_at_a_time_needs_no_extra(tmp_path):
    """report --jobs 1 runs every section's passes (the critical path's replay included)."""
    from conftest import X, kineto, write_trace

    for rank in (0, 1):
        pid = 10 + rank
        events = [X("user_annotation", "ProfilerStep#1", 0, 900, pid=pid, tid=1)]
        for i, start in enumerate((100, 400)):
            events += [
                X("cuda_runtime", "cudaLaunchKernel", start, 20, pid=pid, tid=1, correlation=i),
                X("kernel", f"k{i}", start + 30, 150, pid=0, tid=7, correlation=i, device=rank,
                  stream=7),
            ]  # fmt: skip
        write_trace(tmp_path / "run" / f"rank{rank}.json", kineto(events, distributedInfo={"rank": rank}))  # fmt: skip
    out = tmp_path / "r.html"
    p = run("report", str(tmp_path / "run"), "--jobs", "1", "--no-images", "-o", str(out), "--no-cache")
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and out.read_bytes().startswith(b"<!")
