"""A command writes nothing in the user's home (issue 37), as real processes: with HOME a
folder that does not exist, it is not created; with HOME read-only, nothing extra is said.
(matplotlib, drawing a report's plots, would create ~/.config/matplotlib and
~/.cache/matplotlib, a missing home itself, and warn twice where it cannot.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NO_CACHE = ("batch", "engines")  # (no analysis cache to leave out)
ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"

# Every command that reads a run, as a user runs it (plots drawn where a command draws them).
COMMANDS = [
    ("gaps", "{run}"),
    ("ops", "{run}"),
    ("chain", "{run}"),
    ("info", "{run}"),
    ("critical", "{run}"),
    ("engines", "{run}"),
    ("export", "{run}", "-o", "{out}/e.json"),
    ("graph", "{run}", "-o", "{out}/g.json"),
    ("report", "{run}", "-o", "{out}/r.md"),
    ("report", "{run}", "-o", "{out}/r.html"),
    ("baseline", "save", "{run}", "-o", "{out}/b.json"),
    ("diff", "{run}", "{run}"),
    ("tables", "{run}", "-o", "{out}/tables"),
    ("batch", "{run}", "-o", "{out}/runs.parquet", "--jobs", "1"),
]


def traceana(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME",
                                                            "XDG_CONFIG_HOME")}  # fmt: skip
    return subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True,
                          env={**env, "HOME": str(home)}, timeout=300)  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("home") / "run"
    shutil.copytree(FIXTURES / "rmsnorm_naive", root)
    return root


def _argv(args: tuple[str, ...], run: Path, out: Path) -> list[str]:
    return [a.format(run=run, out=out) for a in args] + ["--no-cache"] * (args[0] not in NO_CACHE)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_missing_home_is_not_created(run, tmp_path, args):
    pytest.importorskip("matplotlib")
    home, out = tmp_path / "nobody" / "home", tmp_path / "out"
    out.mkdir()
    done = traceana(_argv(args, run, out), home)
    assert done.returncode == 0, done.stderr
    assert not home.parent.exists(), sorted(str(p) for p in home.parent.rglob("*"))


@pytest.fixture
def read_only_home(tmp_path):
    """A home no process may write: a read-only tmpfs as root, else a folder without write
    permission."""
    home = tmp_path / "ro-home"
    home.mkdir()
    if os.geteuid() != 0:
        home.chmod(0o555)
        yield home
        home.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(home)],
                             capture_output=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip("root writes anywhere, and no read-only tmpfs here")
    try:
        yield home
    finally:
        subprocess.run(["umount", str(home)], check=True)


def test_a_read_only_home_adds_nothing_to_what_a_report_says(run, tmp_path, read_only_home):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    out.mkdir()
    done = traceana(["report", str(run), "-o", str(out / "r.md"), "--no-cache"], read_only_home)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines() == [f"wrote {out / 'r.md'} and 3 plots beside it"], (
        done.stderr
    )
