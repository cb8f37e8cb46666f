"""``traceana batch``: every run under some roots, analysed in parallel, into one Parquet table.

The pieces (docs/batch.md):

- ``find_runs(roots)`` discovers the runs under each root: profile folders in any layout
  traceana reads, and archives (.tar, .tar.gz/.tgz, .zip) read in memory (archive.py). A run's
  identity (``run_id``) is its root path, ``archive!/member`` inside an archive. Each run gets
  a fingerprint: the size and modification time of its files, or their SHA-256 with --hash.
- ``analyse_run(spec)`` is the per-run function: module-level and picklable, so a process
  pool and a Dask cluster run the very same code. It returns one row per device; any failure
  is one row with ``error`` set and the identity columns filled.
- ``run_batch`` skips the runs already in the output table with the same fingerprint, maps
  ``analyse_run`` over the others (in-process, local ``Workers``, or a Dask scheduler),
  shows progress on stderr, and writes the table atomically (a temporary file in the same
  folder, then ``os.replace``), every ``checkpoint_s`` seconds and at the end, so an
  interrupted batch leaves a whole table and a rerun resumes.
- ``Workers`` runs ``analyse_run`` in spawned processes, one run each at a time: a worker
  that dies mid-run or runs past ``timeout`` is killed and replaced, and its run becomes a
  row with ``error`` set and no fingerprint (so the next batch tries it again).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timezone
from pathlib import Path

import polars as pl

from trace_analyzer._version import __version__
from trace_analyzer.errors import InputError, TraceanaError, UsageError
from trace_analyzer.inputs.archive import MemberPath, is_archive
from trace_analyzer.inputs.discover import Run, discover, run_files

CHECKPOINT_S = 30.0
DASK_HINT = "pip install 'traceana[dask]'"

SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,  # the run's root: a folder, or archive!/member
    "path": pl.String,  # the folder, or the archive file
    "member": pl.String,  # the run's root inside the archive (null for folders)
    "fingerprint": pl.String,  # stat:<digest of sizes and mtimes> or sha256:<digest>
    "device": pl.String,  # one row per device; null when nothing ran on hardware
    "capture_time": pl.Datetime("us", "UTC"),  # capture.json started_at
    "modified_time": pl.Datetime("us", "UTC"),  # newest file of the run (archive: the archive)
    "backend": pl.String,
    "variant": pl.String,
    "workload": pl.String,
    "format": pl.String,  # the formats read, comma-separated
    "events": pl.Int64,  # events of the run
    "executions": pl.Int64,
    "busy_ns": pl.Int64,  # device time
    "idle_ns": pl.Int64,
    "window_ns": pl.Int64,
    "idle_pct": pl.Float64,
    "gap_count": pl.Int64,
    "gap_p50_ns": pl.Int64,
    "gap_p90_ns": pl.Int64,
    "gap_max_ns": pl.Int64,
    "top_idle_op": pl.String,  # the op with the most idle before it, on this device
    "top_idle_op_ns": pl.Int64,
    "linked_pct": pl.Float64,  # link coverage: % of hardware executions reaching an op
    "traceana_version": pl.String,
    "analysed_at": pl.Datetime("us", "UTC"),
    "analysis_s": pl.Float64,
    "error": pl.String,  # null when the run was analysed
}


@dataclass
class RunSpec:
    """One run to analyse: its identity, fingerprint, and what discovery found (picklable)."""

    run_id: str
    path: str
    member: str | None
    fingerprint: str | None
    modified_ns: int | None
    run: Run | None = None
    error: str | None = None  # set when the run could not even be found (a corrupt archive)


@dataclass
class BatchResult:
    table: pl.DataFrame
    found: int
    analysed: int
    skipped: int
    succeeded: int
    failed: int
    failures: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- discovery


def _walk_archives(folder: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if is_archive(p):
                yield p


def find_runs(roots: Iterable[str | Path], *, hash_files: bool = False) -> list[RunSpec]:
    """Return every run under ``roots`` (folders, archives, trace files), in path order."""
    specs: dict[str, RunSpec] = {}
    for root in roots:
        root = Path(root)
        if not root.exists():
            raise InputError(root, "no such file or folder")
        places: list[Path] = []
        if root.is_dir():
            try:
                runs = discover(root)
            except InputError as e:  # a folder of archives only holds no profile itself
                if "no profile found" not in e.problem:
                    raise
                runs = []
            for run in runs:
                spec = _spec(run, hash_files)
                specs.setdefault(spec.run_id, spec)
            places = list(_walk_archives(root))
        else:
            places = [root]
        for place in places:
            try:
                runs = discover(place)
            except TraceanaError as e:
                spec = _broken(place, str(e))
                specs.setdefault(spec.run_id, spec)
                continue
            for run in runs:
                spec = _spec(run, hash_files)
                specs.setdefault(spec.run_id, spec)
    return [specs[k] for k in sorted(specs)]


def _broken(archive: Path, error: str) -> RunSpec:
    """A run that discovery could not open: the whole archive, as one failed run."""
    try:
        st = archive.stat()
        fp, mtime = f"stat:{st.st_size}:{st.st_mtime_ns}", st.st_mtime_ns
    except OSError:
        fp, mtime = None, None
    return RunSpec(
        run_id=str(archive),
        path=str(archive),
        member=None,
        fingerprint=fp,
        modified_ns=mtime,
        error=error,
    )


def _spec(run: Run, hash_files: bool) -> RunSpec:
    root = run.root
    if isinstance(root, MemberPath):
        path, member = str(root.archive.path), root.member or "."
    else:
        path, member = str(root), None
    fp, mtime = fingerprint(run, hash_files)
    return RunSpec(
        run_id=str(root), path=path, member=member, fingerprint=fp, modified_ns=mtime, run=run
    )


def fingerprint(run: Run, hash_files: bool = False) -> tuple[str, int | None]:
    """Return the run's fingerprint and its newest modification time (ns since the epoch).

    ``stat:`` digests each file's name, size and modification time (an archive member's
    size and the archive's own modification time); ``sha256:`` digests the files' bytes.
    """
    digest = hashlib.sha256()
    newest = None
    for f in run_files(run):
        if isinstance(f, MemberPath):
            st = f.archive.path.stat()
            size, mtime = f.stat_size(), st.st_mtime_ns
        else:
            st = f.stat()
            size, mtime = st.st_size, st.st_mtime_ns
        newest = mtime if newest is None else max(newest, mtime)
        digest.update(f"{f}\0".encode())
        if hash_files:
            digest.update(f.read_bytes())
        else:
            digest.update(f"{size}:{mtime}\0".encode())
    return f"{'sha256' if hash_files else 'stat'}:{digest.hexdigest()[:32]}", newest


# ----------------------------------------------------------------------------- the per-run function


def _ts(ns: int | None) -> datetime | None:
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, tz=UTC)


def _capture_info(run: Run) -> dict:
    from trace_analyzer.inputs.capture import read_capture_json

    for path in sorted(run.captures, key=str):
        doc = read_capture_json(path)
        if doc:
            try:
                when = datetime.fromisoformat(str(doc.get("started_at")))
                when = (
                    when.replace(tzinfo=UTC)
                    if when.tzinfo is None
                    else when.astimezone(UTC)
                )
            except (TypeError, ValueError):
                when = None
            return {
                "capture_time": when,
                "backend": doc.get("backend"),
                "variant": doc.get("variant"),
                "workload": doc.get("workload"),
            }
    return {}


def _one_line(e: BaseException) -> str:
    text = str(e) if isinstance(e, TraceanaError) else f"{type(e).__name__}: {e}"
    lines = text.strip().splitlines()
    return lines[0] if lines else type(e).__name__


def _base_row(spec: RunSpec) -> dict:
    return {
        "run_id": spec.run_id,
        "path": spec.path,
        "member": spec.member,
        "fingerprint": spec.fingerprint,
        "modified_time": _ts(spec.modified_ns),
        "traceana_version": __version__,
    }


def analyse_run(spec: RunSpec) -> list[dict]:
    """Return the rows of one run, one per device; a failure is one row with ``error`` set.

    This is what the process pool and the Dask workers run: it never raises.
    """
    start = time.perf_counter()
    base = _base_row(spec)
    try:
        if spec.error is not None:
            raise InputError(spec.path, spec.error.removeprefix(f"{spec.path}: "))
        rows = _analyse(spec.run, base)
    except Exception as e:  # a bad run is recorded, and the batch goes on
        rows = [{**base, "error": _one_line(e)}]
    elapsed = round(time.perf_counter() - start, 4)
    now = datetime.now(UTC)
    for r in rows:
        r["analysis_s"] = elapsed
        r["analysed_at"] = now
    return rows


def _analyse(run: Run, base: dict) -> list[dict]:
    from trace_analyzer.analyses.chain import chains
    from trace_analyzer.analyses.gaps import device_of, gaps
    from trace_analyzer.core.profile import load_run

    profile = load_run(run)
    g = gaps(profile)
    common = {
        **base,
        **_capture_info(run),
        "events": profile.events.height,
        "error": None,
        "format": ",".join(sorted({r.format for r in profile.reads if r.read})) or None,
    }
    if g.devices.is_empty():
        s = g.summary
        return [
            {
                **common,
                "device": None,
                **{
                    k: s[k]
                    for k in (
                        "executions",
                        "busy_ns",
                        "idle_ns",
                        "window_ns",
                        "idle_pct",
                        "gap_count",
                        "gap_p50_ns",
                        "gap_p90_ns",
                        "gap_max_ns",
                    )
                },
            }
        ]
    chain = (g.chain if g.chain is not None else chains(profile.events)).with_columns(
        device=device_of(pl.col("lane"))
    )
    linked = {
        d: (round(100 * n_linked / n, 2) if n else None)
        for d, n, n_linked in chain.group_by("device")
        .agg(pl.len(), pl.col("op").is_not_null().sum())
        .rows()
    }
    top = {}
    if not g.device_gaps.is_empty():
        per_op = (
            g.device_gaps.group_by("device", op=pl.col("next_op").fill_null("(unlinked)"))
            .agg(ns=pl.col("duration_ns").sum())
            .sort("ns", "op", descending=[True, False])
        )
        top = {
            d: (op, ns)
            for d, op, ns in per_op.group_by("device", maintain_order=True).first().rows()
        }
    rows = []
    for d in g.devices.to_dicts():
        op, ns = top.get(d["device"], (None, None))
        rows.append(
            {
                **common,
                "device": d["device"],
                "executions": d["executions"],
                "busy_ns": d["busy_ns"],
                "idle_ns": d["idle_ns"],
                "window_ns": d["window_ns"],
                "idle_pct": d["idle_pct"],
                "gap_count": d["gap_count"],
                "gap_p50_ns": d["gap_p50_ns"],
                "gap_p90_ns": d["gap_p90_ns"],
                "gap_max_ns": d["gap_max_ns"],
                "top_idle_op": op,
                "top_idle_op_ns": ns,
                "linked_pct": linked.get(d["device"]),
            }
        )
    return rows


def to_frame(rows: list[dict]) -> pl.DataFrame:
    """Return rows as a table with the batch schema (missing columns null)."""
    if not rows:
        return pl.DataFrame(schema=SCHEMA)
    return pl.DataFrame([{c: r.get(c) for c in SCHEMA} for r in rows], schema=SCHEMA, strict=False)


# ----------------------------------------------------------------------------- executors


def _local(
    specs: list[RunSpec],
    jobs: int,
    timeout: float | None = None,
    analyse: Callable[[RunSpec], list[dict]] = analyse_run,
) -> Iterator[list[dict]]:
    """Yield each run's rows: in-process for one job and no timeout, else worker processes."""
    if (jobs <= 1 or len(specs) <= 1) and timeout is None:
        for spec in specs:
            yield analyse(spec)
        return
    yield from Workers(min(jobs, len(specs)), timeout, analyse).map(specs)


