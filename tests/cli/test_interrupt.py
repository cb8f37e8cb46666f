"""Ctrl-C during an analysing command exits 130 with one line, as a shell reports an
interrupted program, never 1 (a failed gate) nor click's "Aborted!" (issue 18). Run as a real
process, sent a real SIGINT while it reads."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

NAIVE = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"
# traceana's own CLI, with its loading slowed down so that the signal lands inside a command
SLOW = """
import sys, time
import trace_analyzer.cli.common as common
real = common.Loading.runs
def slow(self, *a, **k):
    print("loading", flush=True)
    time.sleep(30)
    return real(self, *a, **k)
common.Loading.runs = slow
from trace_analyzer.cli import main
sys.argv = ["traceana", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("command", ["gaps", "ops", "info"])
def test_ctrl_c_exits_130_with_one_line(command):
    proc = subprocess.Popen([sys.executable, "-c", SLOW, command, str(NAIVE), "--no-cache"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "loading"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.strip() == "traceana: interrupted" and "Aborted" not in err, err
