"""When native code ends the process (polars aborts on a failed allocation; a fault), the
console script still ends with traceana's one line and exit 2, never "Aborted (core dumped)"
and exit 134, a traceback, or the 1 of a failed gate (issue 18). Run as real processes."""

from __future__ import annotations

import importlib.util
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import trace_analyzer.cli.common as common
from trace_analyzer.cli import cli

NAIVE = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"
BUILT = importlib.util.find_spec("trace_analyzer.cli._fault") is not None
needs_handler = pytest.mark.skipif(
    not BUILT, reason="trace_analyzer/cli/_fault.c is not built (pip install -e . with gcc)"
)
# traceana's console script, its read replaced by an abort() as polars' allocator makes one
ABORTING = """
import os, sys
import trace_analyzer.cli.common as common
real = common.Loading._reading
common.Loading._reading = staticmethod(lambda path, load: real(path, os.abort))
from trace_analyzer.cli import main
sys.argv = ["traceana", *sys.argv[1:]]
main()
"""
ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"


@needs_handler
@pytest.mark.parametrize("command", ["gaps", "ops", "info"])
def test_an_abort_in_native_code_is_one_line_and_exit_2(command):
    done = subprocess.run([sys.executable, "-c", ABORTING, command, str(NAIVE), "--no-cache"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.returncode, done.stderr)  # was -6 (134 in a shell)
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"traceana: error: {NAIVE}: the process was aborted inside native")
    assert "ulimit -v" in line and done.stdout == ""


def test_under_debug_an_abort_is_left_as_it_is():
    done = subprocess.run([sys.executable, "-c", ABORTING, "--debug", "gaps", str(NAIVE),
                           "--no-cache"], capture_output=True, text=True, timeout=60)
    assert done.returncode < 0 and "traceana: error" not in done.stderr  # killed by SIGABRT


