"""Nothing is written inside a profile folder unless asked (issue 39): the analysis cache lives
in the user's cache directory by default (cache/where.py, docs/cache.md "Where"), and every
command, run on copies of the fixtures and of real corpus traces, leaves them byte for byte
and stat for stat as they were."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import X, kineto, write_trace

from trace_analyzer.cli import cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared" / "corpus"
CORPUS = {  # a real trace of each kind: CUDA (HTA), ROCm, an early Kineto array
    "cuda": SHARED / "hta/tests/data/critical_path/simple_add",
    "rocm": SHARED / "hta/tests/data/amd_trace",
    "array": SHARED / "real3/kineto_array/resnet50_num_workers_4",
}
ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"


def traceana(*args: object, xdg: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """The console script as a user runs it: no TRACEANA_ variable, the user's cache
    directory at ``xdg`` (XDG_CACHE_HOME)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRACEANA_")}
    return subprocess.run([sys.executable, "-c", ENTRY, *map(str, args)], cwd=cwd,
                          env={**base, "XDG_CACHE_HOME": str(xdg), **env},
                          capture_output=True, text=True, timeout=180)  # fmt: skip


def snapshot(top: Path) -> dict[str, tuple[int, int, int]]:
    """Every file and folder under ``top``: its kind, size and modification time (ns)."""
    out = {}
    for here, dirs, files in os.walk(top):
        for name in dirs + files:
            st = os.lstat(Path(here, name))
            out[str(Path(here, name).relative_to(top))] = (stat.S_IFMT(st.st_mode), st.st_size,
                                                           st.st_mtime_ns)  # fmt: skip
    return out


def read_only_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".traceana-cache"))
    for here, dirs, files in os.walk(dst):
        for name in files:
            os.chmod(Path(here, name), 0o444)
        os.chmod(here, 0o555)
    return dst


def commands(run: Path, other: Path, out: Path) -> list[list[object]]:
    """Every command that reads a profile, each writing (where it writes) under ``out``."""
    return [
        ["info", run], ["gaps", run], ["gaps", run, "--format", "json"], ["ops", run],
        ["chain", run], ["kernels", run], ["launches", run], ["critical", run], ["ranks", run],
        ["diff", other, run], ["engines", run], ["graph", run, "-o", out / "g.json"],
        ["export", run, "-o", out / "e.json"], ["tables", run, "-o", out / "tables"],
        ["report", run, "-o", out / "r.html"], ["baseline", "save", run, "-o", out / "b.json"],
        ["batch", run, "-o", out / "runs.parquet"],
    ]  # fmt: skip


@pytest.fixture
def writable_after(tmp_path):
    """Let pytest remove the read-only copies afterwards."""
    yield
    for here, _, _ in os.walk(tmp_path):
        os.chmod(here, 0o755)


RUNS = {"rmsnorm_naive": FIXTURES / "rmsnorm_naive", "rmsnorm_fused": FIXTURES / "rmsnorm_fused",
        **CORPUS}


