"""One cache entry for a run however its path is spelled (issue 19; docs/cache.md, "The key").

``run``, ``./run/``, ``/abs/run``, the folder through a link to its parent, and ``.`` from
inside it are one run: the second spelling is a hit on the first one's entry (no source read,
no file of the entry written again), and prints what a --no-cache run of that spelling prints,
byte for byte: the path as typed, in the title, the sources and the warnings. A stored answer
that does not show the path (CSV) is replayed for every spelling; one that does, only for its
own. Hits are told by counting ``profile.read_source`` calls (a miss reads the sources).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
NAIVE = ROOT / "fixtures" / "rmsnorm_naive"
CACHE = ".traceana-cache"


def kernel(name: str, ts: object, dur: float) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 1, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7}}


def warned_run(folder: Path) -> Path:
    """A Kineto run whose warnings name its files and its root: a copy of its trace (read
    once), and malformed events (an end before its start, a start that is not a number)."""
    events = [kernel("a", 0, 10), kernel("b", 15, 10), kernel("c", 40, -5), kernel("d", 50, 10),
              kernel("e", "soon", 3)]
    doc = {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
           "baseTimeNanoseconds": 10**9, "traceEvents": events}
    folder.mkdir(parents=True)
    for name in ("trace.json", "trace2.json"):
        (folder / name).write_text(__import__("json").dumps(doc))
    return folder




@pytest.fixture(autouse=True)
def _no_cache_variable(monkeypatch):
    monkeypatch.delenv("TRACEANA_CACHE_DIR", raising=False)
    monkeypatch.delenv("TRACEANA_NO_CACHE", raising=False)
    monkeypatch.setenv("TRACEANA_CACHE_IN_PROFILE", "1")  # the cache inside the run, as asked


def spellings(run: Path, link: Path) -> list[tuple[Path, str]]:
    """(working directory, the path as typed) for five spellings of ``run``."""
    parent = run.parent
    return [(parent, run.name), (parent, f"./{run.name}/"), (parent, str(run)),
            (parent, str(link / run.name)), (run, ".")]


def entry_files(run: Path) -> dict[str, int]:
    """The cache's files but answers, with their inodes (a file written again: a new inode)."""
    return {f.name: f.stat().st_ino for f in (run / CACHE).iterdir()
            if not f.name.startswith("answer-")}


@pytest.mark.parametrize("make", ["fixture", "warned"])
@pytest.mark.parametrize("command", [("gaps", "--format", "json"), ("info", "--format", "json"),
                                     ("gaps",), ("chain", "--format", "json")])
def test_every_spelling_hits_the_one_entry_and_prints_its_own_spelling(
    tmp_path, monkeypatch, reads, make, command
):
    run = tmp_path / "data" / "run"
    if make == "fixture":
        shutil.copytree(NAIVE, run, ignore=shutil.ignore_patterns(CACHE))
    else:
        warned_run(run)
    link = tmp_path / "link"
    link.symlink_to(run.parent)
    kept = None
    for i, (cwd, typed) in enumerate(spellings(run, link)):
        monkeypatch.chdir(cwd)
        fresh = run_cli(command[0], typed, *command[1:], "--no-cache")
        before = reads.n
        cached = run_cli(command[0], typed, *command[1:])
        assert cached == fresh, typed  # stdout, stderr (the warning lines) and exit alike
        if make == "warned":
            assert typed in cached[1] + cached[2] or typed == f"./{run.name}/", typed
        if i == 0:
            kept = entry_files(run)
            continue
        assert reads.n == before, f"{typed}: the run was read again, not found in the cache"
        assert entry_files(run) == kept, f"{typed}: the cache was written again"


def test_a_cache_folder_of_one_s_own_holds_one_entry_for_every_spelling(tmp_path, monkeypatch,
                                                                        reads):
    run = warned_run(tmp_path / "data" / "run")
    (tmp_path / "link").symlink_to(run.parent)
    cache = tmp_path / "cache"
    for i, (cwd, typed) in enumerate(spellings(run, tmp_path / "link")):
        monkeypatch.chdir(cwd)
        fresh = run_cli("ops", typed, "--no-cache", "--format", "json")
        before = reads.n
        assert run_cli("ops", typed, "--cache-dir", str(cache), "--format", "json") == fresh
        assert (reads.n - before == 0) == (i > 0), typed  # only the first reads the run
    assert len(list(cache.glob("*.events.parquet"))) == 1


