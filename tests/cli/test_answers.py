"""A command asked again of unchanged runs is answered from the cache without importing polars
(issue 19: "a cache hit that reads only its answer"; cli/answers.py, docs/cache.md "Answers").
Every case runs traceana as a real process, the way the console script starts it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from conftest import X, kineto, write_trace

from trace_analyzer.cli import answers, cli

NAIVE = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"
# The console script; as it exits it says whether polars was imported (on a line of stderr).
ENTRY = ("import atexit, sys; atexit.register(lambda: sys.__stderr__.write("
         "'polars imported: %s\\n' % ('polars' in sys.modules))); "
         "from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()")


def traceana(*args: object, cwd: Path | None = None, **env: str):
    """Run the console script; return (exit code, stdout, stderr less the polars line, and
    whether polars was imported)."""
    environ = {k: v for k, v in os.environ.items() if k != "TRACEANA_CACHE_DIR"} | env
    environ.setdefault("TRACEANA_CACHE_IN_PROFILE", "1")  # its answers inside the run, as asked
    proc = subprocess.run([sys.executable, "-c", ENTRY, *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=environ, timeout=120)
    *lines, last = proc.stderr.splitlines(keepends=True)
    assert last.startswith("polars imported: "), proc.stderr
    return proc.returncode, proc.stdout, "".join(lines), last.strip().endswith("True")


@pytest.fixture
def run(tmp_path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(NAIVE, folder, ignore=shutil.ignore_patterns(".traceana-cache"))
    return folder


def answer_files(folder: Path) -> list[Path]:
    cache = folder / ".traceana-cache"
    return sorted(cache.glob(answers.PREFIX + "*")) if cache.is_dir() else []


@pytest.mark.parametrize("args", [("gaps",), ("gaps", "--format", "json"), ("ops",),
                                  ("chain", "--format", "markdown"), ("info", "--format", "csv")])
def test_the_second_run_is_the_first_ones_answer_without_polars(run, args):
    first = traceana(args[0], run, *args[1:])
    assert first[0] == 0 and first[3], first  # the analysis: polars, and an answer kept
    assert len(answer_files(run)) == 1
    again = traceana(args[0], run, *args[1:])
    assert again[:3] == first[:3]  # the same bytes on both streams, the same exit
    assert again[3] is False  # answered before anything imported polars


def test_a_gate_that_holds_is_answered_with_its_exit_and_its_line(run):
    first = traceana("gaps", run, "--fail-on", "idle_pct>1")
    assert first[0] == 1 and "idle_pct" in first[2], first
    again = traceana("gaps", run, "--fail-on", "idle_pct>1")
    assert again == (*first[:3], False)


def test_a_changed_trace_is_asked_anew(tmp_path):
    def trace(gap_us: float) -> None:
        evs = [X("kernel", "a", 0, 10, pid=1, tid=7, device=0, stream=7),
               X("kernel", "b", 10 + gap_us, 10, pid=1, tid=7, device=0, stream=7)]
        write_trace(tmp_path / "run" / "trace.json", kineto(evs, baseTimeNanoseconds=10**9))

    trace(5)
    first = traceana("gaps", tmp_path / "run", "--format", "json")
    trace(50)  # another file in the same place
    second = traceana("gaps", tmp_path / "run", "--format", "json")
    assert second[3] is True  # analysed, not replayed
    assert len(answer_files(tmp_path / "run")) == 1  # the new answer replaced the old
    idle = [json.loads(r[1])["runs"][0]["summary"]["idle_ns"] for r in (first, second)]
    assert idle == [5_000, 50_000]


def test_other_options_other_widths_and_folders_are_other_questions(run, tmp_path):
    traceana("gaps", run)
    assert traceana("gaps", run, "--top", "3")[3] is True
    assert traceana("gaps", run, COLUMNS="60")[3] is True  # the table fits another width
    moved = tmp_path / "moved"
    shutil.copytree(run, moved)  # the same files elsewhere: shown by another path
    code, out, _, imported = traceana("gaps", moved)
    assert code == 0 and imported and str(moved) in out


@pytest.mark.parametrize("extra", [("--no-cache",), ("-o", "{out}"), ("--output={out}",)])
def test_never_kept_without_the_cache_or_for_a_file_written(run, tmp_path, extra):
    args = [a.format(out=tmp_path / "gaps.md") for a in extra]
    for _ in range(2):
        code, _, _, imported = traceana("gaps", run, *args)
        assert code == 0 and imported
    assert answer_files(run) == []


def test_a_damaged_or_linked_answer_is_a_miss(run, tmp_path):
    first = traceana("gaps", run)
    (kept,) = answer_files(run)
    kept.write_bytes(b"\x00not json")
    damaged = traceana("gaps", run)
    assert damaged[:3] == first[:3] and damaged[3] is True
    (kept,) = answer_files(run)  # written again by that run
    elsewhere = tmp_path / "elsewhere.json"
    shutil.move(kept, elsewhere)
    kept.symlink_to(elsewhere)  # an answer file that is a link is not followed
    linked = traceana("gaps", run)
    assert linked[:3] == first[:3] and linked[3] is True


def test_a_cache_dir_keeps_the_answers(run, tmp_path):
    cache = tmp_path / "cache"
    first = traceana("ops", run, "--cache-dir", cache)
    again = traceana("ops", run, "--cache-dir", cache)
    assert again == (*first[:3], False)
    assert len(list(cache.glob(answers.PREFIX + "*"))) == 1 and answer_files(run) == []


def test_the_options_that_take_a_value_are_the_commands_own():
    """answers.VALUED must name every option of the answered commands that takes a value,
    or a value could be taken for the path."""
    ctx = click.Context(cli)
    valued = {o for name in answers.COMMANDS for p in cli.get_command(ctx, name).params
              if isinstance(p, click.Option) and not p.is_flag for o in p.opts}
    assert valued <= answers.VALUED, valued - answers.VALUED


def test_a_stdout_that_cannot_encode_a_micro_sign_gets_the_bytes_uncached_and_cached(run):
    """Under ``PYTHONIOENCODING=ascii`` the output is the same UTF-8 bytes as anywhere else,
    kept and then replayed (issue 37: the replay was a traceback, exit 1; the first run, heard
    as it was written, an internal error, exit 2)."""
    plain = traceana("gaps", run, "--no-cache")
    assert plain[0] == 0 and "µs" in plain[1]
    first = traceana("gaps", run, PYTHONIOENCODING="ascii")
    again = traceana("gaps", run, PYTHONIOENCODING="ascii")
    assert first[:3] == again[:3] == plain[:3]
    assert first[3] and again[3] is False  # analysed, then answered from what was kept
