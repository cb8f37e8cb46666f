"""Shared helpers: tiny inputs written to tmp_path, the CLI runner, and the shared corpus."""

from __future__ import annotations

import os

import gzip
import json
import re
from itertools import pairwise
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from trace_analyzer.cli import cli

# The repository is /work/main; the shared corpus sits beside it in ../shared/corpus/hta.
# pytest-xdist's workers (make test: -n auto) inherit COLUMNS=80 and LINES=24 from execnet; a
# test sees the environment of a plain pytest run, where the width is set by the tests that
# want one
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "hta"
CORPUS_DATA = CORPUS / "tests" / "data"

# The SystemProfileEvents columns of Explorer schema 7.4.0 (docs/neuron-formats.md §2.1).
EXPLORER_COLUMNS: dict[str, pl.DataType] = {
    "id": pl.Int64,
    "name": pl.String,
    "start_ts": pl.Int64,
    "end_ts": pl.Int64,
    "duration_ns": pl.Int64,
    "trace_event_source": pl.String,
    "instance_id": pl.String,
    "process_id": pl.Int64,
    "thread_id": pl.Int64,
    "nc_idx": pl.Int64,
    "pcore_idx": pl.Int64,
    "worker_gid": pl.Int64,
    "flow_id": pl.List(pl.String),
    "framework_stream_id": pl.String,
    "extra_attributes_json": pl.String,
}


def write_trace(path: Path, doc: object) -> Path:
    """Write ``doc`` as JSON to ``path`` (gzip-compressed when the name ends in .gz)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def kineto(events: list[dict], **top) -> dict:
    """Return a Kineto trace document holding ``events`` and any top-level keys given."""
    return {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms", **top,
            "traceEvents": events}


def X(cat: str, name: str, ts: float, dur: float, pid: int = 100, tid: int = 100, **args) -> dict:
    """Return one complete ('X') Kineto event."""
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def write_parquet(path: Path, rows: list[dict], drop: tuple[str, ...] = ()) -> Path:
    """Write an Explorer SystemProfileEvents table with the 7.4.0 columns (minus ``drop``).

    Each row gives the columns it needs; the others are null. ``duration_ns`` defaults to
    end_ts - start_ts.
    """
    full = []
    for r in rows:
        row = {c: r.get(c) for c in EXPLORER_COLUMNS}
        if row["duration_ns"] is None and row["start_ts"] is not None and row["end_ts"] is not None:
            row["duration_ns"] = row["end_ts"] - row["start_ts"]
        full.append(row)
    df = pl.DataFrame(full, schema=EXPLORER_COLUMNS, orient="row").drop(list(drop))
    path.parent.mkdir(parents=True, exist_ok=True)
    df.write_parquet(path)
    return path


def write_metadata(folder: Path, version: str) -> Path:
    """Write an Explorer Metadata.parquet table holding ``profile_schema_version``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "Metadata.parquet"
    pl.DataFrame({"profile_schema_version": [version], "ntff_version": [5]}).write_parquet(path)
    return path


@pytest.fixture(autouse=True, scope="session")
def _cache_outside_the_repository(tmp_path_factory):
    """CLI runs keep their analysis cache in a session folder, not in fixtures/ or the corpus
    (a second run of the same profile is then answered from it, as for a user)."""
    import os

    folder = tmp_path_factory.mktemp("traceana-cache")
    # the library's default (cache=True) and a command without TRACEANA_CACHE_DIR use the user's
    # cache directory: a session folder too, never the home folder of whoever runs the suite
    home_cache = tmp_path_factory.mktemp("xdg-cache")
    saved = {k: os.environ.get(k) for k in ("TRACEANA_CACHE_DIR", "XDG_CACHE_HOME")}
    os.environ["TRACEANA_CACHE_DIR"] = str(folder)
    os.environ["XDG_CACHE_HOME"] = str(home_cache)
    yield folder
    for k, old in saved.items():
        if old is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = old


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run ``traceana ARGS`` in-process; return (exit code, stdout, stderr)."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