def test_a_sentence_that_is_not_plainly_the_path_keeps_the_entry_to_its_spelling():
    from trace_analyzer.cache import spelling

    names = frozenset({"trace.json", "sub"})
    # plainly paths: the root at the start, and files under it after a space or a bracket
    said = "run: 3 dropped (run/trace.json, run/sub/x.json)"
    assert spelling.respell_text(said, "run", "/d/run", names) == (
        "/d/run: 3 dropped (/d/run/trace.json, /d/run/sub/x.json)")
    assert spelling.respell_text("run/trace.json: bad", "run", ".", names) == "trace.json: bad"
    assert spelling.respell_text(".: dropped", ".", "/d/run", names) == "/d/run: dropped"
    # not plainly: inside another path, a word of the sentence, the real path, a bare "."
    assert spelling.respell_text("/tmp/run/trace.json: bad", "run", "x", names) is None
    assert spelling.respell_text("the run: done", "run", "x", names) is None
    assert spelling.respell_text("a link (to /d/run/f)", "/d/run", "x", names, "/d/run") is None
    assert spelling.respell_text("trace.json: bad", ".", "/d/run", names) is None
    # paths respell exactly, as pathlib joins them, or not at all
    assert spelling.respell_path("run/sub/x.json", "run", ".") == "sub/x.json"
    assert spelling.respell_path("sub/x.json", ".", "/d/run") == "/d/run/sub/x.json"
    assert spelling.respell_path("/r/x.json", "/", "/d") == "/d/r/x.json"
    assert spelling.respell_path("runs/x.json", "run", "/d/run") is None


def test_an_entry_naming_its_real_path_in_a_sentence_is_read_afresh_elsewhere(
    tmp_path, monkeypatch, reads
):
    # typed as its own real path, the run's warnings name it so: a mention that could be the
    # spelling or the real path (which a fresh read keeps): another spelling reads afresh
    run = warned_run(Path(os.path.realpath(tmp_path)) / "data" / "run")
    monkeypatch.chdir(run.parent)
    first = run_cli("gaps", str(run), "--format", "json")
    assert str(run) in first[1]
    before = reads.n
    assert run_cli("gaps", "run", "--format", "json") == run_cli(
        "gaps", "run", "--format", "json", "--no-cache"
    )
    assert reads.n > before  # a miss, as correctness asks
    before = reads.n
    assert run_cli("gaps", str(run), "--format", "json") == first
    assert reads.n == before  # the entry the miss wrote is portable: respelled back
    assert len(list((run / CACHE).glob("*.events.parquet"))) == 1  # one entry, replaced


ENTRY = ("import atexit, sys; atexit.register(lambda: sys.__stderr__.write("
         "'polars imported: %s\\n' % ('polars' in sys.modules))); "
         "from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()")


def traceana(*args: object, cwd: Path) -> tuple[int, str, str, bool]:
    environ = {k: v for k, v in os.environ.items() if k != "TRACEANA_CACHE_DIR"}
    environ["TRACEANA_CACHE_IN_PROFILE"] = "1"
    proc = subprocess.run([sys.executable, "-c", ENTRY, *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=environ, timeout=120)
    *lines, last = proc.stderr.splitlines(keepends=True)
    return proc.returncode, proc.stdout, "".join(lines), last.strip().endswith("True")


def test_an_answer_that_does_not_show_the_path_is_found_for_every_spelling(tmp_path):
    # a name no CSV cell holds: an answer that holds the path as typed anywhere, even inside
    # another word, is kept for that spelling only
    run = tmp_path / "data" / "prof7q"
    shutil.copytree(NAIVE, run, ignore=shutil.ignore_patterns(CACHE))
    (tmp_path / "link").symlink_to(run.parent)
    first = traceana("gaps", "prof7q", "--format", "csv", cwd=run.parent)
    assert first[0] == 0 and first[3] and "prof7q" not in first[1]
    for cwd, typed in spellings(run, tmp_path / "link")[2:]:
        again = traceana("gaps", typed, "--format", "csv", cwd=cwd)
        assert again == (*first[:3], False), typed  # replayed: the same bytes, no polars
    # the table shows the path as typed: answered for its own spelling only
    shown = traceana("gaps", "prof7q", cwd=run.parent)
    other = traceana("gaps", str(run), cwd=run.parent)
    assert shown[1].startswith("gaps: prof7q\n") and other[1].startswith(f"gaps: {run}\n")
    assert other[3] is True  # analysed (from the analysis cache), not the other's answer
