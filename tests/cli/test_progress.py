"""On a terminal, a long command says what it is doing (issue 39; cli/progress.py): `export`
of a large synthetic trace, run under a pseudo-terminal, shows its steps with their time on
standard error, erased before its own line; through a pipe nothing of it appears."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """A 30 MB synthetic Kineto trace (bench/gen_kineto.py: a torch.profiler rank's shape)."""
    out = tmp_path_factory.mktemp("big") / "trace.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gen_kineto.py"), "30", str(out)],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    return out


def _on_a_terminal(*args: object) -> tuple[int, str]:
    """Run the console script with its standard error on a pseudo-terminal; return its exit
    code and all it wrote there."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "TRACEANA_NO_PROGRESS"}
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, *map(str, args)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=follower, env=env)  # fmt: skip
    os.close(follower)
    got = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the follower closed: the process is done
                break
            if not chunk:
                break
            got += chunk
        elif proc.poll() is not None:
            break
    os.close(leader)
    return proc.wait(timeout=60), got.decode(errors="replace")


def test_export_of_a_large_trace_shows_its_steps_on_a_terminal(big, tmp_path):
    code, said = _on_a_terminal("export", big, "-o", tmp_path / "out.json", "--no-cache")
    assert code == 0, said
    # the steps that last, each with its time: the writing (seconds on this trace: the
    # document is made as it is written); the reading (with the file's size), the linking and
    # the critical path, where they outlast a redraw
    assert "traceana: writing out.json … " in said, said[-300:]
    steps = [part.split(" … ")[0] for part in said.split("\r") if part.startswith("traceana: ")]
    known = ("traceana: reading trace.json (30 MB)", "traceana: linking ",
             "traceana: finding the gaps and their causes",
             "traceana: the critical path of each step", "traceana: writing out.json")
    assert all(step.startswith(known) for step in steps), steps
    # no escape sequence; the line is erased (spaces over it) before the command's own line,
    # and nothing follows that line
    assert "\x1b" not in said
    before, wrote = said.rsplit("wrote ", 1)
    assert before.endswith("\r") and before.rsplit("\r", 2)[-2].strip() == "", before[-200:]
    assert wrote.endswith(" tracks\r\n"), wrote


def test_nothing_of_it_reaches_a_pipe(big, tmp_path):
    done = subprocess.run([sys.executable, "-c", ENTRY, "export", str(big), "-o",
                           str(tmp_path / "out.json"), "--no-cache"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr and "\r" not in done.stderr
    assert done.stderr.startswith("wrote ")
