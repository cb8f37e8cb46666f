"""capture/: real CPU captures analysed by traceana, the Neuron wiring, and the import contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import run_cli

import trace_analyzer as ta

torch = pytest.importorskip("torch", reason="capture tests need torch (requirements-test.txt)")

ROOT = Path(__file__).resolve().parents[2]
STUBS = Path(__file__).resolve().parents[1] / "stubs"
NAIVE_OPS = {"aten::mul": 3, "aten::mean": 1, "aten::add": 1, "aten::rsqrt": 1}


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> Path:
    """The three variants, captured on the CPU by the command line, once for the module."""
    out = tmp_path_factory.mktemp("profile_out")
    done = subprocess.run(
        [sys.executable, "-m", "capture", "rmsnorm", "--variant", "all", "--backend", "cpu",
         "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # each variant is said as it starts, torch.compile's long first run before it compiles
    said = [line for line in done.stderr.splitlines() if line.startswith("capturing rmsnorm")]
    assert [line.split()[2] for line in said] == ["naive", "fused", "compiled"], done.stderr
    assert "compiling first" in said[2]
    return out


def framework_ops(path: Path) -> pl.DataFrame:
    ev = ta.load(path).events
    return ev.filter(pl.col("lane_kind") == "framework_op", pl.col("step") == 3)


def test_capture_writes_the_session_layout_with_capture_json(captured):
    for variant in ("naive", "fused", "compiled"):
        (trace,) = (captured / variant).glob("*_pid_*/*/trace.json")
        assert trace.parent.name[:8].isdigit() and len(trace.parent.name) == 19  # YYYYMMDD_HHMMSS_mmm
        meta = json.loads((trace.parent / "capture.json").read_text())
        assert meta["backend"] == "cpu" and meta["variant"] == variant
        assert meta["workload"] == "rmsnorm" and meta["shape"] == [4, 512]
        assert meta["dtype"] == "bf16" and meta["torch_version"] == torch.__version__
        assert meta["schedule"] == {"wait": 2, "warmup": 1, "active": 1}
        assert meta["steps"] == 4 and meta["pid"] == int(trace.parent.parent.name.rsplit("_", 1)[1])


def test_naive_step_has_the_six_operator_calls(captured):
    ops = framework_ops(captured / "naive")
    counts = dict(ops.group_by("name").len().rows())
    assert {name: counts.get(name, 0) for name in NAIVE_OPS} == NAIVE_OPS


def test_fused_step_runs_the_fused_op(captured):
    counts = dict(framework_ops(captured / "fused").group_by("name").len().rows())
    # One call of the fused op per step (on the CPU it decomposes inside that call).
    assert counts.get("aten::_fused_rms_norm") == 1, counts
    assert counts.get("aten::rms_norm") == 1


def test_compiled_step_is_a_compiled_region(captured):
    names = set(framework_ops(captured / "compiled")["name"])
    assert any(n.startswith("Torch-Compiled Region") for n in names), names
    assert "aten::rsqrt" not in names  # the ops ran inside the compiled graph


def test_traceana_reads_the_captures(captured):
    code, out, err = run_cli("info", str(captured), "--format", "json")
    assert code == 0, err
    runs = {Path(r["root"]).name: r for r in json.loads(out)["runs"]}
    assert sorted(runs) == ["compiled", "fused", "naive"]
    for name, run in runs.items():
        assert run["captures"][0]["variant"] == name
        assert run["hardware_lanes"] == 0  # a CPU capture: host lanes only
        assert all("/framework/" not in lane["lane"] for lane in run["lanes"])  # not Neuron
    code, out, err = run_cli("gaps", str(captured))
    assert code == 0, err
    assert "no hardware lanes" in out


def test_neuron_backend_calls_the_documented_api(tmp_path, monkeypatch):
    """Checks the wiring only, against a stand-in for torch_neuronx (tests/stubs): the
    profiler arguments, NeuronConfig's parameters, export_trace as on_trace_ready and a
    synchronize per step. No NeuronCore runs here."""
    import capture

    monkeypatch.syspath_prepend(str(STUBS))
    for name in [m for m in sys.modules if m.startswith("torch_neuronx")]:
        monkeypatch.delitem(sys.modules, name)
    import torch_neuronx
    from torch_neuronx import profiling as tnp

    torch_neuronx.CALLS.clear()
    seen = {}

    class FakeProfile:  # torch.profiler.profile would reject a stand-in experimental_config
        def __init__(self, **kwargs):
            seen.update(kwargs)
            self.steps = 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def step(self):
            self.steps += 1
            if self.steps == 4:  # wait 2 + warmup 1 + active 1
                seen["on_trace_ready"](self)

    monkeypatch.setattr(torch.profiler, "profile", FakeProfile)
    monkeypatch.delattr(torch, "neuron", raising=False)
    where = capture.profile(lambda: None, tmp_path, backend="neuron",
                            neuron=capture.NeuronOptions(capture_enabled_for_nc="0,1"))
    acts = seen["activities"]
    assert acts == [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
    config = seen["experimental_config"]
    assert isinstance(config, tnp.NeuronConfig)
    assert config.kwargs["modes"] == [tnp.ProfileMode.DEVICE, tnp.ProfileMode.RUNTIME]
    assert config.kwargs["profile_output_dir"] == str(tmp_path)
    assert config.kwargs["capture_enabled_for_nc"] == "0,1"
    assert seen["on_trace_ready"].__func__ is tnp.NeuronProfiler.export_trace
    assert seen["on_trace_ready"].__self__.config is config
    calls = [name for name, _ in torch_neuronx.CALLS]
    assert calls.count("synchronize") == 4 and calls.count("export_trace") == 1
    assert where.parent.name.startswith("i-0stub_pid_")
    meta = json.loads((where / "capture.json").read_text())
    assert meta["backend"] == "neuron" and meta["torch_neuronx_version"] == "0.0-stub"


def run_python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=60)


def test_importing_capture_costs_nothing_and_needs_no_analyzer():
    done = run_python("import sys, capture; "
                      "print(sorted(m for m in sys.modules if m.split('.')[0] in "
                      "('torch', 'trace_analyzer')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_torch_a_capture_names_the_extra():
    done = run_python("import sys; sys.modules['torch'] = None\n"
                      "import capture\n"
                      "try:\n    capture.profile(lambda: None, 'x')\n"
                      "except ImportError as e:\n    print(e)")
    assert done.returncode == 0, done.stderr
    assert "traceana[capture]" in done.stdout


def test_command_line_errors_are_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "capture", "rmsnorm", "--backend", "neuron",
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("capture: error:") and "torch-neuronx" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
