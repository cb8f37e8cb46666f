"""docs/library.md is a notebook session: every example in it runs, with the output shown."""

from __future__ import annotations

import doctest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_notebook_session_in_docs_library_md_runs(monkeypatch):
    monkeypatch.chdir(ROOT)  # the session loads fixtures/ by relative path
    result = doctest.testfile(
        str(ROOT / "docs" / "library.md"),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        report=True,
    )
    assert result.attempted >= 25, result
    assert result.failed == 0, result
