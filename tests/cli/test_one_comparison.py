"""One way to compare (issue 39; docs/output.md, "Conventions"): `traceana diff BASE HEAD`.

`traceana engines HEAD --base BASE` is `traceana diff BASE HEAD --engines`, and `traceana
baseline compare FILE HEAD` is `traceana diff FILE HEAD`: each older spelling gives the same
standard output and exit status, and says the one spelling on stderr in one line first.
`diff` compares device profiles itself (one implementation: questions/engines/diff.py's
``compare_runs``), with --engines or where the sides hold exports and not both a system
profile.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import one_line_error, run_cli

ROOT = Path(__file__).resolve().parents[2]
NAIVE, FUSED = ROOT / "fixtures" / "rmsnorm_naive", ROOT / "fixtures" / "rmsnorm_fused"
COMPILED = ROOT / "fixtures" / "rmsnorm_compiled"
NOTE = "traceana: note: the one spelling of this comparison is: "
GATE = ("--fail-on", "window_pct_delta>5")


def engines_note(base: Path, head: Path) -> str:
    return (f"{NOTE}traceana diff {base} {head} --engines (engines --base, its older one, "
            'stays; docs/output.md, "Conventions")')  # fmt: skip


def same_but_the_note(old: tuple[int, str, str], new: tuple[int, str, str], note: str) -> None:
    """``old`` (the older spelling's exit, stdout, stderr) is ``new`` with ``note`` first."""
    assert old[0] == new[0] and old[1] == new[1]
    assert old[2].splitlines() == [note, *new[2].splitlines()]
    assert note not in new[2]


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "csv"])
@pytest.mark.parametrize("base,head", [(FUSED, NAIVE), (NAIVE, FUSED), (FUSED, COMPILED)])
def test_engines_base_is_diff_engines(base, head, fmt):
    old = run_cli("engines", head, "--base", base, "--format", fmt)
    new = run_cli("diff", base, head, "--engines", "--format", fmt)
    assert new[0] == 0, new[2]
    same_but_the_note(old, new, engines_note(base, head))


def test_the_readme_gate_exits_1_in_both_spellings():
    # README: `traceana engines fixtures/rmsnorm_naive --base fixtures/rmsnorm_fused
    # --fail-on 'window_pct_delta>5'`, two device profiles gated: exit 1, 6.7x slower
    old = run_cli("engines", NAIVE, "--base", FUSED, *GATE)
    new = run_cli("diff", FUSED, NAIVE, "--engines", *GATE)
    assert new[0] == 1 and "--fail-on 'window_pct_delta>5' failed" in new[2]
    same_but_the_note(old, new, engines_note(FUSED, NAIVE))
    # the options of a device comparison reach it alike in both spellings
    more = ("--neff", "*", "--top", "3", "--allow-empty-gate", "--no-cache", "--format", "json")
    old = run_cli("engines", NAIVE, "--base", FUSED, *GATE, *more)
    new = run_cli("diff", FUSED, NAIVE, "--engines", *GATE, *more)
    same_but_the_note(old, new, engines_note(FUSED, NAIVE))
    assert json.loads(new[1])["base"] == str(FUSED)


def test_diff_of_two_bare_exports_compares_them_without_being_asked():
    base, head = FUSED / "device_profiles", NAIVE / "device_profiles"  # no system profile
    code, out, err = run_cli("diff", base, head, *GATE)
    assert (code, out, err) == run_cli("diff", base, head, "--engines", *GATE)
    assert code == 1 and out.startswith(f"engines: {head} against {base}")


def test_diff_of_runs_that_hold_both_compares_the_system_profiles():
    code, out, err = run_cli("diff", NAIVE, FUSED, "--no-cache")
    assert code == 0, err
    assert out.startswith(f"diff: {NAIVE} → {FUSED}") and not err


def test_options_of_one_kind_of_comparison_are_refused_by_the_other():
    line = one_line_error(*run_cli("diff", NAIVE, FUSED, "--engines", "--step", "3"))
    assert line == ("traceana: error: --step does not apply to a comparison of device profiles "
                    "(--engines), NEFF by NEFF: leave it out")  # fmt: skip
    line = one_line_error(*run_cli("diff", NAIVE, FUSED, "--engines", "--min-runs", "2"))
    assert "--min-runs does not apply" in line
    line = one_line_error(*run_cli("diff", NAIVE, FUSED, "--neff", "*", "--no-cache"))
    assert line == "traceana: error: --neff picks the NEFFs of device profiles: add --engines"
    line = one_line_error(*run_cli("diff", NAIVE, FUSED, "--engines", "--fail-on",
                                   "idle_pct_delta>2"))  # fmt: skip
    assert "unknown metric 'idle_pct_delta'" in line and "window_pct_delta" in line


def test_baseline_compare_is_diff_with_a_note(tmp_path):
    saved = tmp_path / "naive.json"
    assert run_cli("baseline", "save", NAIVE, "-o", saved, "--no-cache")[0] == 0
    old = run_cli("baseline", "compare", saved, FUSED, "--no-cache", "--format", "json")
    new = run_cli("diff", saved, FUSED, "--no-cache", "--format", "json")
    assert new[0] == 0, new[2]
    note = (f"{NOTE}traceana diff {saved} {FUSED} (baseline compare, its older one, stays; "
            'docs/output.md, "Conventions")')  # fmt: skip
    same_but_the_note(old, new, note)
    help_text = run_cli("baseline", "compare", "--help")[1]
    assert "The same as `traceana diff BASE HEAD`" in help_text and "--engines" in help_text


def test_a_path_the_note_names_is_quoted_for_a_shell(tmp_path):
    import shutil

    odd = tmp_path / "a b"
    shutil.copytree(FUSED / "device_profiles", odd)
    code, _, err = run_cli("engines", NAIVE, "--base", odd)
    assert code == 0, err
    assert f"traceana diff '{odd}' {NAIVE} --engines" in err.splitlines()[0]
