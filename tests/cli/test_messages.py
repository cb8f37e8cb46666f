"""What the CLI says besides its results (issue 18), each through the CLI as a real process:

- events dropped while reading: one warning line on stderr per run, with the counts by
  reason, from every analysing command (the report body alone is hidden by a pipe or a file);
- a standard output that is full or closed: one error line and exit 2, never exit 0 with the
  output lost; a reader that goes away (``| head -1``): a quiet exit 141, no traceback;
- out of memory (a real MemoryError from the allocator, under RLIMIT_AS): one line saying so;
- ``trend`` on a table without the columns it reads, ``info`` on a run without events: a line
  that says what is wrong or what was found.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import X, kineto, write_trace

NAIVE = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"
ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"
BASE = 1_793_620_800_000_000_000


def traceana(*args: object, **kw) -> subprocess.CompletedProcess:
    """Run ``traceana ARGS`` as a real process (text output, a timeout; as wide as its
    tables, whatever COLUMNS the test runs under)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([sys.executable, "-c", ENTRY, *map(str, args)], text=True,
                          timeout=60, env=env, **kw)


def good_events() -> list[dict]:
    """Three ops, each launching one kernel on GPU 0 stream 7 (linked by correlation)."""
    evs = []
    for i, t in enumerate((10, 50, 90), start=1):
        evs.append(X("cpu_op", f"aten::op{i}", t, 6, 1, 1, **{"External id": i}))
        evs.append(X("cuda_runtime", "cudaLaunchKernel", t + 1, 2, 1, 1, correlation=i))
        evs.append(X("kernel", f"k{i}", t + 10, 10, 0, 7, device=0, stream=7, correlation=i))
    return evs


@pytest.fixture
def dropping(tmp_path) -> Path:
    """A run of nine good events and three malformed ones: two that end before they start
    (a negative dur), one without a name."""
    bad = [X("cpu_op", "aten::neg", 20, -5, 1, 1), X("kernel", "k_neg", 70, -1, 0, 7),
           {k: v for k, v in X("cpu_op", "nameless", 30, 2, 1, 1).items() if k != "name"}]
    write_trace(tmp_path / "run" / "trace.json",
                kineto(good_events() + bad, baseTimeNanoseconds=BASE))
    return tmp_path / "run"


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("traceana: warning:")]


