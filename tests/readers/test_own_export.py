"""traceana's own export, written inside the profile folder, is not read as another trace
of the run (issue 15): `traceana export P -o P/annotated.json` then `traceana gaps P`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import run_cli

NAIVE = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"


def gaps_json(path: Path) -> dict:
    code, out, err = run_cli("gaps", path, "--format", "json", "--no-cache")
    assert code == 0, err
    return json.loads(out)["runs"][0]


def test_an_export_inside_the_run_changes_nothing_and_is_noted(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(NAIVE, run)
    before = gaps_json(run)
    code, _, err = run_cli("export", run, "-o", run / "annotated.json", "--no-cache")
    assert code == 0, err
    after = gaps_json(run)
    assert after["summary"] == before["summary"]
    assert after["summary"]["devices"] == 1  # the fixture's truth: one NeuronCore
    code, out, err = run_cli("info", run, "--format", "json", "--no-cache")
    (info,) = json.loads(out)["runs"]
    (source,) = [s for s in info["sources"] if s["path"].endswith("annotated.json")]
    assert not source["read"] and "traceana's own export" in source["notes"][0]


def test_every_output_written_into_the_run_is_skipped_with_what_it_is(tmp_path):
    """The JSON of gaps/ops/chain/info, graph's node-link JSON and a shell redirect's empty
    file, all written inside the run folder: the run's answer is unchanged, each file is
    noted with what it is, and named directly each is refused with that line (exit 2)."""
    run = tmp_path / "run"
    shutil.copytree(NAIVE, run)
    before = gaps_json(run)
    for command in ("gaps", "ops", "chain", "info"):
        code, out, err = run_cli(command, run, "--format", "json", "--no-cache")
        assert code == 0, err
        (run / f"{command}.json").write_text(out)
    code, _, err = run_cli("graph", run, "-o", run / "g.json", "--no-cache")
    assert code == 0, err
    (run / "redirect.json").write_bytes(b"")  # `traceana gaps P --format json > P/x.json`
    assert gaps_json(run)["summary"] == before["summary"]
    code, out, _ = run_cli("info", run, "--format", "json", "--no-cache")
    notes = {Path(s["path"]).name: (s["read"], s["notes"][0])
             for s in json.loads(out)["runs"][0]["sources"] if not s["read"]}
    for name in ("gaps.json", "ops.json", "chain.json", "info.json"):
        assert notes[name] == (False, notes[name][1]) and "traceana's own JSON output" in notes[name][1]
    assert "node-link JSON" in notes["g.json"][1]
    assert "empty file" in notes["redirect.json"][1]
    for name, what in (("gaps.json", "traceana's own JSON output"), ("g.json", "node-link")):
        code, out, err = run_cli("gaps", run / name, "--no-cache")
        assert code == 2 and what in err and len(err.strip().splitlines()) == 1, err
