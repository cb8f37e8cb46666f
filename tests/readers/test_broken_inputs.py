"""The corpus of broken inputs (tests/broken, written by tests/broken/make_broken.py).

Each case must give either exit 2 and one stderr line naming the file and the problem, or
exit 0 with the documented warning (or drop counts) and correct numbers for the good events.
Expected numbers come from the generator's table, never from traceana.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import one_line_error, run_cli

BROKEN = Path(__file__).resolve().parents[1] / "broken"
SCRIPT = BROKEN / "make_broken.py"

_spec = importlib.util.spec_from_file_location("make_broken", SCRIPT)
make_broken = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_broken)
CASES = {c["name"]: c for c in make_broken.CASES}


def path_of(case: dict) -> Path:
    return BROKEN / case["name"] / case["target"] if case["target"] else BROKEN / case["name"]


def _params():
    for name, case in CASES.items():
        marks = [pytest.mark.xfail(strict=True, reason=case["bug"])] if case["bug"] else []
        for command in ("info", "gaps"):
            yield pytest.param(name, command, marks=marks, id=f"{name}-{command}")


def check_error(case: dict, code: int, out: str, err: str) -> None:
    line = one_line_error(code, out, err)
    assert line.startswith("traceana: error: "), line
    assert str(path_of(case)) in line, line
    assert case["expect"][1].lower() in line.lower(), line
    assert "internal error" not in err


def check_ok_info(case: dict, code: int, out: str, err: str) -> None:
    assert code == 0, (code, err)
    expect = case["expect"][1]
    run = json.loads(out)["runs"][0]
    assert run["events"] == expect["events"]
    assert run["dropped"] == expect["dropped"]
    if expect["warning"]:
        assert any(expect["warning"] in w for w in run["warnings"]), run["warnings"]
    else:
        assert run["warnings"] == []
    if expect["dropped"]:  # the drop is a warning that names the profile and each reason
        line = next(w for w in run["warnings"] if "malformed events dropped" in w)
        assert all(f"{n} with {why}" in line for why, n in expect["dropped"].items()), line
    if expect["note"]:
        notes = run["notes"] + [n for s in run["sources"] for n in s["notes"]]
        assert any(expect["note"] in n for n in notes), notes
    for key in ("start_ns", "end_ns"):
        if expect[key] is not None:
            assert run[key] == expect[key], key


def check_ok_gaps(case: dict, code: int, out: str, err: str) -> None:
    assert code == 0, (code, err)
    expect = case["expect"][1]["gaps"]
    summary = json.loads(out)["runs"][0]["summary"]
    assert {k: summary[k] for k in expect} == expect


@pytest.mark.parametrize("name,command", list(_params()))
def test_case(name, command):
    case = CASES[name]
    args = ["info", path_of(case), "--format", "json"] if command == "info" else \
        ["gaps", path_of(case), "--format", "json"]
    code, out, err = run_cli(*args)
    assert "Traceback" not in err
    if case["expect"][0] == "error":
        check_error(case, code, out, err)
    elif command == "info":
        check_ok_info(case, code, out, err)
    else:
        check_ok_gaps(case, code, out, err)


@pytest.mark.parametrize("name", [n for n, c in CASES.items()
                                  if c["expect"][0] == "ok" and c["expect"][1]["warning"]
                                  and not c["bug"]])
def test_warning_is_shown_in_the_text_report(name):
    code, out, err = run_cli("info", path_of(CASES[name]))
    assert code == 0, err
    assert CASES[name]["expect"][1]["warning"] in out


# Errors from each reader, a warning, the deepest input and the known crash: a process
# costs about a second of imports, so not every case runs this way (all do in-process).
AS_PROCESS = ("trunc_in_string", "deep_top_level", "pq_start_ts_text",
              "legacy_missing_timestamp", "huge_step_number")


def test_cases_as_a_process_have_no_traceback(tmp_path):
    """The real command (not click's runner), several cases at once: no traceback on stderr,
    the exit code and one-line contract hold."""
    env = {**os.environ, "TRACEANA_CACHE_DIR": str(tmp_path / "cache")}
    entry = "from trace_analyzer.cli import main; main()"
    procs = {name: subprocess.Popen([sys.executable, "-c", entry, "info", str(path_of(c))],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env)
             for name, c in ((n, CASES[n]) for n in AS_PROCESS)}
    failures = []
    for name, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            failures.append(f"{name}: hung")
            continue
        case = CASES[name]
        if "Traceback" in err:
            failures.append(f"{name}: traceback\n{err}")
            continue
        if case["bug"]:
            continue  # known, xfail above; it must still not print a traceback
        try:
            if case["expect"][0] == "error":
                check_error(case, proc.returncode, out, err)
            else:
                assert proc.returncode == 0, (proc.returncode, err)
        except AssertionError as e:
            failures.append(f"{name}: {e}")
    assert not failures, "\n".join(failures)


def test_every_case_has_its_files_and_nothing_else():
    on_disk = {p.name for p in BROKEN.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert on_disk == set(CASES)
    for case in CASES.values():
        assert path_of(case).exists(), case["name"]
    assert len(CASES) == len(make_broken.CASES)  # no name twice


def test_corpus_is_small():
    size = sum(p.stat().st_size for p in BROKEN.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert size < 300_000


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.parent != root and "__pycache__" not in p.parts}


def test_regenerating_gives_the_same_bytes(tmp_path):
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], check=True)
    fresh, checked_in = _files(tmp_path), _files(BROKEN)
    assert sorted(fresh) == sorted(checked_in)
    changed = [name for name in fresh if fresh[name] != checked_in[name]]
    assert not changed, f"regenerated files differ: {changed}"