COMMANDS = {  # each analysing command, and the file it writes where it needs one
    "gaps": ("--format", "json"), "ops": ("--format", "csv"), "chain": (), "info": (),
    "export": ("-o", "{out}/x.json"), "graph": ("-o", "{out}/x.graphml"),
    "report": ("-o", "{out}/x.md", "--no-images"), "tables": ("-o", "{out}/tables"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_analysing_command_says_on_stderr_how_many_events_were_dropped(
        command, dropping, tmp_path):
    extra = [a.format(out=tmp_path) for a in COMMANDS[command]]
    proc = traceana(command, dropping, "--no-cache", *extra)
    assert proc.returncode == 0, proc.stderr
    lines = warnings_of(proc.stderr)
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith(f"traceana: warning: {dropping}: ") and "3 events dropped" in line
    assert "2 end before start" in line and "1 no name" in line
    assert "may be missing events" in line
    assert "traceana: warning" not in proc.stdout  # the output itself stays as it was


def test_diff_says_it_once_for_each_side_that_dropped_events(dropping, tmp_path):
    clean = write_trace(tmp_path / "clean" / "trace.json",
                        kineto(good_events(), baseTimeNanoseconds=BASE)).parent
    assert traceana("gaps", clean, "--no-cache").stderr == ""  # a clean run: not a word
    proc = traceana("diff", clean, dropping, "--no-cache")
    assert proc.returncode == 0, proc.stderr
    lines = warnings_of(proc.stderr)
    assert len(lines) == 1 and f"{dropping}: 3 events dropped" in lines[0], proc.stderr
    proc = traceana("diff", dropping, dropping, "--no-cache")
    assert len(warnings_of(proc.stderr)) == 2, proc.stderr


def all_dropped(tmp_path: Path) -> Path:
    """A run of four kernels that each end before they start: every event is dropped."""
    evs = [X("kernel", "k", 10 * i, -1, 0, 7, device=0, stream=7) for i in range(4)]
    return write_trace(tmp_path / "run" / "trace.json",
                       kineto(evs, baseTimeNanoseconds=BASE)).parent


def test_a_run_whose_every_event_is_dropped_says_so(tmp_path):
    """Nothing left to analyse: a silent "host activity only" would read as a clean run."""
    run = all_dropped(tmp_path)
    proc = traceana("gaps", run, "--no-cache")
    assert proc.returncode == 0, proc.stderr
    (line,) = warnings_of(proc.stderr)
    assert line == (f"traceana: warning: {run}: every event was dropped (4 end before start): "
                    "nothing is left to analyse")
    proc = traceana("gaps", run, "--no-cache", "--strict")  # --strict keeps its meaning
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"traceana: error: {run}: malformed events dropped")


# --- standard output that cannot take the output -------------------------------------------

@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_full_standard_output_is_one_error_line_and_exit_2(fmt):
    with open("/dev/full", "w") as full:
        proc = traceana("gaps", NAIVE, "--no-cache", "--format", fmt, stdout=full)
    assert proc.returncode == 2
    assert proc.stderr == "traceana: error: cannot write the output: No space left on device\n"


def test_a_closed_standard_output_is_one_error_line_and_exit_2():
    proc = subprocess.run(
        ["sh", "-c", f'exec "$0" -c "$1" gaps "$2" --no-cache >&-', sys.executable, ENTRY,
         str(NAIVE)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == "traceana: error: cannot write the output: standard output is closed\n"


def test_a_reader_that_goes_away_ends_it_quietly_with_141():
    """``traceana ... | head -1``: no traceback, no "internal error", nothing on stderr; 141
    (128 + SIGPIPE), what a shell reports for any program whose reader left early."""
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, "chain", str(NAIVE), "--no-cache",
                             "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves before a byte is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert err == ""


# --- out of memory -------------------------------------------------------------------------

# traceana's CLI with its address space capped once imported (polars' threads started), and
# one step of the command made to ask for 64 GiB: a real MemoryError from the allocator.
CAPPED = """
import resource, sys
import trace_analyzer.loading.profile as profile
import trace_analyzer.questions.ops.analysis as ops  # the command imports it when it runs
from trace_analyzer.cli import main
where = sys.argv.pop(1)
def hungry(real):
    def f(*a, **k):
        bytearray(64 << 30)
        return real(*a, **k)
    return f
if where == "reading":  # the loader, and the cache's name for it
    for module in (profile, sys.modules.get("trace_analyzer.cache.store")):
        if hasattr(module, "read_parts"):
            module.read_parts = hungry(module.read_parts)
else:
    ops.ops = hungry(ops.ops)
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
resource.setrlimit(resource.RLIMIT_AS, (16 << 30, hard))
sys.argv[0] = "traceana"
main()
"""


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_AS"), reason="no RLIMIT_AS here")
@pytest.mark.parametrize("where", ["reading", "analysing"])
def test_out_of_memory_is_one_line_that_says_so(where):
    proc = subprocess.run([sys.executable, "-c", CAPPED, where, "ops", str(NAIVE), "--no-cache"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"traceana: error: {NAIVE}: out of memory reading it" if
                               where == "reading" else
                               f"traceana: error: out of memory analysing {NAIVE}")
    assert "not valid JSON" not in proc.stderr and "internal error" not in proc.stderr


# --- trend on a table it cannot read; info on a run without events ------------------------

def test_trend_names_the_columns_a_table_lacks(tmp_path):
    table = tmp_path / "runs.parquet"  # the key columns batch checks, and one of the rest
    pl.DataFrame({"run_id": ["a"], "fingerprint": ["f"], "error": [None],
                  "busy_ns": [1]}).write_parquet(table)
    proc = traceana("trend", table)
    assert proc.returncode == 2 and proc.stdout == ""
    want = ["capture_time", "modified_time", "variant", "backend", "device", "idle_ns",
            "window_ns", "executions"]
    assert proc.stderr == (f"traceana: error: {table}: not a traceana batch table trend can "
                           f"read: no {', '.join(want)} columns (rerun `traceana batch` to "
                           "write a new table)\n")


def test_info_on_a_run_without_events_says_what_it_found(tmp_path):
    run = tmp_path / "run"
    write_trace(run / "trace.json", kineto([], baseTimeNanoseconds=BASE))
    (run / "capture.json").write_text(json.dumps({"backend": "cpu", "variant": "naive"}))
    proc = traceana("info", run, "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert "None" not in proc.stdout and " over –" not in proc.stdout
    assert ("no events: the run holds trace.json (kineto-json, 0 events); capture.json; "
            "its traces hold no events") in proc.stdout
    doc = json.loads(traceana("info", run, "--no-cache", "--format", "json").stdout)
    assert doc["runs"][0]["notes"][0].startswith("no events: the run holds trace.json")


def test_info_on_a_run_whose_events_were_all_dropped_says_so(tmp_path):
    run = all_dropped(tmp_path)
    proc = traceana("info", run, "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert "the 4 events read were all dropped as malformed" in proc.stdout

