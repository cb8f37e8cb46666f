"""The analysis cache in a profile folder someone else made (issue 18), through the CLI as a
real process.

A folder received from a tar that keeps symbolic links may hold a ``.traceana-cache`` that
is a link to a folder elsewhere: nothing may be written through it. A damaged entry may be a
Parquet file on which polars aborts the whole process (SIGABRT, exit 134), which no Python
``except`` catches: every later run would die. Both must be a miss (the run read again, the
same output, exit 0), the first with a warning.

Expected outputs come from the same command with ``--no-cache``; what must not change is
listed before and compared after.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import X, kineto, write_trace

import trace_analyzer as ta
from trace_analyzer.cache import Cache

ROOT = Path(__file__).resolve().parents[2]
ABORTS = ROOT / "tests" / "fuzz_found" / "polars_abort_page_validity.parquet"
ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"
CACHE = ".traceana-cache"
IN_PROFILE = Cache(in_profile=True)  # the cache inside the profile folder, as asked


def traceana(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``traceana ARGS`` as a process of its own, with no cache variable set (conftest
    sets TRACEANA_CACHE_DIR for the session) unless ``env`` gives one."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRACEANA_")}
    base["TRACEANA_CACHE_IN_PROFILE"] = "1"  # the cache inside the profile folder, as asked
    return subprocess.run([sys.executable, "-c", ENTRY, *map(str, args)], env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=120)


def gaps_json(*args: object, env: dict[str, str] | None = None) -> dict:
    proc = traceana("gaps", *args, "--format", "json", env=env)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    return json.loads(proc.stdout)


def without_warnings(doc: dict) -> dict:
    return {**doc, "runs": [{**r, "warnings": []} for r in doc["runs"]], "warnings": []}


def listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def run(tmp_path) -> Path:
    """A Kineto run folder: an op launching one kernel, and a second kernel 100 µs later."""
    folder = tmp_path / "received" / "run"
    write_trace(folder / "trace.json", kineto([
        X("cpu_op", "aten::mm", 100, 20, pid=7, tid=7, **{"External id": 1}),
        X("cuda_runtime", "cudaLaunchKernel", 105, 5, pid=7, tid=7, correlation=11,
          **{"External id": 1}),
        X("kernel", "k_mm", 200, 50, pid=0, tid=7, device=0, stream=7, correlation=11),
        X("kernel", "k_add", 350, 30, pid=0, tid=7, device=0, stream=7),
    ], baseTimeNanoseconds=1_793_620_800_000_000_000))
    return folder


def test_a_cache_folder_that_is_a_link_is_not_written_through(run, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("the user's own file\n")
    before = listing(elsewhere)
    (run / CACHE).symlink_to(elsewhere, target_is_directory=True)
    reference = gaps_json(run, "--no-cache")

    for _ in range(2):  # a miss each time, never a hit read through the link
        doc = gaps_json(run)
        assert without_warnings(doc) == without_warnings(reference)
        (warned,) = [w for w in doc["runs"][0]["warnings"] if CACHE in w]
        assert "symbolic link" in warned and str(elsewhere) in warned
    assert listing(elsewhere) == before
    assert (run / CACHE).is_symlink()  # left as it was

    # A cache folder the user names may be a link: it is used (written, then read back).
    named = tmp_path / "my-cache"
    named.symlink_to(elsewhere, target_is_directory=True)
    assert without_warnings(gaps_json(run, "--cache-dir", named)) == without_warnings(reference)
    written = set(listing(elsewhere)) - set(before)
    assert any(name.endswith(".events.parquet") for name in written)
    assert ta.load(run, cache=named).cached


def test_a_link_in_place_of_a_temporary_file_is_not_written_through(run, tmp_path):
    """A link where the cache writes its temporary file (its name holds the writer's pid,
    so this writer is the test's own process, in-process)."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    ta.load(run, cache=IN_PROFILE)  # the entry exists: its names are known
    cache = run / CACHE
    for meta in cache.glob("*.json"):
        for name in (meta.name, meta.name.replace(".json", ".events.parquet"), "CACHEDIR.TAG"):
            (cache / f".{name}.{os.getpid()}.tmp").symlink_to(outside)
    (run / "trace.json").touch()  # a changed run: the entry is written again

    profile = ta.load(run, cache=IN_PROFILE)
    assert not profile.cached
    assert outside.read_text() == "precious\n"
    assert ta.load(run, cache=IN_PROFILE).cached  # and the entry written is whole


@pytest.mark.parametrize("which", [".events.parquet", ".edges.parquet", ".lanes.parquet"])
def test_an_entry_on_which_polars_aborts_is_a_miss(run, which):
    """tests/fuzz_found's Parquet file makes polars abort the process (exit 134) when read:
    copied over a table of a real entry, the next run reads the trace again, exit 0."""
    reference = gaps_json(run, "--no-cache")
    assert gaps_json(run) == reference
    (victim,) = (run / CACHE).glob(f"*{which}")
    shutil.copyfile(ABORTS, victim)
    for answer in (run / CACHE).glob("answer-*"):  # the stored answer would reply first
        answer.unlink()

    proc = traceana("gaps", run, "--format", "json")
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-400:])
    assert json.loads(proc.stdout) == reference
    assert gaps_json(run) == reference  # the entry was rewritten whole
    assert victim.read_bytes() != ABORTS.read_bytes()
