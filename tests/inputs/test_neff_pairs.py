"""NEFF/NTFF pairing by stem (``nki.benchmark(save_neff_name=, save_trace_name=)`` pairs renamed
to ``X.neff``/``X.ntff``), the unpaired files and the device export commands ``info`` lists
(docs/formats.md, "NEFF/NTFF pairing"; docs/neuron-formats.md §1.4; issue 15)."""

from __future__ import annotations

import shlex

from conftest import info_json, run_cli, write_trace

STEMS = ("rmsnorm_kernel", "matmul_v2", "softmax.tiled")


def touch(path):
    """Write placeholder bytes: traceana never decodes a NEFF or an NTFF."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x00placeholder")
    return path


def only_run(path) -> dict:
    runs = info_json(path)["runs"]
    assert len(runs) == 1
    return runs[0]


def benchmark_folder(folder, stems=STEMS):
    """Three (or more) renamed nki.benchmark pairs in one folder: {stem: (neff, ntff)}."""
    return {s: (touch(folder / f"{s}.neff"), touch(folder / f"{s}.ntff")) for s in stems}


def test_same_stem_pairs_in_one_folder_pair_by_stem(tmp_path):
    made = benchmark_folder(tmp_path)
    run = only_run(tmp_path)
    got = {(p["ntff"], p["neff"], p["mode"]) for p in run["neff_ntff"]}
    assert got == {(str(ntff), str(neff), "stem") for neff, ntff in made.values()}
    assert run["unpaired"] == {"ntff": [], "neff": []}


def test_stem_pairs_sit_beside_model_mode_pairs(tmp_path):
    made = benchmark_folder(tmp_path, STEMS[:1])
    h = "395760075800974"
    model_ntff, model_neff = touch(tmp_path / f"{h}_instid_0_vnc_0.ntff"), touch(tmp_path / f"neff_{h}.neff")
    run = only_run(tmp_path)
    got = {(p["ntff"], p["neff"], p["mode"]) for p in run["neff_ntff"]}
    (neff, ntff), = made.values()
    assert got == {(str(ntff), str(neff), "stem"), (str(model_ntff), str(model_neff), "model")}


def test_a_lone_pair_still_pairs_with_the_one_neff_beside_it(tmp_path):
    ntff, neff = touch(tmp_path / "profile.ntff"), touch(tmp_path / "file.neff")
    run = only_run(tmp_path)
    assert [(p["ntff"], p["neff"], p["mode"]) for p in run["neff_ntff"]] == [
        (str(ntff), str(neff), "capture")]


def test_unpaired_files_are_listed_by_name(tmp_path):
    benchmark_folder(tmp_path)
    orphan, lonely = touch(tmp_path / "orphan.ntff"), touch(tmp_path / "lonely.neff")
    run = only_run(tmp_path)
    assert run["unpaired"] == {"ntff": [str(orphan)], "neff": [str(lonely)]}
    code, out, _ = run_cli("info", tmp_path, "--no-cache")
    assert code == 0
    assert f"- NTFF without a NEFF: {orphan}" in out.splitlines()
    assert f"- NEFF without an NTFF: {lonely}" in out.splitlines()
    assert "1 NTFF(s) have no NEFF paired with them" in out


def test_the_export_command_names_each_pair(tmp_path):
    folder = tmp_path / "bench out"  # a space, and a quote in a name: quoted for the shell
    made = benchmark_folder(folder, (*STEMS, "it's"))
    run = only_run(folder)
    parsed = sorted(shlex.split(c) for c in run["device_export"])
    want = sorted(["neuron-explorer", "view", "-n", str(neff), "-s", str(ntff), "--output-format",
                   "parquet"] for neff, ntff in made.values())
    assert parsed == want
    spaced = next(c for c in run["device_export"] if "matmul_v2" in c)
    assert f"-n '{folder}/matmul_v2.neff'" in spaced  # the POSIX single-quoted form
    code, out, _ = run_cli("info", folder, "--no-cache")
    assert code == 0
    for c in run["device_export"]:
        assert f"    {c}" in out.splitlines()
    code, out, _ = run_cli("info", folder, "--no-cache", "--format", "markdown")
    block = out.split("```sh\n")[1].split("\n```")[0].splitlines()
    assert sorted(block) == sorted(run["device_export"])


def test_no_export_command_beside_an_explorer_export(tmp_path):
    benchmark_folder(tmp_path)
    write_trace(tmp_path / "system_profile.json", {"trace_event": [
        {"name": "nc_exec_running", "timestamp": 1_793_620_800_001_000_000, "duration": 10,
         "id": 1, "process_id": 42, "nc_idx": 0, "trace_event_source": "neuron_hw"}]})
    run = only_run(tmp_path)
    assert run["device_export"] == []


def test_no_see_warnings_without_warnings(tmp_path):
    benchmark_folder(tmp_path)
    run = only_run(tmp_path)
    assert run["warnings"] == []
    (note,) = [n for n in run["notes"] if n.startswith("no hardware lanes read")]
    assert "see warnings" not in note and "warnings" not in note
    assert '"device export" lists the command' in note
    code, out, _ = run_cli("info", tmp_path, "--no-cache")
    assert "see warnings" not in out and "\nwarnings\n" not in out


def test_unpaired_ntffs_alone_say_why_there_is_no_command(tmp_path):
    touch(tmp_path / "a.ntff"), touch(tmp_path / "b.ntff")
    touch(tmp_path / "x.neff"), touch(tmp_path / "y.neff")
    run = only_run(tmp_path)
    assert run["device_export"] == [] and run["warnings"] == []
    (note,) = [n for n in run["notes"] if n.startswith("no hardware lanes read")]
    assert "warnings" not in note and "2 NTFF(s) have no NEFF paired with them" in note


def test_warnings_are_pointed_at_only_when_there_are_some(tmp_path):
    session = tmp_path / "i-0abc_pid_42" / "20261101_120000_000"
    touch(session / "ntrace.pb"), touch(session / "trace_info.pb")
    touch(session / "profile_nc_0_session_0.ntff")
    touch(session / "neff_395760075800974_vnc_0.neff")
    run = only_run(tmp_path)
    assert any("ntrace.pb" in w for w in run["warnings"])
    (note,) = [n for n in run["notes"] if n.startswith("no hardware lanes read")]
    assert "the warnings say how to export ntrace.pb" in note
    assert run["unpaired"] == {"ntff": [], "neff": []}  # session mode pairs by time, not name
    assert run["device_export"] == []
