"""Every CLI output on the fixtures and the corpus is byte-identical to the golden files.

The golden files (tests/golden/cases/) were written by make_golden.py before issue 14's
restructuring, from the code as it was; a change that alters what a user sees must
rewrite them on purpose (``python tests/golden/make_golden.py``) and say why.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import make_golden as mg
import pytest

CASES = mg.cases()
TREND = [name for name in sorted(p.name for p in mg.CASES_DIR.iterdir()) if name.startswith("trend.")]


def _explain(name: str, part: str, want: bytes | None, got: bytes) -> str:
    if want is None:
        return f"{name}: {part} is new (not in the golden files)"
    diff = difflib.unified_diff(want.decode(errors="replace").splitlines(),
                                got.decode(errors="replace").splitlines(),
                                "golden", "now", lineterm="", n=1)
    return f"{name}/{part} differs:\n" + "\n".join(list(diff)[:40])


def _compare(name: str, got: dict[str, bytes]) -> None:
    folder = mg.CASES_DIR / name
    assert folder.is_dir(), f"{name}: no golden files; run tests/golden/make_golden.py"
    stored = {p.name.removesuffix(".gz") for p in folder.iterdir()}
    assert set(got) == stored, f"{name}: outputs {sorted(got)}, golden {sorted(stored)}"
    for part, data in got.items():
        want = mg.stored(name, part)
        assert want == data, _explain(name, part, want, data)


@pytest.mark.parametrize("name,argv", CASES, ids=[c[0] for c in CASES])
def test_output_unchanged(name, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(mg.ROOT)
    _compare(name, mg.run_case(argv, tmp_path))


def test_corpus_cases_ran_or_said_why():
    if not (mg.ROOT / mg.CORPUS).is_dir():
        pytest.skip(f"{mg.ROOT / mg.CORPUS} is absent: the corpus cases are not compared")
    assert any(name.startswith("corpus.") for name, _ in CASES)


def test_trend_unchanged(tmp_path, monkeypatch):
    """`trend` over the batch table of the fixtures (fixed mtimes, as make_golden writes)."""
    monkeypatch.chdir(mg.ROOT)
    results = {}
    for name, argv in mg.cases():
        if name == "batch.fixtures":
            break
    out = tmp_path / "out"
    out.mkdir()
    mg.run_case(argv, out)
    keep = tmp_path / "keep"
    keep.mkdir()
    mg.fix_mtimes(out / "runs.parquet", keep / "runs.parquet")
    for tname, targv in mg.trend_cases(keep):
        o = tmp_path / tname
        o.mkdir()
        results[tname] = {k: v.replace(str(keep).encode(), b"<TABLE>")
                          for k, v in mg.run_case(targv, o).items()}
    assert sorted(results) == TREND
    for tname, got in results.items():
        _compare(tname, got)
    shutil.rmtree(out)
