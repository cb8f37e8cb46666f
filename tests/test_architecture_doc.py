"""docs/architecture.md tells the truth about the package's files (issue 33).

Its "Modules" table has one row per folder (or file) of trace_analyzer/: the first cell names
it (`questions/gaps/`), the second says what each of its modules is for, each named by its
file name (`analysis.py`). Every module of the package is named in the row of its folder (an
empty ``__init__.py`` excepted), and every file a row names exists; the registry names the
same questions as the table's ``questions/<name>/`` rows.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "trace_analyzer"
DOC = ROOT / "docs" / "architecture.md"


def table_rows() -> dict[str, str]:
    """The Modules table: the folder or file of each row (as written) -> its text."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        for where in re.findall(r"`([^`]+)`", cells[0]):
            rows[where] = cells[1]
    return rows


def named_files(where: str, text: str) -> set[str]:
    """The files of ``where`` (a folder: its modules by file name) that ``text`` names."""
    return {n for n in re.findall(r"`([\w./]+\.(?:py|c|h))`", text) if "/" not in n}


def unnamed(paths: list[Path]) -> list[str]:
    """The modules among ``paths`` (under trace_analyzer/) that the table does not name."""
    rows = table_rows()
    missing = []
    for path in sorted(paths):
        rel = path.relative_to(PACKAGE)
        if path.name == "__init__.py" and path.exists() and not path.read_text().strip():
            continue
        if rel.parent == Path("."):
            if rel.as_posix() not in rows:
                missing.append(rel.as_posix())
            continue
        folder = f"{rel.parent.as_posix()}/"
        if folder not in rows or path.name not in named_files(folder, rows[folder]):
            missing.append(rel.as_posix())
    return missing


def test_every_module_is_in_the_table_of_its_folder():
    missing = unnamed(list(PACKAGE.rglob("*.py")))
    assert not missing, "docs/architecture.md's Modules table does not name: " + ", ".join(missing)


def test_the_check_reports_a_module_the_table_lacks():
    planted = PACKAGE / "questions" / "gaps" / "planted.py"  # not written: only named
    assert unnamed([planted]) == ["questions/gaps/planted.py"]
    assert unnamed([PACKAGE / "questions" / "gaps" / "analysis.py"]) == []


def test_every_file_the_table_names_exists():
    absent = []
    for where, text in table_rows().items():
        if not where.endswith("/"):
            if not (PACKAGE / where).exists():
                absent.append(where)
            continue
        if not (PACKAGE / where).is_dir():
            absent.append(where)
            continue
        absent += [where + n for n in named_files(where, text) if not (PACKAGE / where / n).exists()]
    assert not absent, absent


def test_the_table_has_a_row_for_every_registered_question():
    from trace_analyzer.questions import QUESTIONS

    folders = {w.split("/")[1] for w in table_rows() if w.startswith("questions/") and w != "questions/"}
    homes = {q.command.split(".")[2] for q in QUESTIONS if q.command.startswith("trace_analyzer.questions.")}
    assert homes <= folders, homes - folders
