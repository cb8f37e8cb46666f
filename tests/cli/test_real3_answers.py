"""Every file of ../shared/corpus/real3 (SOURCE.md) gets the answer an honest tool gives, the same
named alone as found in its folder (issue 38), through ``traceana info`` and ``gaps`` (in-process:
the same code as the command; ``engines`` as a real process). An answer is the exit code and, for each run, what ``gaps`` concludes (why the run
has no hardware lanes, or its idle figures) and the run's notes in ``info``; a refusal is its
one line. What each answer must say is checked from SOURCE.md and the raw files."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from conftest import raw_host_figures, run_cli, run_process

REAL3 = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "real3"
HOST_ONLY = "no hardware lanes: this profile records host activity only"
LEAVES = [
    "kineto_array/resnet50_num_workers_4",
    "gpu_practice/rtx4060_no_kernels",
    "gpu_practice/operator_format",
    "rocm_blogs/rocprof_hip_trace",
    "allenkchau/fused_attention",
    "allenkchau/baseline_bf16_s512",
    "particle_transformer/a100_fwd_bs128",
    "dtu_mlops/cpu_minimal",
]


def _leaf(rel: str) -> Path:
    if not (REAL3 / rel).is_dir():
        pytest.skip(f"{REAL3 / rel} absent (../shared/corpus/real3: see its SOURCE.md)")
    return REAL3 / rel


@cache
def answer(command: str, path: Path) -> tuple[int, object]:
    """(exit code, the one error line) of a refusal, else (0, {run root: what it says})."""
    code, out, err = run_cli(command, path, "--no-cache", "--format", "json")
    if code:
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (code, err)
        return code, lines[0]
    said: dict[str, object] = {}
    for run in json.loads(out)["runs"]:
        if command == "gaps":
            s = run.get("summary") or {}
            said[run["root"]] = (run.get("no_hardware"), s.get("idle_ns"), s.get("gap_count"))
        else:
            said[run["root"]] = (run["notes"], run["links"], [x["format"] for x in run["sources"]])
    return code, said


def _files(rel: str) -> list[Path]:
    return sorted(p for p in _leaf(rel).rglob("*") if p.is_file())


# A NEFF or NTFF named alone is refused with the generic export command, where its folder pairs
# it and gives the pair's own (exit 0): not yet one answer.
@pytest.mark.parametrize("command", ["info", "gaps"])
@pytest.mark.parametrize(
    "rel,name",
    [(leaf, f.relative_to(REAL3 / leaf).as_posix()) for leaf in LEAVES
     for f in (sorted(p for p in (REAL3 / leaf).rglob("*") if p.is_file())
               if (REAL3 / leaf).is_dir() else [])]  # fmt: skip
    or [("kineto_array/resnet50_num_workers_4", "worker0.pt.trace.json.gz")],
)
def test_a_file_named_alone_gets_its_folders_answer(command, rel, name):
    folder = _leaf(rel)
    file = folder / name
    alone, in_folder = answer(command, file), answer(command, folder)
    assert alone[0] == in_folder[0], (alone, in_folder)
    if alone[0]:
        assert alone == in_folder
        return
    root = str(file.parent)
    assert root in alone[1] and alone[1][root] == in_folder[1][root], (alone, in_folder)


def _gaps(rel: str) -> dict:
    code, out, err = run_cli("gaps", _leaf(rel), "--no-cache", "--format", "json")
    assert code == 0, err
    return {r["root"]: r for r in json.loads(out)["runs"]}


def test_kineto_array_is_read_with_its_gpu_idle():
    rel = "kineto_array/resnet50_num_workers_4"
    (run,) = _gaps(rel).values()
    assert run.get("no_hardware") is None and run["summary"]["devices"] == 1
    # SOURCE.md: by hand, GPU 0 idle (no kernel) 40.2 % of 1,086 ms; tests/cli/test_chrome_array
    # computes the same figure from the raw array and holds traceana to it
    s = run["summary"]
    assert round(100 * (s["idle_ns"] + s["memory_ns"]) / s["window_ns"], 1) == 40.2


@pytest.mark.parametrize("rel", ["gpu_practice/operator_format", "dtu_mlops/cpu_minimal"])
def test_cpu_only_traces_are_host_only_kineto_runs(rel):
    (run,) = _gaps(rel).values()
    # host only, and what to run instead (issue 39): ops; not critical, with no step to replay
    assert run["no_hardware"] == HOST_ONLY + ": run `traceana ops` for each op's self CPU time"
    code, said = answer("info", _leaf(rel))
    assert code == 0 and [f for *_, f in said.values()] == [["kineto-json"]]
    # the host's figures: no ProfilerStep, so the recorded span; the ops by self CPU time,
    # each held to the figure computed here from the raw trace
    (trace,) = _leaf(rel).glob("*.json")
    want, host = raw_host_figures(json.loads(trace.read_bytes())), run["host"]
    assert want["steps"] == {} and host["steps"] == [] and host["step_time_ns"] is None
    assert host["span_ns"] == pytest.approx(want["span_ns"], abs=1)
    ranked = sorted(want["self_ns"].items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    assert [o["name"] for o in host["ops"][:3]] == [name for name, _ in ranked]
    for o, (_, ns) in zip(host["ops"], ranked, strict=False):
        assert o["self_cpu_us"] == pytest.approx(ns / 1000, abs=0.003 * o["calls"])
    assert [n["command"] for n in host["next"]] == [f"traceana ops {_leaf(rel)}"]


def test_launches_without_device_records_are_said():
    (run,) = _gaps("gpu_practice/rtx4060_no_kernels").values()
    assert "launched device work" in run["no_hardware"] and "not capture" in run["no_hardware"]


def test_rocprof_v1_is_refused_by_name():
    leaf = _leaf("rocm_blogs/rocprof_hip_trace")
    code, line = answer("gaps", leaf)
    assert code == 2 and "a rocprof v1 HIP trace (rocprofiler JSON), not a PyTorch profiler" in line


@pytest.mark.parametrize("rel", ["allenkchau/fused_attention", "allenkchau/baseline_bf16_s512"])
def test_neuron_pairs_give_the_export_command_and_the_json_export_is_for_engines(rel):
    leaf = _leaf(rel)
    (neff,), (ntff,) = leaf.glob("*.neff"), leaf.glob("*.ntff")
    runs = _gaps(rel)
    assert f"neuron-explorer view -n {neff} -s {ntff}" in runs[str(leaf)]["no_hardware"]
    assert "`traceana engines` reads it" in runs[str(leaf / "json_reports")]["no_hardware"]
    (export,) = (leaf / "json_reports").glob("*.json")
    code, out, err, *_ = run_process("engines", export, timeout=120)  # engines keeps no cache
    assert code == 0, err


def test_particle_transformer_device_to_device_copies_are_device_memory_work():
    rel = "particle_transformer/a100_fwd_bs128"
    (trace,) = _leaf(rel).glob("*.json")
    xs = [e for e in json.loads(trace.read_bytes())["traceEvents"] if e.get("ph") == "X"]
    copies = [e for e in xs if e.get("cat") == "gpu_memcpy"]
    assert {e["name"] for e in copies} == {"Memcpy DtoD (Device -> Device)"}
    assert {e["args"]["stream"] for e in xs if e.get("cat") in ("kernel", "gpu_memcpy")} == {7}
    (run,) = _gaps(rel).values()
    held = [g for g in run["gaps"] if g["cause"] == "transfer"]
    assert held and all(g["transfer_event"] == "Memcpy DtoD (Device -> Device)" for g in held)
    # copying alone: the copies' time with no kernel beside them (one stream, one GPU; µs)
    kernels = sorted((e["ts"], e["ts"] + e["dur"]) for e in xs if e.get("cat") == "kernel")
    alone = sum(_outside(c["ts"], c["ts"] + c["dur"], kernels) for c in copies)
    assert run["summary"]["memory_ns"] == pytest.approx(alone * 1000, abs=len(copies) * 2)
    hints = [h["hint"] for h in run["hints"] if h["cause"] == "transfer"]
    assert hints and all("device-to-device" in h for h in hints)
    said = " ".join(h["hint"] for h in run["hints"])
    assert "pin" not in said and "non_blocking" not in said  # host-copy advice: not for DtoD


def _outside(lo: float, hi: float, spans: list[tuple[float, float]]) -> float:
    """The time of [lo, hi) that no span of ``spans`` covers."""
    left, at = 0.0, lo
    for s, e in spans:
        if e <= at or s >= hi:
            continue
        left += max(0.0, s - at)
        at = max(at, e)
    return left + max(0.0, hi - at)


def test_every_leaf_is_listed():
    if not REAL3.is_dir():
        pytest.skip(f"{REAL3} absent (see its SOURCE.md)")
    leaves = {p.parent.relative_to(REAL3).as_posix() for p in REAL3.rglob("*")
              if p.is_file() and p.name != "SOURCE.md"}  # fmt: skip
    leaves = {f.removesuffix("/json_reports") for f in leaves}
    assert leaves == set(LEAVES)