# The code of a traceana process that records its own peak memory: as it exits it writes
# its /proc/self/status to the file named by $PEAK_FILE. A child's rusage (ru_maxrss) is no
# measure: Linux counts from the parent's size at the fork, which late in a suite is pytest's.
PEAK_ENTRY = (
    "import atexit, os, sys; atexit.register(lambda: open(os.environ['PEAK_FILE'], 'w')"
    ".write(open('/proc/self/status').read())); from trace_analyzer.cli import main; "
    "sys.argv[0] = 'traceana'; main()"
)


def peak_mib(status: str) -> int:
    """Return the peak RSS in MiB (VmHWM) of a /proc/<pid>/status text (``PEAK_ENTRY``)."""
    hwm = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(hwm.split()[1]) // 1024


def run_process(*args: object, timeout: float = 60) -> tuple[int, str, str, int, float]:
    """Run ``traceana ARGS`` as a process: (exit code, stdout, stderr, peak RSS in MiB, wall
    seconds); the test fails if it still runs after ``timeout`` s. The peak is the process's
    own high-water mark (``PEAK_ENTRY``; -1 when it died before its atexit)."""
    import os
    import subprocess
    import sys
    import tempfile
    import time

    with tempfile.NamedTemporaryFile("r") as peak:  # outside the folders traceana scans
        start = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "-c", PEAK_ENTRY, *map(str, args)],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=timeout, env={**os.environ, "PEAK_FILE": peak.name})
        except subprocess.TimeoutExpired:
            pytest.fail(f"traceana {' '.join(map(str, args))} still running after {timeout} s")
        wall = time.monotonic() - start
        status = peak.read()
    return proc.returncode, proc.stdout, proc.stderr, peak_mib(status) if status else -1, wall


def one_error(code: int, out: str, err: str, *_: object) -> str:
    """Return the one error line of a run that exited 2 (fail the test otherwise)."""
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("traceana: error: "), err
    return lines[0]


def info_json(path: Path | str) -> dict:
    """Return ``traceana info PATH --format json`` parsed; fail the test on a nonzero exit."""
    code, out, err = run_cli("info", str(path), "--format", "json")
    assert code == 0, f"exit {code}: {err}"
    return json.loads(out)


@pytest.fixture
def small_disk(tmp_path):
    """A real tmpfs of 2 MiB, empty, mounted for the test (root only: skipped elsewhere);
    ``fill(disk)`` then leaves no byte free on it."""
    import os
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a tmpfs of our own needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
                          capture_output=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"no tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def fill(disk: Path) -> None:
    """Fill the file system of ``disk`` to its last byte (a file ``filler`` in it)."""
    import os

    st = os.statvfs(disk)
    (disk / "filler").write_bytes(b"\0" * (st.f_bavail * st.f_frsize))


@pytest.fixture
def corpus() -> Path:
    """The shared HTA sample traces (tests/data), or a skip when ../shared/corpus is absent."""
    if not CORPUS_DATA.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {CORPUS_DATA}; the corpus tests need the "
                    "shared HTA sample traces checked out beside the repository")
    return CORPUS_DATA


RESOLUTION_NS = 1  # docs/gaps.md: blocks at most 1 ns apart are one (the clock's resolution)


