"""--strict: a run whose malformed events were dropped is an error, not a warning.

Cases from the broken-input corpus (tests/broken): those whose table entry says events are
dropped must fail under --strict, naming the run and every reason with its count; those with
nothing dropped (and the fixtures) must pass unchanged. From the cache too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import run_cli

BROKEN = Path(__file__).resolve().parents[1] / "broken"
sys.path.insert(0, str(BROKEN))
import make_broken  # noqa: E402

OK_CASES = [c for c in make_broken.CASES if c["expect"][0] == "ok"]
DROPS = [c for c in OK_CASES if c["expect"][1]["dropped"]]
CLEAN = [c for c in OK_CASES if not c["expect"][1]["dropped"]]


def path_of(case: dict) -> Path:
    return BROKEN / case["name"] / case["target"] if case["target"] else BROKEN / case["name"]


@pytest.mark.parametrize("case", DROPS, ids=[c["name"] for c in DROPS])
def test_drops_are_an_error_under_strict(case, tmp_path):
    assert DROPS, "the corpus has cases with drops"
    path = path_of(case)
    assert run_cli("gaps", path, "--no-cache")[0] == 0  # a warning without --strict
    for extra in (["--no-cache"], ["--cache-dir", tmp_path], ["--cache-dir", tmp_path]):
        code, out, err = run_cli("gaps", path, "--strict", *extra)  # fresh, then from the cache
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (extra, err)
        assert lines[0].startswith("traceana: error: ") and "(--strict)" in lines[0]
        for why, n in case["expect"][1]["dropped"].items():
            assert f"{n} with {why}" in lines[0]


@pytest.mark.parametrize("case", CLEAN[:4], ids=[c["name"] for c in CLEAN[:4]])
def test_nothing_dropped_passes_under_strict(case):
    code, _, err = run_cli("info", path_of(case), "--strict", "--no-cache")
    assert code == 0, err


def test_the_fixture_passes_under_strict():
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"
    assert run_cli("gaps", fixture, "--strict", "--no-cache")[0] == 0
