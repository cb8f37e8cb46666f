"""NEFF/NTFF pairs as Neuron really names them (issue 38), through ``traceana info`` as a real
process: stems that differ (``fused.neff`` beside ``fused_exec_2.ntff``, a NKI benchmark's, on
the real Trainium2 files of real3/allenkchau), a model-mode capture's ``neff_<id>_vnc_<v>.neff``
with ``<id>_vnc_<v>.ntff``, ``--profile-nth-exec``'s ``profile_exec_N.ntff``, and the NEFF name an
NTFF records near its start; several bare pairs in one folder, each paired right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_process

REAL3 = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "real3"


def pairs_of(path: Path) -> dict[str, tuple[str | None, str | None]]:
    code, out, err, *_ = run_process("info", path, "--no-cache", "--format", "json")
    assert code == 0, err
    (run,) = [r for r in json.loads(out)["runs"] if r["root"] == str(path)]
    return {Path(p["ntff"]).name: (p["neff"] and Path(p["neff"]).name, p["mode"])
            for p in run["neff_ntff"] if p["ntff"]}  # fmt: skip


@pytest.mark.parametrize("name", ["fused_attention", "baseline_bf16_s512"])
def test_a_nki_benchmarks_pair_whose_stems_differ(name):
    folder = REAL3 / "allenkchau" / name
    if not folder.is_dir():
        pytest.skip(f"{folder} absent (../shared/corpus/real3: see its SOURCE.md)")
    (ntff,) = folder.glob("*.ntff")
    (neff,) = folder.glob("*.neff")
    assert neff.stem != ntff.stem and neff.name.encode() in ntff.read_bytes()[:4096]
    (got,) = pairs_of(folder).items()
    assert got[0] == ntff.name and got[1][0] == neff.name, got
    code, out, err, *_ = run_process("info", folder, "--no-cache", "--format", "json")
    (run,) = [r for r in json.loads(out)["runs"] if r["root"] == str(folder)]
    assert run["unpaired"] == {"ntff": [], "neff": []}


def _ntff(path: Path, recorded: str | None = None) -> None:
    """Opaque NTFF bytes; with ``recorded``, the NEFF name as the runtime writes it (a
    protobuf string field: 0x0a, its length, the name) after some header bytes."""
    body = b"\x06X\x0c\x00" + bytes(range(1, 60))
    if recorded:
        body += b"\x0a" + bytes([len(recorded)]) + recorded.encode() + b"\x12\x12"
    path.write_bytes(body + b"\x00" * 64)


def test_several_bare_pairs_of_every_naming_in_one_folder(tmp_path):
    top = tmp_path / "bare"
    top.mkdir()
    for neff in ("attn.neff", "mlp.neff", "neff_123_vnc_0.neff", "neff_456_vnc_1.neff",
                 "w.neff", "renamed.neff"):  # fmt: skip
        (top / neff).write_bytes(b"NEFF")
    _ntff(top / "attn_exec_2.ntff")  # nki.benchmark: X_exec_N.ntff beside X.neff
    _ntff(top / "mlp_exec_1.ntff")
    _ntff(top / "123_vnc_0.ntff")  # a model-mode capture
    _ntff(top / "456_vnc_1.ntff")
    _ntff(top / "w.ntff")  # the same stem
    _ntff(top / "trace_a.ntff", recorded="renamed.neff")  # only its bytes name its NEFF
    assert pairs_of(top) == {
        "attn_exec_2.ntff": ("attn.neff", "exec"),
        "mlp_exec_1.ntff": ("mlp.neff", "exec"),
        "123_vnc_0.ntff": ("neff_123_vnc_0.neff", "model"),
        "456_vnc_1.ntff": ("neff_456_vnc_1.neff", "model"),
        "w.ntff": ("w.neff", "stem"),
        "trace_a.ntff": ("renamed.neff", "recorded"),
    }


def test_profile_nth_exec_pairs_with_the_neff_beside_it(tmp_path):
    run = tmp_path / "nth"
    run.mkdir()
    (run / "model.neff").write_bytes(b"NEFF")
    _ntff(run / "profile_exec_3.ntff")
    assert pairs_of(run) == {"profile_exec_3.ntff": ("model.neff", "capture")}