@pytest.mark.parametrize("name", list(RUNS))
def test_every_command_leaves_the_fixtures_and_the_corpus_as_they_were(
    name, tmp_path, writable_after, monkeypatch
):
    """Every command, in-process with the user's environment (no TRACEANA_ variable, the
    user's cache directory at ``xdg``), on read-only copies: nothing written inside them."""
    if not RUNS[name].is_dir():
        pytest.skip(f"{RUNS[name]} is absent (the shared corpus)")
    xdg, out, cwd = tmp_path / "xdg", tmp_path / "out", tmp_path / "cwd"
    out.mkdir()
    cwd.mkdir()
    profiles = tmp_path / "profiles"
    other_name = "rmsnorm_fused" if name != "rmsnorm_fused" else "rmsnorm_naive"
    run = read_only_copy(RUNS[name], profiles / name)
    other = read_only_copy(RUNS[other_name], profiles / other_name)
    for key in [k for k in os.environ if k.startswith("TRACEANA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.chdir(cwd)
    before = snapshot(profiles)
    for argv in commands(run, other, out):
        for f in out.iterdir():  # each command writes its output anew
            shutil.rmtree(f) if f.is_dir() else f.unlink()
        done = CliRunner().invoke(cli, [str(a) for a in argv])
        # engines on a run without a device export, diff of unlike runs: refused, not a crash
        assert done.exit_code in (0, 1, 2), (argv, done.stderr, done.exception)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr, argv
        assert snapshot(profiles) == before, argv
    assert list(cwd.iterdir()) == []
    # what was cached went to the user's cache directory, marked as a cache folder
    cache = xdg / "traceana"
    assert (cache / "CACHEDIR.TAG").is_file()
    assert any(p.name.endswith(".events.parquet") for p in cache.iterdir())


def test_the_second_command_reads_the_entry_from_the_user_cache(tmp_path):
    xdg = tmp_path / "xdg"
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "rmsnorm_naive", run, ignore=shutil.ignore_patterns(".traceana-cache"))
    first = traceana("gaps", run, "--format", "json", xdg=xdg, cwd=tmp_path)
    entries = sorted((xdg / "traceana").glob("*.events.parquet"))
    assert first.returncode == 0 and len(entries) == 1, first.stderr
    stamp = entries[0].stat().st_mtime_ns
    second = traceana("ops", run, xdg=xdg, cwd=tmp_path)  # not an answer: another command
    assert second.returncode == 0, second.stderr
    assert entries[0].stat().st_mtime_ns == stamp  # read back, not written again
    assert not (run / ".traceana-cache").exists()


def test_a_named_file_is_cached_apart_from_its_folder(tmp_path):
    xdg = tmp_path / "xdg"
    run = tmp_path / "run"
    for name in ("trace.json", "rank1.json"):
        events = [X("kernel", "k0", 0, 40, pid=0, tid=7, device=0, stream=7)]
        write_trace(run / name, kineto(events, baseTimeNanoseconds=1_700_000_000 * 10**9))
    for path in (run / "trace.json", run, run / "trace.json"):
        done = traceana("gaps", path, xdg=xdg, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    # one entry for the file alone, one for the folder's run: neither overwrote the other
    assert len(list((xdg / "traceana").glob("*.events.parquet"))) == 2


def test_asked_for_the_cache_sits_inside_the_profile_folder(tmp_path):
    xdg = tmp_path / "xdg"
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "rmsnorm_naive", run, ignore=shutil.ignore_patterns(".traceana-cache"))
    for extra, env in ((["--cache-in-profile"], {}), ([], {"TRACEANA_CACHE_IN_PROFILE": "1"})):
        shutil.rmtree(run / ".traceana-cache", ignore_errors=True)
        done = traceana("gaps", run, *extra, xdg=xdg, cwd=tmp_path, **env)
        assert done.returncode == 0, done.stderr
        assert any(p.name.endswith(".events.parquet") for p in (run / ".traceana-cache").iterdir())
    assert not (xdg / "traceana").exists()


def test_an_archive_is_never_cached(tmp_path):
    xdg = tmp_path / "xdg"
    archive = shutil.make_archive(str(tmp_path / "naive"), "gztar", FIXTURES, "rmsnorm_naive")
    done = traceana("gaps", archive, xdg=xdg, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (xdg / "traceana").exists() or not any((xdg / "traceana").glob("*.parquet"))


def test_a_missing_home_is_not_made_for_the_cache(tmp_path):
    """No XDG_CACHE_HOME and a HOME that does not exist: no cache, and no home made for one."""
    home = tmp_path / "nobody"
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("TRACEANA_") and k not in ("XDG_CACHE_HOME", "MPLCONFIGDIR")}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", ENTRY, "gaps", str(FIXTURES / "rmsnorm_naive")],
                          env={**base, "HOME": str(home)}, cwd=tmp_path, capture_output=True,
                          text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not home.exists()
