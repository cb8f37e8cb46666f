"""Discovery finds every run it can read and says what it cannot (issue 37), as real
processes: a run folder holding another program's CACHEDIR.TAG, a run folder that is a
symbolic link (followed once; a link back up is not followed again), a tree 1,500 folders
deep, and a folder the user cannot read (as a user without root's overrides: a warning, the
other runs read). ``--cache-dir`` naming a folder of the user's writes no CACHEDIR.TAG into
it (backup tools would skip it), and traceana still never reads its own cache as a run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_process

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FOREIGN_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# another program's cache\n"


def runs_found(path: Path, *extra: object) -> list[str]:
    code, out, err, *_ = run_process("info", path, "--format", "json", "--no-cache", *extra)
    assert code == 0, err
    return sorted(r["root"] for r in json.loads(out)["runs"])


def copy_run(to: Path) -> Path:
    shutil.copytree(FIXTURES / "rmsnorm_naive", to, ignore=shutil.ignore_patterns(".traceana-*"))
    return to


def test_a_tag_another_program_wrote_and_a_linked_run_are_read(tmp_path):
    top = tmp_path / "top"
    for name in ("a", "b"):
        copy_run(top / name)
    (top / "b" / "CACHEDIR.TAG").write_text(FOREIGN_TAG)
    (top / "c").symlink_to(copy_run(tmp_path / "elsewhere"), target_is_directory=True)
    (top / "c" / "loop").symlink_to(top, target_is_directory=True)  # back up: not again
    found = runs_found(top)
    assert found == sorted(str(top / n) for n in ("a", "b", "c")), found


def test_a_tree_thousands_deep_is_walked(tmp_path):
    top = tmp_path / "deep"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    try:  # one folder in the last, by descriptors (os.makedirs itself recurses)
        for _ in range(1500):
            os.mkdir("d", dir_fd=fd)
            fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
            os.close(old)
        trace = next((FIXTURES / "rmsnorm_naive").rglob("trace.json")).read_bytes()
        out = os.open("trace.json", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, trace)
        os.close(out)
    finally:
        os.close(fd)
    try:
        code, out, err, *_ = run_process("gaps", top, "--no-cache")
        assert code == 0, err
        assert "RecursionError" not in err
    finally:
        _flatten(top)


def _flatten(top: Path) -> None:
    """Remove the chain of ``d`` folders under ``top`` a level at a time, from the top: each
    grandchild moved up in place of its parent (pytest's clean-up, shutil.rmtree, recurses)."""
    while (child := top / "d").is_dir():
        if (child / "d").is_dir():
            os.rename(child / "d", top / "next")
        for f in child.iterdir():
            f.unlink()
        child.rmdir()
        if (top / "next").is_dir():
            os.rename(top / "next", child)


def test_a_folder_the_user_cannot_read_is_said_and_the_others_read(tmp_path):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root to become a user without root's overrides (setpriv)")
    top = tmp_path / "top"
    for name in ("a", "b"):
        copy_run(top / name)
    for p in [tmp_path, *tmp_path.parents]:
        p.chmod(p.stat().st_mode | 0o005)
    subprocess.run(["chmod", "-R", "a+rX", str(top)], check=True)
    (top / "b").chmod(0)
    entry = "from trace_analyzer.cli import main; main()"
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
         entry, "gaps", str(top), "--no-cache", "--format", "json"],
        capture_output=True, text=True, cwd="/", timeout=120,
        env={k: v for k, v in os.environ.items() if k != "TRACEANA_CACHE_DIR"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert [r["root"] for r in runs] == [str(top / "a")]
    said = [w for r in runs for w in r["warnings"]]
    assert f"{top / 'b'}: a folder that cannot be read (Permission denied): skipped" in said


def test_a_cache_dir_of_the_users_gets_no_tag_and_is_never_a_run(tmp_path):
    top = tmp_path / "top"
    copy_run(top / "a")
    mine = top / "my-cache"  # the user's folder, inside what is scanned
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    code, _, err, *_ = run_process("gaps", top, "--cache-dir", mine)
    assert code == 0, err
    assert not (mine / "CACHEDIR.TAG").exists()
    assert len(list(mine.glob("*.parquet"))) > 0  # the cache is there
    assert runs_found(top) == [str(top / "a")]
    made = tmp_path / "made-by-traceana"
    code, _, err, *_ = run_process("gaps", top, "--cache-dir", made)
    assert code == 0, err
    assert (made / "CACHEDIR.TAG").is_file()


def _passed_by(top: Path) -> list[Path]:
    """Five runs under ``top``, and what discovery must pass by in them: two named pipes
    called like traces, and three links back to a folder already read."""
    for name in "abcde":
        copy_run(top / name)
    fifos = [top / "a" / "x.json", top / "b" / "y.json"]
    for f in fifos:
        os.mkfifo(f)
    links = [top / n / "up" for n in "cde"]
    for link in links:
        link.symlink_to(top, target_is_directory=True)
    return fifos + links


@pytest.mark.parametrize("command", ["gaps", "batch"])
def test_what_discovery_passed_by_is_one_line_a_kind_and_verbose_lists_it(tmp_path, command):
    top = tmp_path / "top"
    passed = _passed_by(top)
    out = ["-o", tmp_path / "t.parquet"] if command == "batch" else ["--no-cache"]
    code, _, err, *_ = run_process(command, top, *out)
    assert code == 0, err
    said = [line for line in err.splitlines() if line.startswith("traceana: warning:")]
    assert len(said) == 2, err  # one line per kind, each with its count
    fifo_line = next(line for line in said if "not regular files" in line)
    link_line = next(line for line in said if "links to a folder" in line)
    assert " 2 files named like a profile" in fifo_line and "--verbose" in fifo_line, err
    assert " 3 links to a folder already read" in link_line and "--verbose" in link_line, err
    out = ["-o", tmp_path / "t2.parquet"] if command == "batch" else ["--no-cache"]
    code, _, err, *_ = run_process(command, top, *out, "--verbose")
    assert code == 0, err
    for path in passed:  # each one, on a line of its own
        assert any(line.startswith(f"traceana: warning: {path}: ") for line in err.splitlines())
    if command == "batch":  # every run is a row: none of them was passed by
        import polars as pl

        assert sorted(pl.read_parquet(tmp_path / "t.parquet")["run_id"]) == [
            str(top / n) for n in "abcde"
        ]