def _worker_main(conn, analyse: Callable[[RunSpec], list[dict]]) -> None:
    """A worker process: analyse the runs it is sent, one at a time, until it is sent None."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    from trace_analyzer.analyses import chain, gaps
    from trace_analyzer.core import profile

    try:
        conn.send(READY)
    except (OSError, ValueError):
        return
    while True:
        try:
            spec = conn.recv()
        except (EOFError, OSError):
            return
        if spec is None:
            return
        try:
            rows = analyse(spec)
        except BaseException as e:  # analyse_run never raises; a custom one might
            rows = [{**_base_row(spec), "error": _one_line(e)}]
        try:
            conn.send(rows)
        except (OSError, ValueError):  # the main process is gone
            return


READY = "ready"  # a worker's first message: it started, and can analyse
STARTUP_S = 120.0  # a worker not READY by then is stuck starting up: killed and replaced


def fault_row(spec: RunSpec, error: str, elapsed: float) -> dict:
    """The row of a run whose analysis never finished (its worker died or ran past --timeout).

    Its fingerprint is left null, so the next batch analyses the run again.
    """
    return {
        **_base_row(spec),
        "fingerprint": None,
        "error": error,
        "analysis_s": round(elapsed, 4),
        "analysed_at": datetime.now(UTC),
    }


class Workers:
    """Local worker processes (spawned: polars' thread pool does not survive fork), one run each
    at a time. A worker that dies mid-run (killed, out of memory) or runs past ``timeout``
    seconds is killed and replaced, and its run becomes a fault row; the others go on."""

    def __init__(
        self, n: int, timeout: float | None, analyse: Callable[[RunSpec], list[dict]] = analyse_run
    ):
        import multiprocessing

        self.ctx = multiprocessing.get_context("spawn")
        self.n, self.timeout, self.analyse = max(1, n), timeout, analyse
        self.busy: dict = {}  # process -> (conn, spec, started)
        self.idle: list = []  # (process, conn)
        self.ready: set = set()  # processes that said READY
        self.startup_deaths = 0  # workers in a row that died before READY

    def _start(self):
        import signal

        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker_main, args=(child, self.analyse), daemon=True)
        try:  # start it with SIGINT ignored (inherited across exec), so that a Ctrl-C during
            old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # its start-up is not its own
        except ValueError:  # not the main thread: no handler to swap
            old = None
        try:
            proc.start()
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
        child.close()
        return proc, parent

    def _stop(self, proc, conn, kill: bool) -> None:
        if kill and proc.is_alive():
            proc.kill()
        proc.join(timeout=5)
        conn.close()

    def _deadline(self, proc, started: float) -> float | None:
        """When a busy worker is out of time: --timeout from READY on; STARTUP_S before."""
        if proc in self.ready:
            return None if self.timeout is None else started + self.timeout
        return started + STARTUP_S

    def _replace(self, proc, conn) -> None:
        """Replace a worker that died idle or starting up; give up when none can start."""
        self._stop(proc, conn, kill=True)
        if proc not in self.ready:
            self.startup_deaths += 1
            if self.startup_deaths >= 3:
                raise TraceanaError(
                    f"worker processes exit as they start (exit code "
                    f"{proc.exitcode}); rerun with --jobs 1 to see why"
                )
        self.ready.discard(proc)
        self.idle.append(self._start())

    def _dispatch(self, todo) -> None:
        """Send the next runs to the idle workers."""
        while todo and self.idle:
            proc, conn = self.idle.pop()
            spec = todo.popleft()
            try:
                conn.send(spec)
            except (OSError, ValueError):  # it died idle: replace it, keep the run
                todo.appendleft(spec)
                self._replace(proc, conn)
                continue
            self.busy[proc] = (conn, spec, time.monotonic())

    def map(self, specs: list[RunSpec]) -> Iterator[list[dict]]:
        from collections import deque
        from multiprocessing.connection import wait

        todo = deque(specs)
        try:
            self.idle = [self._start() for _ in range(min(self.n, len(todo)))]
            while todo or self.busy:
                self._dispatch(todo)
                if not self.busy:
                    continue
                waits = [c for c, _, _ in self.busy.values()] + [p.sentinel for p in self.busy]
                ends = [self._deadline(p, t) for p, (_, _, t) in self.busy.items()]
                ends = [e for e in ends if e is not None]
                wait(waits, timeout=max(0.0, min(ends) - time.monotonic()) if ends else None)
                finished = []  # yielded once the free workers have their next runs
                for proc, (conn, spec, started) in list(self.busy.items()):
                    rows = None
                    try:
                        while rows is None and conn.poll():
                            rows = conn.recv()
                            if rows == READY:  # its run's time starts now
                                self.ready.add(proc)
                                self.startup_deaths, rows = 0, None
                                started = time.monotonic()
                                self.busy[proc] = (conn, spec, started)
                    except (EOFError, OSError):
                        pass
                    if rows is not None:
                        del self.busy[proc]
                        self.idle.append((proc, conn))
                        finished.append(rows)
                        continue
                    elapsed = time.monotonic() - started
                    if proc not in self.ready and (
                        not proc.is_alive() or time.monotonic() > self._deadline(proc, started)
                    ):
                        # It died starting up (not this run's doing): the run waits for
                        # another worker, unless workers cannot start at all.
                        del self.busy[proc]
                        todo.appendleft(spec)
                        self._replace(proc, conn)
                        continue
                    if not proc.is_alive():
                        code = proc.exitcode
                        how = (
                            f"killed by {_signal_name(-code)}"
                            if code is not None and code < 0
                            else f"exit code {code}"
                        )
                        error = (
                            f"the worker process died while analysing this run ({how}); "
                            "the next batch tries it again"
                        )
                    elif self.timeout is not None and elapsed >= self.timeout:
                        error = (
                            f"timed out after {self.timeout:g} s (--timeout); the next "
                            "batch tries it again"
                        )
                    else:
                        continue
                    del self.busy[proc]
                    self.ready.discard(proc)
                    self._stop(proc, conn, kill=True)
                    if todo:
                        self.idle.append(self._start())
                    finished.append([fault_row(spec, error, elapsed)])
                self._dispatch(todo)
                yield from finished
        finally:
            # Finished (or interrupted, or the consumer stopped): idle workers are told to
            # stop, busy ones are killed; nothing is left running.
            for proc, conn in self.idle:
                try:
                    conn.send(None)
                except (OSError, ValueError):
                    pass
            for proc, (conn, _, _) in self.busy.items():
                self._stop(proc, conn, kill=True)
            for proc, conn in self.idle:
                self._stop(proc, conn, kill=False)
            self.busy, self.idle = {}, []


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _dask(specs: list[RunSpec], address: str) -> Iterator[list[dict]]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError as e:
        raise UsageError(
            f"--scheduler needs Dask distributed, which is not installed: {DASK_HINT}"
        ) from e
    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError) as e:
        raise UsageError(f"--scheduler {address}: cannot connect ({_one_line(e)})") from e
    try:
        futures = client.map(analyse_run, specs, pure=False)
        for f in dask_completed(futures):
            yield f.result()
    finally:
        client.close()


# ----------------------------------------------------------------------------- the batch


def read_table(out: Path) -> pl.DataFrame | None:
    """Return the existing output table, or None when there is none."""
    if not out.exists():
        return None
    try:
        df = pl.read_parquet(out)
    except Exception as e:
        raise InputError(
            out, f"not a readable batch table ({type(e).__name__}); move it away or name another -o"
        ) from e
    missing = [c for c in ("run_id", "fingerprint", "error") if c not in df.columns]
    if missing:
        raise InputError(out, f"not a traceana batch table (no {', '.join(missing)} column)")
    return df


def write_atomic(df: pl.DataFrame, out: Path) -> None:
    """Write ``df`` to ``out`` through a temporary file in the same folder and a rename."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        df.write_parquet(tmp)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()


def _io_reason(e: BaseException) -> str:
    """The operating system's words for a failed write: 'No space left on device'."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    text = text.rpartition("IO error: ")[2] if "IO error: " in text else text
    return re.sub(r" \(os error \d+\)$", "", text)


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Remove the temporary files of batches that were killed while writing ``out``."""
    removed = []
    for tmp in out.parent.glob(f".{out.name}.*.tmp"):
        pid = tmp.name[len(out.name) + 2 : -4]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # that batch is still running
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError, OSError):
            continue
        try:
            tmp.unlink()
            removed.append(tmp)
        except OSError:
            pass
    return removed


