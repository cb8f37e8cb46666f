"""Nothing the user gave is lost through a link, a mount or a full disk (issue 37): every
command that writes a file, its -o given as a hard link, a symbolic link or a bind-mounted
path to each input, is refused with one line (exit 2) and the input is left as it was, byte
for byte (in-process); on a full disk (a real 2 MiB tmpfs) over an existing output, as a real
process, one line, exit 2 and the old output intact; a report's plot beside it that is a link
replaces the link, never the file it names."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import fill, run_cli, run_process

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

# Each command that writes a file, with the extension its -o takes.
WRITERS = {
    "export": (("export", "{root}"), ".json"),
    "graph": (("graph", "{root}"), ".json"),
    "report": (("report", "{root}", "--no-images"), ".md"),
    "baseline": (("baseline", "save", "{root}"), ".json"),
    "gaps": (("gaps", "{root}", "--format", "json"), ".json"),
    "ops": (("ops", "{root}", "--format", "csv"), ".csv"),
    "diff": (("diff", "{root}", "{root}", "--format", "json"), ".json"),
}


def one_line(code: int, out: str, err: str, *_: object) -> str:
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("traceana: error: "), err
    assert "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def run(tmp_path):
    """A copy of the naive fixture: its folder, its trace.json and one of its tables."""
    root = tmp_path / "run"
    shutil.copytree(FIXTURES / "rmsnorm_naive", root)
    return root, next(root.rglob("trace.json")), next(root.rglob("*.parquet"))


def _bind(source: Path, target: Path) -> bool:
    """Bind-mount ``source`` at ``target`` (root only): whether it could."""
    target.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True)
    return done.returncode == 0


@pytest.mark.parametrize("link", ["hard", "symbolic", "bind"])
@pytest.mark.parametrize("victim", ["trace", "table"])
@pytest.mark.parametrize("command", list(WRITERS))
def test_an_output_that_is_an_input_under_another_name_is_refused(run, tmp_path, command,
                                                                  victim, link):  # fmt: skip
    root, trace, table = run
    args, suffix = WRITERS[command]
    file = trace if victim == "trace" else table
    before = file.read_bytes()
    if link == "hard":
        out = tmp_path / f"hard{suffix}"
        os.link(file, out)
    elif link == "symbolic":
        out = tmp_path / f"soft{suffix}"
        out.symlink_to(file)
    else:
        mounted = tmp_path / "mounted"
        if not _bind(root, mounted):
            pytest.skip("a bind mount needs root and mount(8)")
        out = mounted / file.relative_to(root)
    try:
        argv = [a.format(root=root) for a in args]
        line = one_line(*run_cli(*argv, "-o", out, "--no-cache"))  # in-process: the same check
        if out.suffix == suffix:  # (else the name is refused first, for its extension)
            assert "is an input of this command" in line or "is the input itself" in line, line
        assert file.read_bytes() == before
    finally:
        if link == "bind":
            subprocess.run(["umount", str(tmp_path / "mounted")], check=True)


@pytest.mark.parametrize("command", list(WRITERS))
def test_a_small_disk_leaves_the_old_output_whole(run, small_disk, command):
    root, _, _ = run
    args, suffix = WRITERS[command]
    old = small_disk / f"out{suffix}"
    old.write_bytes(b"the old output\n" * 100)
    before = old.read_bytes()
    fill(small_disk)
    argv = [a.format(root=root) for a in args]
    line = one_line(*run_process(*argv, "-o", old, "--no-cache"))
    assert str(old) in line and "cannot write" in line, line
    assert old.read_bytes() == before
    assert sorted(p.name for p in small_disk.iterdir()) == sorted(["filler", old.name])


def test_a_plot_beside_a_report_that_is_a_link_replaces_the_link_only(run, tmp_path):
    pytest.importorskip("matplotlib")
    root, _, _ = run
    other = tmp_path / "precious.txt"
    other.write_text("not a plot\n")
    out = tmp_path / "o"
    out.mkdir()
    report = out / "r.md"
    code, _, err, *_ = run_process("report", root, "-o", report, "--no-cache")
    assert code == 0, err
    plots = sorted(p for p in out.iterdir() if p.suffix == ".png")
    assert plots, "the report drew no plot"
    for plot in plots:
        plot.unlink()
        plot.symlink_to(other)
    code, _, err, *_ = run_process("report", root, "-o", report, "--no-cache")
    assert code == 0, err
    assert other.read_text() == "not a plot\n"
    for plot in plots:
        assert not plot.is_symlink() and plot.read_bytes().startswith(b"\x89PNG")
