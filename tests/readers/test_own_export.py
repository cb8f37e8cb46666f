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