def run_batch(
    roots: list[Path],
    out: Path,
    *,
    jobs: int = 1,
    scheduler: str | None = None,
    hash_files: bool = False,
    progress: Callable | None = None,
    checkpoint_s: float = CHECKPOINT_S,
    timeout: float | None = None,
    analyse: Callable[[RunSpec], list[dict]] = analyse_run,
) -> BatchResult:
    """Analyse every new or changed run under ``roots`` into the table at ``out``.

    ``progress(done, failed, total)`` is called after each run. ``timeout``: seconds a run
    may take in a worker process before it is killed and recorded as failed (local workers
    only). ``analyse`` is the per-run function (module-level, so workers can import it).

    The table is only ever replaced whole (``write_atomic``): every ``checkpoint_s`` seconds,
    at the end, and when interrupted. A write that fails (a full disk) stops the batch with
    an InputError; the table keeps what it held after its last good write.
    """
    if timeout is not None and scheduler:
        raise UsageError(
            "--timeout applies to local worker processes; with --scheduler, "
            "limit the Dask workers themselves (docs/batch.md)"
        )
    old = read_table(out)
    remove_stale_temporaries(out)
    specs = find_runs(roots, hash_files=hash_files)
    known: dict[str, str | None] = {}
    if old is not None:
        known = dict(old.group_by("run_id").agg(pl.col("fingerprint").first()).rows())
    todo = [s for s in specs if s.run_id not in known or known[s.run_id] != s.fingerprint]
    redo = {s.run_id for s in todo}
    kept = (
        old.filter(~pl.col("run_id").is_in(list(redo)))
        if old is not None
        else pl.DataFrame(schema=SCHEMA)
    )
    kept = pl.concat([to_frame([]), kept], how="diagonal_relaxed") if old is not None else kept
    new_frames: list[pl.DataFrame] = []
    failures: list[str] = []
    done = failed = 0
    last = time.monotonic()
    written = {"runs": old["run_id"].n_unique() if old is not None else None}

    def table() -> pl.DataFrame:
        frames = [kept, *new_frames]
        return pl.concat(frames, how="diagonal_relaxed").sort("run_id", "device", nulls_last=False)

    def write() -> None:
        df = table()
        try:
            write_atomic(df, out)
        except (OSError, pl.exceptions.PolarsError) as e:  # polars wraps its IO errors
            before = (
                "it was not written"
                if written["runs"] is None
                else f"it is left as last written, with {written['runs']} runs"
            )
            raise InputError(
                out, f"cannot write: {_io_reason(e)}; {before}; rerun the batch to analyse the rest"
            ) from e
        written["runs"] = df["run_id"].n_unique()

    results = _dask(todo, scheduler) if scheduler else _local(todo, jobs, timeout, analyse)
    write_failed = False
    try:
        for rows in results:
            new_frames.append(to_frame(rows))
            done += 1
            if rows and rows[0].get("error"):
                failed += 1
                failures.append(_failure(rows[0]["run_id"], rows[0]["error"]))
            if progress:
                progress(done, failed, len(todo))
            if time.monotonic() - last > checkpoint_s:
                try:
                    write()
                except InputError:
                    write_failed = True
                    raise
                last = time.monotonic()
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()  # stop the workers (if interrupted) before the last write
        if not write_failed and (new_frames or old is None):
            write()
    final = table()
    ids = {s.run_id for s in specs}
    state = (
        final.filter(pl.col("run_id").is_in(list(ids)))
        .group_by("run_id")
        .agg(bad=pl.col("error").is_not_null().any())
    )
    n_failed = int(state["bad"].sum())
    skipped_failures = [
        _failure(r, e)
        for r, e in final.filter(
            pl.col("run_id").is_in([s.run_id for s in specs if s.run_id not in redo])
            & pl.col("error").is_not_null()
        )
        .select("run_id", "error")
        .unique()
        .rows()
    ]
    return BatchResult(
        table=final,
        found=len(specs),
        analysed=len(todo),
        skipped=len(specs) - len(todo),
        succeeded=state.height - n_failed,
        failed=n_failed,
        failures=failures + sorted(skipped_failures),
    )


def _failure(run_id: str, error: str) -> str:
    return error if error.startswith(run_id) else f"{run_id}: {error}"


def default_jobs() -> int:
    return (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()