def union_of(intervals: list[tuple[int, int]], apart: int = RESOLUTION_NS) -> list[tuple[int, int]]:
    """Reference model for the tests: the union of intervals; blocks that overlap, touch or
    lie at most ``apart`` ns apart (RESOLUTION_NS unless told) are one."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1] + apart:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def in_window(intervals: list[tuple[int, int]], w0: int, w1: int) -> list[tuple[int, int]]:
    """Reference model: the executions of the window [w0, w1], clipped to it (docs/gaps.md):
    those overlapping it by more than an instant, and zero-length ones inside it, edges
    included."""
    return [(max(s, w0), min(e, w1)) for s, e in intervals
            if (e > w0 and s < w1) or (s == e and w0 <= s <= w1)]


def busy_model(intervals: list[tuple[int, int]], w0: int, w1: int) -> dict:
    """Reference model: one lane's (or device's) busy, idle, leading and trailing time and its
    gaps in the window [w0, w1], from the sorted-and-merged union of its executions clipped
    to the window. Executions that touch are one block, so no gap is ever 0 ns long; a
    zero-length execution is a block of its own, an instant that splits the gap it falls in."""
    clipped = in_window(intervals, w0, w1)
    blocks = union_of(clipped)
    found = [(a[1], b[0]) for a, b in pairwise(blocks)]
    return dict(executions=len(clipped), busy_ns=sum(e - s for s, e in blocks),
                idle_ns=sum(e - s for s, e in found),
                leading_ns=blocks[0][0] - w0 if blocks else w1 - w0,
                trailing_ns=w1 - blocks[-1][1] if blocks else 0, gaps=found)


def _length(iv: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in iv)


def _within(iv: list[tuple[int, int]], a: int, b: int) -> int:
    """The time of the union ``iv`` inside [a, b]."""
    return sum(min(e, b) - max(s, a) for s, e in iv if min(e, b) > max(s, a))


def device_model(compute: list[tuple[int, int]], comm: list[tuple[int, int]],
                 memory: list[tuple[int, int]], w0: int, w1: int) -> dict:
    """Reference model of a device's states in [w0, w1] (docs/gaps.md, "The device's
    states"): busy and gaps from its compute (``busy_model``); exposed communication, the
    collectives' time with no compute; memory, the copies' and sets' time with neither;
    leading and trailing, nothing before its first work of any kind and after its last;
    idle the rest; ``edge``, the idle that lies in no gap (before its first compute or after
    its last, between other work)."""
    out = busy_model(compute, w0, w1)
    c = union_of(in_window(compute, w0, w1))
    # merged as the compute is (instants 1 ns apart are 1 ns of work); an instant alone is none
    m = [iv for iv in union_of(in_window(comm, w0, w1)) if iv[1] > iv[0]]
    x = [iv for iv in union_of(in_window(memory, w0, w1)) if iv[1] > iv[0]]
    cm = union_of(c + m, apart=0)
    exposed = _length(m) - sum(_within(c, s, e) for s, e in m)
    alone = _length(x) - sum(_within(cm, s, e) for s, e in x)
    spans = c + m + x
    first = min((s for s, _ in spans), default=None)
    last = max((e for _, e in spans), default=None)
    leading = w1 - w0 if first is None else first - w0
    trailing = 0 if last is None else w1 - last
    out.update(exposed_communication_ns=exposed, memory_ns=alone, leading_ns=leading,
               trailing_ns=trailing)
    out["idle_ns"] = (w1 - w0) - out["busy_ns"] - exposed - alone - leading - trailing
    edge = 0 if c else out["idle_ns"]  # no compute: no gap, all its idle lies at the edges
    if c and first is not None:
        every = union_of(c + m + x, apart=0)  # the kinds merged apart, then laid together
        for a, b in ((first, c[0][0]), (c[-1][1], last)):
            edge += (b - a) - _within(every, a, b) if b > a else 0
    out["edge"] = edge
    return out


def check_busy_and_idle(run: dict, hw: list[tuple], w0: int, w1: int,
                        min_gap_ns: int = 0, label=lambda key, name: name,
                        copies: list[tuple[str, int, int]] = ()) -> None:
    """Check one run of a gaps result (the shape of the JSON output: lanes, devices, gaps,
    device_gaps, summary) against its hardware executions ``hw`` (lane, device, start, end,
    and optionally their kind: ``compute``, the default, ``communication`` or ``memory``) and
    device copies ``copies`` (device, start, end) in the window [w0, w1], with busy_model:

    (a) a lane's idle is the time in the gaps listed (every gap when ``min_gap_ns`` is 0: they
        are listed from 1 ns, and 0 ns gaps do not exist, executions that touch being one
        block), and with --min-gap the list keeps the gaps of at least that length while idle
        still counts them all; a device's gaps add up to its idle, exposed communication and
        memory time in them, and its idle is theirs and the idle at its edges (device_model);
    (b) busy is the union of the executions clipped to the window per lane, of the compute
        per device (a device being the union of its lanes);
    (c) a lane's leading idle runs from the window start to the first busy start, trailing
        idle from the last busy end to the window end (all leading when nothing ran in the
        window); a device's from and to its first and last work of any kind.

    ``label(key, name)`` turns a lane or device label of the run into the name ``hw`` uses.
    """
    least = max(min_gap_ns, 1)
    kind = [h[4] if len(h) > 4 else "compute" for h in hw]
    totals = dict.fromkeys(("busy_ns", "idle_ns", "leading_ns", "trailing_ns", "executions"), 0)
    for key, rows, listed, of in (("lane", run["lanes"], run["gaps"], lambda h: h[0]),
                                  ("device", run["devices"], run["device_gaps"], lambda h: h[1])):
        got = {label(key, r[key]): r for r in rows}
        assert set(got) == {of(h) for h in hw}, key
        for name, r in got.items():
            mine = [(h[2], h[3], k) for h, k in zip(hw, kind, strict=True) if of(h) == name]
            if key == "lane":
                want = busy_model([(s, e) for s, e, _ in mine], w0, w1)
            else:
                want = device_model([(s, e) for s, e, k in mine if k == "compute"],
                                    [(s, e) for s, e, k in mine if k == "communication"],
                                    [(s, e) for s, e, k in mine if k == "memory"]
                                    + [(s, e) for d, s, e in copies if d == name], w0, w1)
                want["executions"] = len(in_window([(s, e) for s, e, _ in mine], w0, w1))
            gaps_here = sorted((g["start_ns"], g["end_ns"]) for g in listed
                               if label(key, g[key]) == name)
            where = (key, name, r, want)
            assert r["busy_ns"] == want["busy_ns"], where  # (b)
            assert r["leading_ns"] == want["leading_ns"], where  # (c)
            assert r["trailing_ns"] == want["trailing_ns"], where  # (c)
            assert r["idle_ns"] == want["idle_ns"], where  # (a), --min-gap or not
            if key == "lane" and min_gap_ns == 0:
                assert r["idle_ns"] == sum(e - s for s, e in gaps_here), where  # (a)
            if key == "device":
                for k in ("exposed_communication_ns", "memory_ns"):
                    assert r[k] == want[k], where
                parts = [g for g in listed if label(key, g[key]) == name]
                for g in parts:  # each gap's states add up to it
                    assert g["exposed_communication_ns"] + g["memory_ns"] + g["idle_ns"] \
                        == g["duration_ns"], g
                if min_gap_ns == 0:
                    assert r["idle_ns"] == sum(g["idle_ns"] for g in parts) + want["edge"], where
            assert gaps_here == [(s, e) for s, e in want["gaps"] if e - s >= least], where
            assert r["gap_count"] == len(gaps_here), where
            assert r["executions"] == want["executions"], where
            if key == "device":
                for k in totals:
                    totals[k] += want[k]
    s = run["summary"]
    assert {k: s[k] for k in totals} == totals, s
    assert s["window_ns"] == (w1 - w0) * len(run["devices"]), s
    assert s["gap_count"] == len(run["device_gaps"]), s


ERROR_PREFIX = "traceana: error: "


def one_line_error(code: int, out: str, err: str) -> str:
    """Assert the CLI's bad-input contract and return the error line: exit 2, nothing on
    stdout, one line on stderr starting ``traceana: error: `` and no traceback.

    ``traceana: internal error: ...`` (a crash the CLI caught, also exit 2) fails here: it
    is a bug, not an answer to bad input.
    """
    assert code == 2, (code, out, err)
    assert out == "", out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err, err
    assert lines[0].startswith(ERROR_PREFIX), f"not a `{ERROR_PREFIX}...` line: {lines[0]!r}"
    return lines[0]


def render_all(results: dict) -> None:
    """Put every analysis result (a RunResults) through every renderer: text comes back;
    JSON parses."""
    from trace_analyzer.render import RENDERERS

    for result in results.values():
        for name, renderer in RENDERERS.items():
            text = renderer(result)
            assert isinstance(text, str)
            if name == "json":
                json.loads(text)


def every_analysis(p, folder: Path, min_gap_ns: int = 0) -> dict:
    """Run info, gaps, ops, chain and diff (the run against itself) on one loaded profile,
    each as what its command prints (a RunResults)."""
    import trace_analyzer as ta
    from trace_analyzer.questions.diff.analysis import diff_runs
    from trace_analyzer.questions.gaps.analysis import gaps_runs

    def runs(result):
        return ta.RunResults(str(folder), (result,))

    return {
        "info": runs(ta.info(p)),
        "gaps": gaps_runs([ta.gaps(p, min_gap_ns=min_gap_ns)], str(folder), min_gap_ns=min_gap_ns),
        "ops": runs(ta.ops(p)),
        "chain": runs(ta.chains(p)),
        "diff": diff_runs(ta.diff(p, p, base_label="base", head_label="head")),
    }


def gaps_doc(profiles, path, **options) -> dict:
    """Return what ``traceana gaps PATH --format json`` says of these profiles, as data."""
    import trace_analyzer as ta
    from trace_analyzer.questions.gaps.analysis import gaps_runs

    results = [ta.gaps(p, **options) for p in profiles]
    return gaps_runs(results, str(path), min_gap_ns=options.get("min_gap_ns", 0)).to_json()


def chain_doc(profiles, path, **options) -> dict:
    """Return what ``traceana chain PATH --format json`` says of these profiles, as data."""
    import trace_analyzer as ta

    return ta.RunResults(str(path), tuple(ta.chains(p, **options) for p in profiles)).to_json()


class Reads:
    """Counts the sources a load reads; ``forbid`` makes a read fail (it must be a cache hit)."""

    def __init__(self, real):
        self.real, self.n, self.forbid = real, 0, False

    def __call__(self, src, keep_args=False, **options):
        if self.forbid:
            raise AssertionError(f"{src.path} was read: the run should come from the cache")
        self.n += 1
        return self.real(src, keep_args, **options)


@pytest.fixture
def reads(monkeypatch) -> Reads:
    """The sources read by loads in the test, counted (``Reads``)."""
    from trace_analyzer.loading import profile

    counter = Reads(profile.read_source)
    monkeypatch.setattr(profile, "read_source", counter)
    return counter


@pytest.fixture(scope="session")
def trace_processor():
    """Perfetto's trace processor (tests/perfetto_tp.py), one for the session: ``load`` a
    trace, then ``query`` it with SQL. Skips with the reason where it cannot run."""
    import perfetto_tp

    why = perfetto_tp.missing()
    if why:
        pytest.skip(f"Perfetto's trace processor cannot run here: {why}")
    with perfetto_tp.Engine() as tp:
        yield tp


# The naive RMSNorm fixture's device-profile export (six NEFFs, one core), and a slowed copy
# of it for `traceana engines HEAD --base BASE` (tests/analyses/test_engines_diff.py).
NAIVE_EXPORT = (
    Path(__file__).resolve().parents[1] / "fixtures" / "rmsnorm_naive" / "device_profiles"
    / "rmsnorm_naive_i-0123456789abcdef0_pid_4242_nc_0_session_0"
)  # fmt: skip


def slowed_export(dest: Path) -> Path:
    """Copy NAIVE_EXPORT under ``dest`` (returned: the folder holding the copy) with every
    TensorEngine instruction and ActiveTime interval twice as long, and the first execution
    (ExecutionInfo) 10 % longer; the rest as it was."""
    import shutil

    out = dest / NAIVE_EXPORT.name
    shutil.copytree(NAIVE_EXPORT, out)
    slow(out)
    return dest


def slow(export: Path) -> None:
    """Slow the device-profile export folder ``export`` in place, as ``slowed_export`` says."""
    out = export
    for table in ("Instruction", "ActiveTime"):
        df = pl.read_parquet(out / f"{table}.parquet")
        tensor = pl.col("engine").str.to_lowercase() == "tensor"
        longer = pl.when(tensor).then(pl.col("duration_ns") * 2).otherwise(pl.col("duration_ns"))
        df = df.with_columns(duration_ns=longer).with_columns(
            end_ts=pl.col("start_ts") + pl.col("duration_ns")
        )
        df.write_parquet(out / f"{table}.parquet")
    ex = pl.read_parquet(out / "ExecutionInfo.parquet")
    span = pl.col("execution_end_ts") - pl.col("execution_start_ts")
    first = pl.col("execution_index") == pl.col("execution_index").min()
    ex = ex.with_columns(
        execution_end_ts=pl.when(first)
        .then(pl.col("execution_end_ts") + span // 10)
        .otherwise(pl.col("execution_end_ts"))
    )
    ex.write_parquet(out / "ExecutionInfo.parquet")

NEFF_NAME = re.compile(rb"neff_(\d+)_vnc_(\d+)\.neff")


def renamed(name: str) -> str:
    """A NEFF's name after a recompile: its hash's digits reversed (as long, so that the
    placeholder binaries keep their sizes), e.g. neff_123_vnc_0.neff -> neff_321_vnc_0.neff."""
    m = NEFF_NAME.fullmatch(name.encode())
    assert m, name
    return f"neff_{m[1].decode()[::-1]}_vnc_{m[2].decode()}.neff"


def renamed_copy(src: Path, dest: Path) -> dict[str, str]:
    """Copy the fixture folder ``src`` to ``dest`` with every NEFF renamed (``renamed``), in
    every file name, text and binary file and Parquet string column: the same run, its graphs
    recompiled under new hashes. Return old name -> new name."""
    import shutil

    shutil.copytree(src, dest)
    names: set[str] = set()
    for f in dest.rglob("*"):
        if f.is_file() and f.suffix == ".parquet":
            df = pl.read_parquet(f)
            cells = [v for c, t in df.schema.items() if t == pl.String for v in df[c] if v]
            data = "\n".join(cells).encode()
        else:
            data = f.read_bytes() if f.is_file() else b""
        names |= {m.group(0).decode() for m in NEFF_NAME.finditer(data + b"\n" + f.name.encode())}
    new = {n: renamed(n) for n in sorted(names)}
    assert len(set(new.values()) | set(new)) == 2 * len(new), "a renamed name is an old one"
    for f in sorted(dest.rglob("*")):
        if not f.is_file():
            continue
        if f.suffix == ".parquet":
            df = pl.read_parquet(f)
            text = [c for c, t in df.schema.items() if t == pl.String]
            for old, now in new.items():
                df = df.with_columns(pl.col(text).str.replace_all(old, now, literal=True))
            df.write_parquet(f)
        else:
            data = f.read_bytes()
            for old, now in new.items():
                data = data.replace(old.encode(), now.encode())
            f.write_bytes(data)
        if f.name in new:
            f.rename(f.with_name(new[f.name]))
    return new


def raw_host_figures(doc: dict) -> dict:
    """The host's figures of a raw Kineto trace document, computed here from its events and
    not by traceana: ``steps`` (ProfilerStep#N → its length in ns, first start to last end),
    ``span_ns`` (the first event's start to the last end, the profiler's own 'Trace' span and
    instants left out), ``self_ns`` (per op name, the summed self CPU time: each op's duration
    less its direct children's on its thread; ops are ``cpu_op``, or ``Operator`` in old
    traces) and ``calls`` per op name."""
    import re
    from collections import defaultdict

    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace"]
    spans: dict[int, list[int]] = {}
    for e in xs:
        m = re.fullmatch(r"ProfilerStep#(\d+)", e["name"])
        if m:
            s, end = round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)
            lo, hi = spans.get(int(m[1]), [s, end])
            spans[int(m[1])] = [min(lo, s), max(hi, end)]
    ops = sorted((e for e in xs if e.get("cat") in ("cpu_op", "Operator")),
                 key=lambda e: (e["pid"], e["tid"], e["ts"], -e["dur"]))  # fmt: skip
    self_ns: dict[str, int] = defaultdict(int)
    calls: dict[str, int] = defaultdict(int)
    stack: list[tuple[object, str, int]] = []  # (thread, name, end) of the open ops
    for e in ops:
        thread, start, dur = (e["pid"], e["tid"]), round(e["ts"] * 1000), round(e["dur"] * 1000)
        while stack and (stack[-1][0] != thread or stack[-1][2] <= start):
            stack.pop()
        if stack:
            self_ns[stack[-1][1]] -= dur  # the direct parent's own time loses the child's
        self_ns[e["name"]] += dur
        calls[e["name"]] += 1
        stack.append((thread, e["name"], start + dur))
    starts = [round(e["ts"] * 1000) for e in xs]
    ends = [round((e["ts"] + e["dur"]) * 1000) for e in xs]
    return {"steps": {k: hi - lo for k, (lo, hi) in sorted(spans.items())},
            "span_ns": max(ends) - min(starts), "self_ns": dict(self_ns), "calls": dict(calls)}
