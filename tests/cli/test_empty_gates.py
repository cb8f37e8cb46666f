"""A gate that compared nothing never passes (issue 39), in every command that gates, as real
processes: `gaps --fail-on`, `diff --fail-on`, `baseline compare`, `diff --engines --fail-on`
(`engines --base`).

When every condition's metric is undefined, the command exits 2 with one line naming what was
gated and why nothing was compared, and prints no report; `--allow-empty-gate` lets it pass
(exit 0), saying on stderr and in the report that it compared nothing. A gate of which only
some conditions compared nothing still fails on those (exit 1), as before.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import NAIVE_EXPORT, X, kineto, run_process, write_trace

ALLOW = "--allow-empty-gate"


def run(*args: object) -> tuple[int, str, str]:
    code, out, err, _, _ = run_process(*args)
    return code, out, err


def noted(result: tuple[int, str, str]) -> tuple[int, str, str]:
    """An older spelling's result (`baseline compare`) less the note it opens stderr with,
    naming `traceana diff` (issue 39)."""
    code, out, err = result
    note, _, rest = err.partition("\n")
    assert note.startswith("traceana: note: the one spelling of this comparison is: "), err
    return code, out, rest


def refused(code: int, out: str, err: str) -> str:
    """The one line of a gate refused for comparing nothing."""
    assert code == 2, (code, out, err)
    assert out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("traceana: error: ") and "the gate compared nothing" in line, line
    assert ALLOW in line
    return line


def host_refused(code: int, out: str, err: str) -> None:
    """The one line of a gate on hardware metrics between two host-only sides."""
    assert code == 2 and out == "", (code, out, err)
    (line,) = err.strip().splitlines()
    assert "idle_pct is measured on hardware" in line and "it would compare nothing" in line
    assert ALLOW in line


def allowed(code: int, out: str, err: str) -> None:
    assert code == 0, (code, out, err)
    (line,) = err.strip().splitlines()
    assert line.startswith("traceana: warning: ") and "the gate compared nothing" in line
    assert "the gate compared nothing" in out


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> Path:
    """A run with framework ops and no hardware execution (a CPU-only profile)."""
    folder = tmp_path_factory.mktemp("host") / "cpu"
    write_trace(folder / "trace.json", kineto([
        X("user_annotation", "ProfilerStep#3", 0, 900),
        X("cpu_op", "aten::add", 10, 50),
        X("cpu_op", "aten::mul", 100, 50),
    ]))  # fmt: skip
    return folder


def test_gaps_on_a_run_without_hardware(host):
    line = refused(*run("gaps", host, "--no-cache", "--fail-on", "idle_pct>20"))
    assert line == (f"traceana: error: {host}: the gate compared nothing ('idle_pct>20': "
                    "idle_pct is undefined (no hardware executions)); a gate that compared "
                    f"nothing never passes ({ALLOW} to let it)")  # fmt: skip
    allowed(*run("gaps", host, "--no-cache", "--fail-on", "idle_pct>20", ALLOW))
    # executions is measured (0): the gate compares something, and idle_pct fails unmeasured
    code, _, err = run("gaps", host, "--no-cache", "--fail-on", "idle_pct>20",
                       "--fail-on", "executions<1")  # fmt: skip
    assert code == 1 and "idle_pct is undefined" in err and "executions = 0" in err


def test_diff_and_baseline_compare_of_sides_without_hardware(host, tmp_path):
    gate = ("--fail-on", "idle_pct_delta>2", "--fail-on", "device_time_pct_delta>5")
    # two host-only sides are compared on the host (issue 39): a gate on hardware metrics there
    # would compare nothing, said so in one line, and passes only when allowed
    host_refused(*run("diff", host, host, "--no-cache", "--allow-empty", *gate))
    allowed(*run("diff", host, host, "--no-cache", "--allow-empty", *gate, ALLOW))
    saved = tmp_path / "base.json"
    code, _, err = run("baseline", "save", host, "-o", saved, "--allow-empty", "--no-cache")
    assert code == 0, err
    host_refused(*noted(run("baseline", "compare", saved, host, "--no-cache", "--allow-empty",
                            *gate)))  # fmt: skip
    code, out, err = noted(run("baseline", "compare", saved, host, "--no-cache", "--allow-empty",
                               *gate, ALLOW, "--format", "json"))  # fmt: skip
    assert code == 0, err
    (doc,) = json.loads(out)["runs"]
    assert doc["failed"] == [] and doc["gate_notes"][0].startswith("the gate compared nothing")


def test_engines_gate_on_figures_neither_export_has(tmp_path):
    # without Metadata there are no peaks (MFU undefined), without ActiveTime no active time
    sides = []
    for name in ("base", "head"):
        copy = Path(shutil.copytree(NAIVE_EXPORT, tmp_path / name / NAIVE_EXPORT.name))
        for table in ("Metadata", "ActiveTime"):
            (copy / f"{table}.parquet").unlink()
        sides.append(tmp_path / name)
    base, head = sides
    gate = ("--fail-on", "mfu_pct_delta<-1", "--fail-on", "tensor_active_pct_delta>10")
    line = refused(*run("diff", base, head, "--engines", *gate))
    assert line.startswith(f"traceana: error: {head} against {base}: the gate compared nothing")
    assert "mfu_pct_delta is undefined" in line and "tensor_active_pct_delta is undefined" in line
    allowed(*run("diff", base, head, "--engines", *gate, ALLOW))