@needs_handler
def test_memory_running_out_anywhere_is_never_a_traceback_or_134():
    """Under address-space limits from too little to start Python's imports to enough for
    the run, a failure falls wherever memory runs out: in an import, in Python, in polars
    (a panic or an abort), in a thread that cannot start. Each ends with traceana's line."""
    failed = 0
    for mib in (300, 400, 450, 500, 550, 700):
        limit = mib * 2**20

        def capped(limit: int = limit) -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        done = subprocess.run([sys.executable, "-c", ENTRY, "gaps", str(NAIVE), "--no-cache"], capture_output=True, text=True, timeout=120,
                              preexec_fn=capped)
        said = [ln for ln in done.stderr.splitlines() if ln.startswith("traceana:")]
        assert done.returncode in (0, 2), (mib, done.returncode, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, (mib, done.stderr[-2000:])
        if done.returncode == 2:
            failed += 1
            assert said and said[-1].startswith("traceana: "), (mib, done.stderr[-2000:])
    assert failed, "no limit made the run fail: the test no longer tests anything"


class Panic(BaseException):
    """A stand-in for pyo3's PanicException (a BaseException, named so)."""


Panic.__name__ = "PanicException"


@pytest.mark.parametrize(("message", "said"), [
    ("Cannot allocate memory to hold CompactString", "out of memory reading it"),
    ("index out of bounds: the len is 3 but the index is 7", "internal error: polars panicked"),
])
def test_a_panic_of_polars_is_one_line(monkeypatch, message, said):
    """polars raises its Rust panics as PanicException, which ``except Exception`` passes
    by: it was a traceback and exit 1, the code of a failed gate."""
    def panic() -> None:
        raise Panic(message)

    real = common.Loading._reading
    monkeypatch.setattr(common.Loading, "_reading",
                        staticmethod(lambda path, load: real(path, panic)))
    result = CliRunner().invoke(cli, ["gaps", str(NAIVE), "--no-cache"])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("traceana: ") and said in line, line


# An import that fails in C code before a command's own handler runs: CPython says
# "error return without exception set" (seen under `ulimit -v` while polars was imported)
FAILING_IMPORT = """
import sys
class Fail:
    def find_spec(self, name, path=None, target=None):
        if name == "trace_analyzer.cache.store":
            raise SystemError("error return without exception set")
sys.meta_path.insert(0, Fail())
from trace_analyzer.cli import main
sys.argv = ["traceana", *sys.argv[1:]]
main()
"""


def test_a_failed_import_before_the_command_runs_is_one_line_and_exit_2():
    done = subprocess.run([sys.executable, "-c", FAILING_IMPORT, "gaps", str(NAIVE), "--no-cache"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.returncode, done.stderr)
    (line,) = done.stderr.splitlines()
    assert line.startswith("traceana: internal error: SystemError: error return without")
    assert "ulimit -v" in line and "--debug" in line and done.stdout == ""
    debug = subprocess.run([sys.executable, "-c", FAILING_IMPORT, "--debug", "gaps", str(NAIVE),
                            "--no-cache"], capture_output=True, text=True, timeout=60)
    assert debug.returncode == 1 and "Traceback" in debug.stderr  # --debug: as it is


# The console script, each thread of a pool failing as it sets itself up (as a thread's lock
# allocation does when memory runs out under ulimit -v): before the guard, start() waited for
# ever (gaps on the naive fixture hung under some limits).
UNSTARTABLE = """
import sys, threading
real = threading.Thread._set_tstate_lock
def failing(self):
    if self.name.startswith("ThreadPoolExecutor"):
        raise MemoryError
    real(self)
threading.Thread._set_tstate_lock = failing
from trace_analyzer.cli import main
sys.argv = ["traceana", *sys.argv[1:]]
main()
"""


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="CPython 3.13 starts threads otherwise")
def test_a_thread_that_cannot_start_is_one_line_not_a_hang():
    done = subprocess.run([sys.executable, "-c", UNSTARTABLE, "gaps", str(NAIVE), "--no-cache"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    (line,) = done.stderr.splitlines()
    assert line.startswith("traceana: ") and "memory" in line, line
    assert done.stdout == ""


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="CPython 3.13 starts threads otherwise")
def test_a_thread_that_fails_before_its_own_code_or_while_marking_itself_does_not_hang():
    """Memory can run out anywhere in a starting thread: before its start-up code is entered
    (the call into it), and again as the failed thread marks itself started (waking the
    thread that waits: Event.set). start() still raises, at once."""
    code = """
import threading, sys
from trace_analyzer.cli.fault import UNSTARTED, threads_that_cannot_start_say_so
threads_that_cannot_start_say_so()
class Flaky(threading.Event):
    def set(self):
        if not getattr(self, "failed", False):
            self.failed = True
            raise MemoryError
        super().set()
def failing(self):
    raise MemoryError
threading.Thread._bootstrap_inner = failing  # the call into the thread's code fails
victim = threading.Thread(target=print, name="victim")
victim._started = Flaky()
try:
    victim.start()
except MemoryError as e:
    print("raised:", e)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    from trace_analyzer.cli.fault import UNSTARTED

    assert done.stdout.splitlines() == [f"raised: {UNSTARTED}"]


def test_a_thread_that_cannot_start_raises_from_start():
    """The guard itself, in a process of its own: start() raises MemoryError at once, and a
    thread that starts runs as before (its exception to the excepthook, join works)."""
    code = """
import threading, sys
from trace_analyzer.cli.fault import UNSTARTED, threads_that_cannot_start_say_so
assert threads_that_cannot_start_say_so() is (sys.version_info < (3, 13))
ran = []
ok = threading.Thread(target=lambda: ran.append(1)); ok.start(); ok.join()
real = threading.Thread._set_tstate_lock
def failing(self):
    if self.name == "victim":
        raise MemoryError
    real(self)
threading.Thread._set_tstate_lock = failing
try:
    threading.Thread(target=lambda: ran.append(2), name="victim").start()
except MemoryError as e:
    print("raised:", e)
print(ran)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    if sys.version_info < (3, 13):
        from trace_analyzer.cli.fault import UNSTARTED

        assert done.stdout.splitlines() == [f"raised: {UNSTARTED}", "[1]"]
        assert done.stderr == ""  # no "Exception ignored in thread started by", no traceback
