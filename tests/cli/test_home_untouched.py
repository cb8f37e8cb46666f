"""No command writes in the user's home (issue 37), as real processes, every command: with
HOME a folder that does not exist, it is not created; a writable one is left empty; with HOME
read-only, nothing is said that a writable home would not have seen said.
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
NO_CACHE = ("batch", "engines", "trend")  # (no analysis cache to leave out)
ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"

# Every command, as a user runs it (plots drawn where a command draws them); {table} is a
# batch table and {base} a saved baseline of the run, made once for the module.
COMMANDS = [
    ("gaps", "{run}"),
    ("ops", "{run}"),
    ("chain", "{run}"),
    ("info", "{run}"),
    ("critical", "{run}"),
    ("engines", "{run}"),
    ("kernels", "{run}"),
    ("launches", "{run}"),
    ("ranks", "{run}"),
    ("export", "{run}", "-o", "{out}/e.json"),
    ("graph", "{run}", "-o", "{out}/g.json"),
    ("report", "{run}", "-o", "{out}/r.md"),
    ("report", "{run}", "-o", "{out}/r.html"),
    ("baseline", "save", "{run}", "-o", "{out}/b.json"),
    ("baseline", "compare", "{base}", "{run}"),
    ("diff", "{run}", "{run}"),
    ("tables", "{run}", "-o", "{out}/tables"),
    ("batch", "{run}", "-o", "{out}/runs.parquet", "--jobs", "1"),
    ("trend", "{table}"),
    ("trend", "{table}", "-o", "{out}/trend.png"),
]


def traceana(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME",
                                                            "XDG_CONFIG_HOME")}  # fmt: skip
    return subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True,
                          env={**env, "HOME": str(home)}, timeout=300)  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The run, and a batch table and a baseline of it (made with a home of their own)."""
    top = tmp_path_factory.mktemp("home")
    run = top / "run"
    shutil.copytree(FIXTURES / "rmsnorm_naive", run)
    (top / "h").mkdir()
    for args in (["batch", str(run), "-o", str(top / "runs.parquet")],
                 ["baseline", "save", str(run), "-o", str(top / "base.json"), "--no-cache"]):
        done = traceana(args, top / "h")
        assert done.returncode == 0, done.stderr
    return {"run": run, "table": top / "runs.parquet", "base": top / "base.json"}


def _argv(args: tuple[str, ...], made: dict[str, Path], out: Path) -> list[str]:
    named = [a.format(out=out, **made) for a in args]
    return named + ["--no-cache"] * (args[0] not in NO_CACHE)


def test_every_command_is_tried():
    from trace_analyzer.cli import cli

    names = set()
    for name, command in cli.commands.items():
        subs = getattr(command, "commands", None)
        names |= {f"{name} {sub}" for sub in subs} if subs else {name}
    tried = {" ".join(a[:2]) if a[0] == "baseline" else a[0] for a in COMMANDS}
    assert names <= tried, names - tried


def _said(done: subprocess.CompletedProcess[str], out: Path) -> str:
    return done.stderr.replace(str(out), "<out>")


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_missing_home_is_not_created_and_a_read_only_one_adds_nothing(
    made, tmp_path, read_only_home, args
):
    pytest.importorskip("matplotlib")
    said = {}
    for kind in ("writable", "missing", "read-only"):
        out, home = tmp_path / f"out-{kind}", tmp_path / f"home-{kind}"
        out.mkdir()
        if kind == "writable":
            home.mkdir()
        elif kind == "read-only":
            home = read_only_home
        done = traceana(_argv(args, made, out), home)
        assert done.returncode == 0, (kind, done.stderr)
        said[kind] = _said(done, out)
        if kind != "read-only":
            assert not home.exists() or not any(home.iterdir()), sorted(home.rglob("*"))
    assert said["missing"] == said["writable"] == said["read-only"], said


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
