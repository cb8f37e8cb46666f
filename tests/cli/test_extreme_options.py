"""Options at their limits and outputs that are not files (issue 18): one line or a normal
answer, never "internal error"; an -o that is a named pipe is refused rather than waited on
(a real process, with a timeout, since the old behaviour was a hang)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import one_line_error, run_cli

NAIVE = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"
HUGE = "99999999999999999999"  # past int64
ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"


def test_a_top_beyond_any_table_means_all_of_it():
    for command in ("gaps", "ops", "chain"):
        code, out, err = run_cli(command, NAIVE, "--top", HUGE, "--no-cache")
        assert code == 0 and "internal error" not in err, (command, err)
    code, every, _ = run_cli("ops", NAIVE, "--no-cache", "--format", "json")
    code, top, _ = run_cli("ops", NAIVE, "--top", HUGE, "--no-cache", "--format", "json")
    assert top == every


def test_a_window_longer_than_any_trace_is_one_line():
    code, out, err = run_cli("gaps", NAIVE, "--window", f"0ns:{HUGE}s", "--no-cache")
    line = one_line_error(code, out, err)
    assert f"'{HUGE}s' is longer than any trace" in line
    code, out, err = run_cli("gaps", NAIVE, "--min-gap", f"{HUGE}ms", "--no-cache")
    assert "is longer than any trace" in one_line_error(code, out, err)


def test_an_output_that_is_a_named_pipe_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-c", ENTRY, "gaps", str(NAIVE),
                           "-o", str(fifo), "--no-cache"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"traceana: error: -o {fifo}: that is a named pipe, not a "
                                   "file; name a file to write")
