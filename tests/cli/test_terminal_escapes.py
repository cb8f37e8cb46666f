"""No escape from a name reaches a real terminal (issue 18, "names are data"): traceana run as
a real process on a pseudo-terminal, its stdout and stderr the terminal, on a profile whose op
and kernel names, host, folder and file names hold ANSI CSI and OSC escapes, a bell, C1
controls and bidirectional overrides. What the terminal receives holds none of them: each is
shown as the text of its escape (``\\x1b``). traceana colours nothing on a terminal, so no
escape at all is expected. Error and gate lines that name a file or a run are held to the
same rule.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import X, kineto, run_cli, write_trace

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

MAIN = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"
CSI, OSC = "\x1b[2J\x1b[31m", "\x1b]0;pwned\x07"
OPS = [f"aten::clear{CSI}", f"aten::title{OSC}", "aten::c1\x9b31m\x85", "aten::bidi\u202egpj"]
FOLDER = f"run{OSC}{CSI}"
HOST = f"host{CSI}\u202e"
FILE = f"trace{OSC}.json"
# What no byte sequence a terminal receives may decode to: C0 but tab, line feed and carriage
# return (the terminal's own line discipline writes \r\n), DEL, C1, bidirectional controls.
UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def profile(tmp_path) -> Path:
    """A Neuron-style capture folder (its host in the folder name) holding one Kineto trace:
    each op launches a kernel named after it on stream 7, with 60 µs gaps between them."""
    events = []
    for i, op in enumerate(OPS):
        t = 1000 + 100 * i
        events.append(X("cpu_op", op, t, 20, **{"External id": i + 1}))
        events.append(X("cuda_runtime", "cudaLaunchKernel", t + 5, 5, correlation=i + 1))
        events.append(X("kernel", "k_" + op, t + 30, 40, pid=0, tid=7, device=0, stream=7,
                        correlation=i + 1))
    top = tmp_path / FOLDER
    write_trace(top / f"{HOST}_pid_100" / FILE, kineto(events))
    return top


def on_terminal(*args: object) -> tuple[int, str]:
    """Run ``traceana ARGS`` with a pseudo-terminal as its stdin, stdout and stderr; return
    its exit code and everything the terminal received, decoded."""
    main, child = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-c", MAIN, *map(str, args)], stdin=child,
                            stdout=child, stderr=child, env=env, close_fds=True)
    os.close(child)
    got = bytearray()
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the process closed its side
            break
        if not chunk:
            break
        got += chunk
    os.close(main)
    return proc.wait(timeout=60), got.decode("utf-8", errors="replace")


def assert_inert(text: str) -> None:
    bad = sorted({hex(ord(c)) for c in UNSAFE.findall(text)})
    assert not bad, (bad, text[:2000])


@pytest.mark.parametrize("command", ["gaps", "ops", "chain", "info"])
def test_table_output_on_a_terminal_holds_no_escape(profile, command):
    code, text = on_terminal(command, profile, "--no-cache")
    assert code == 0, text
    assert_inert(text)
    assert "\\x1b" in text  # the root's escapes, shown as text
    if command in ("ops", "chain"):
        assert "aten::title\\x1b]0;pwned\\x07" in text or "…" in text


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_other_formats_on_a_terminal_hold_no_escape(profile, fmt):
    code, text = on_terminal("ops", profile, "--no-cache", "--format", fmt)
    assert code == 0, text
    assert_inert(text)


def test_diff_on_a_terminal(profile):
    code, text = on_terminal("diff", profile, profile, "--no-cache")
    assert code == 0, text
    assert_inert(text)
    assert "\\x1b" in text  # the sides' folder, shown


def test_trend_on_a_terminal(profile, tmp_path):
    table = tmp_path / "runs.parquet"
    code, out, err = run_cli("batch", profile, "-o", table, "--jobs", "1")
    assert code == 0, err
    code, text = on_terminal("trend", table)
    assert code == 0, text
    assert_inert(text)
    assert "\\x1b" in text  # the run's folder, shown


def error_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


def test_an_error_naming_a_missing_path_holds_no_escape(tmp_path):
    code, text = on_terminal("gaps", tmp_path / f"gone{OSC}{CSI}", "--no-cache")
    assert code == 2, text
    assert_inert(text)
    line = error_line(text)
    assert line.startswith("traceana: error: ") and "gone\\x1b]0;pwned\\x07" in line, line


def test_an_error_naming_a_broken_file_holds_no_escape(tmp_path):
    bad = tmp_path / f"broken{CSI}.json"
    bad.write_text('{"traceEvents": [ {"ph": ')
    code, text = on_terminal("ops", bad, "--no-cache")
    assert code == 2, text
    assert_inert(text)
    assert error_line(text).startswith("traceana: error: ")


def test_a_failed_gate_naming_the_run_holds_no_escape(profile):
    code, text = on_terminal("gaps", profile, "--no-cache", "--fail-on", "idle_pct>1")
    assert code == 1, text
    assert_inert(text)
    assert "idle_pct" in text


@pytest.mark.parametrize("command,name", [("export", "out.json"), ("graph", "out.graphml"),
                                          ("report", "out.html")])
def test_a_wrote_line_shows_the_output_path_s_escapes(profile, tmp_path, command, name):
    # the -o path is the user's own, but it may be made from a trace's names by a script
    out = tmp_path / f"x{OSC}{CSI}{name}"
    code, text = on_terminal(command, profile, "-o", out, "--no-cache")
    assert code == 0, text
    assert out.is_file()
    assert_inert(text)
    assert "wrote " in text and "x\\x1b]0;pwned\\x07\\x1b[2J" in text, text


def test_batch_s_wrote_line_shows_the_table_path_s_escapes(profile, tmp_path):
    table = tmp_path / f"runs{CSI}.parquet"
    code, text = on_terminal("batch", profile, "-o", table, "--jobs", "1")
    assert code == 0, text
    # on a terminal batch draws click's progress bar, which hides and shows the cursor: its
    # own two escapes, not a name's
    assert_inert(text.replace("\x1b[?25l", "").replace("\x1b[?25h", ""))
    assert "wrote " in text and "runs\\x1b[2J\\x1b[31m.parquet" in text, text


def _bash_words(command: str) -> list[bytes]:
    """The words bash reads from a printed ``neuron-explorer view ...`` line after the
    command's name, as bytes: what the pasted command would pass to Neuron Explorer."""
    args = command.strip().removeprefix("neuron-explorer view ")
    done = subprocess.run(["bash", "-c", f"printf '%s\\0' {args}"], capture_output=True,
                          check=True, timeout=30)
    return done.stdout.split(b"\0")[:-1]


def test_info_s_device_export_command_names_a_path_with_escapes_exactly(tmp_path):
    # a NEFF/NTFF pair (nki.benchmark's renamed X.neff, X.ntff) whose folder and name hold
    # escapes, a bell, a tab, a bidirectional override, a quote, a "!" and a backslash
    folder = tmp_path / f"dev{OSC}{CSI}"
    stem = "k\u202egpj\t'q'!\\x"
    neff, ntff = folder / f"{stem}.neff", folder / f"{stem}.ntff"
    folder.mkdir()
    for path in (neff, ntff):
        path.write_bytes(b"\x00placeholder")
    want = [b"-n", os.fsencode(neff), b"-s", os.fsencode(ntff), b"--output-format", b"parquet"]
    code, text = on_terminal("info", folder, "--no-cache")
    assert code == 0, text
    assert_inert(text)
    (line,) = [line for line in text.splitlines() if "neuron-explorer view" in line]
    assert _bash_words(line) == want  # pasted into bash, it names the two files exactly
    code, out, err = run_cli("info", folder, "--no-cache", "--format", "markdown")
    assert code == 0, err
    assert_inert(out)
    (block,) = out.split("```sh\n")[1].split("\n```")[0].splitlines()
    assert _bash_words(block) == want
