"""Where runs are analysed: in-process, in local ``Workers``, or on a Dask cluster.

``Workers`` runs the per-run function in spawned processes, one run each at a time over a
pipe: a worker that dies mid-run, runs past ``timeout`` or past its ``memory`` cap
(``limits``) is killed and replaced, and its run becomes a row with ``error`` set and no
fingerprint (so the next batch tries it again). A worker gets everything it needs in the
``RunSpec`` it is sent and its arguments; it reads no configuration from the environment.
On Dask with limits, each task runs its run in one such worker of its own, so that the
limits hold there too.
"""

from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from trace_analyzer.batch.limits import (
    Limits,
    cap_memory,
    failed_allocating,
    is_memory_abort,
    is_out_of_memory,
    out_of_memory,
    quiet_panics,
)
from trace_analyzer.batch.rows import Row, analyse_run, base_row, fault_row, one_line
from trace_analyzer.batch.runs import RunSpec
from trace_analyzer.errors import TraceanaError, UsageError

Analyse = Callable[[RunSpec], list[Row]]

DASK_HINT = "pip install 'traceana[dask]'"
READY = "ready"  # a worker's first message: it started, and can analyse
STARTUP_S = 120.0  # a worker not READY by then is stuck starting up: killed and replaced
DASK_RUNS = 8  # runs per Dask task under limits: one worker process start-up for these
NO_LIMITS = Limits()


def local(
    specs: list[RunSpec], jobs: int, limits: Limits = NO_LIMITS, analyse: Analyse = analyse_run
) -> Iterator[list[Row]]:
    """Yield each run's rows: in-process for one job and no limits, else worker processes
    (the main process can neither kill nor cap its own analysis)."""
    if (jobs <= 1 or len(specs) <= 1) and not limits:
        for spec in specs:
            yield analyse(spec)
        return
    workers = Workers(min(jobs, len(specs)), limits.timeout, analyse, limits.memory)
    yield from workers.map(specs)


def _worker_main(conn: Connection[Any, Any], analyse: Analyse, memory: int | None) -> None:
    """A worker process: analyse the runs it is sent, one at a time, until it is sent None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    if memory is not None:
        quiet_panics()  # before polars: a backtrace under the cap can hang it (limits.py)
    from trace_analyzer.loading import profile  # noqa: F401
    from trace_analyzer.questions.gaps import analysis as gaps  # noqa: F401  (before READY)

    if memory is not None:  # after the imports: they are the worker's, not a run's
        cap_memory(memory)
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
        started = time.monotonic()
        try:
            rows = analyse(spec)
        except BaseException as e:  # analyse_run never raises; a custom one might
            rows = [{**base_row(spec), "error": one_line(e)}]
        if memory is not None and rows and failed_allocating(rows[0].get("error")):
            # Past the cap: a fault of the limit, not of the input (so no fingerprint).
            rows = [fault_row(spec, out_of_memory(memory), time.monotonic() - started)]
        try:
            conn.send(rows)
        except (OSError, ValueError):  # the main process is gone
            return


@contextmanager
def _children_allowed() -> Iterator[None]:
    """Let a daemonic process (a Dask worker: ``distributed.worker.daemon``) start workers.

    multiprocessing refuses children of a daemonic process, lest they outlive it unseen;
    ``Workers`` kills or joins every process it starts before ``map`` returns, so that
    reason does not hold here.
    """
    import multiprocessing

    config: dict[str, Any] = getattr(multiprocessing.current_process(), "_config", {})
    daemonic = config.get("daemon", False)
    config["daemon"] = False
    try:
        yield
    finally:
        if daemonic:
            config["daemon"] = daemonic


Worker = tuple[BaseProcess, "Connection[Any, Any]"]


class Workers:
    """Local worker processes (spawned: polars' thread pool does not survive fork), one run each
    at a time. A worker that dies mid-run (killed, out of memory) or runs past ``timeout``
    seconds is killed and replaced, and its run becomes a fault row; the others go on. With
    ``memory``, each worker caps its data memory at that many bytes (``limits.cap_memory``).
    """

    def __init__(
        self,
        n: int,
        timeout: float | None,
        analyse: Analyse = analyse_run,
        memory: int | None = None,
    ):
        import multiprocessing

        self.ctx = multiprocessing.get_context("spawn")
        self.n, self.timeout, self.analyse = max(1, n), timeout, analyse
        self.memory = memory
        # process -> (its pipe, the run it holds, when that run's time started)
        self.busy: dict[BaseProcess, tuple[Connection[Any, Any], RunSpec, float]] = {}
        self.idle: list[Worker] = []
        self.ready: set[BaseProcess] = set()  # processes that said READY
        self.startup_deaths = 0  # workers in a row that died before READY

    def _start(self) -> Worker:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(
            target=_worker_main, args=(child, self.analyse, self.memory), daemon=True
        )
        try:  # start it with SIGINT ignored (inherited across exec), so that a Ctrl-C during
            old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # its start-up is not its own
        except ValueError:  # not the main thread: no handler to swap
            old = None
        try:
            with _children_allowed():
                proc.start()
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
        child.close()
        return proc, parent

    def _stop(self, proc: BaseProcess, conn: Connection[Any, Any], kill: bool) -> None:
        if kill and proc.is_alive():
            proc.kill()
        proc.join(timeout=5)
        conn.close()

    def _deadline(self, proc: BaseProcess, started: float) -> float | None:
        """When a busy worker is out of time: --timeout from READY on; STARTUP_S before."""
        if proc in self.ready:
            return None if self.timeout is None else started + self.timeout
        return started + STARTUP_S

    def _replace(self, proc: BaseProcess, conn: Connection[Any, Any]) -> None:
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

    def _dispatch(self, todo: deque[RunSpec]) -> None:
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

    def map(self, specs: list[RunSpec]) -> Iterator[list[Row]]:
        """Yield each run's rows as its worker finishes it (a fault row if it never does)."""
        todo = deque(specs)
        try:
            self.idle = [self._start() for _ in range(min(self.n, len(todo)))]
            while todo or self.busy:
                self._dispatch(todo)
                if not self.busy:
                    continue
                self._wait()
                finished = self._collect(todo)  # yielded once the free workers have runs
                self._dispatch(todo)
                yield from finished
        finally:
            self._shutdown()

    def _wait(self) -> None:
        """Wait until a busy worker answers or exits, or the first deadline passes."""
        from multiprocessing.connection import wait

        waits = [c for c, _, _ in self.busy.values()] + [p.sentinel for p in self.busy]
        ends = [self._deadline(p, t) for p, (_, _, t) in self.busy.items()]
        due = [e for e in ends if e is not None]
        wait(waits, timeout=max(0.0, min(due) - time.monotonic()) if due else None)

    def _receive(self, proc: BaseProcess) -> tuple[list[Row] | None, float]:
        """Return a busy worker's rows (None when it has none yet) and when its run started.

        A READY message starts its run's time.
        """
        conn, spec, started = self.busy[proc]
        rows = None
        try:
            while rows is None and conn.poll():
                rows = conn.recv()
                if rows == READY:
                    self.ready.add(proc)
                    self.startup_deaths, rows = 0, None
                    started = time.monotonic()
                    self.busy[proc] = (conn, spec, started)
        except (EOFError, OSError):
            pass
        return rows, started

    def _collect(self, todo: deque[RunSpec]) -> list[list[Row]]:
        """Take the rows of the finished runs; replace dead and overdue workers."""
        finished = []
        for proc, (conn, spec, _) in list(self.busy.items()):
            rows, started = self._receive(proc)
            if rows is not None:
                del self.busy[proc]
                if self.memory is not None and rows and is_out_of_memory(rows[0].get("error")):
                    self._retire(proc, conn, todo)  # a polars thread may have panicked in it
                else:
                    self.idle.append((proc, conn))
                finished.append(rows)
                continue
            elapsed = time.monotonic() - started
            if proc not in self.ready and (not proc.is_alive() or elapsed > STARTUP_S):
                # It died starting up (not this run's doing): the run waits for another
                # worker, unless workers cannot start at all.
                del self.busy[proc]
                todo.appendleft(spec)
                self._replace(proc, conn)
                continue
            error = self._fault(proc, elapsed)
            if error is None:
                continue
            del self.busy[proc]
            self._retire(proc, conn, todo)
            finished.append([fault_row(spec, error, elapsed)])
        return finished

    def _retire(self, proc: BaseProcess, conn: Connection[Any, Any], todo: deque[RunSpec]) -> None:
        """Kill a worker whose run failed by a fault (dead, overdue, out of memory); a fresh
        one takes its place while runs remain."""
        self.ready.discard(proc)
        self._stop(proc, conn, kill=True)
        if todo:
            self.idle.append(self._start())

    def _fault(self, proc: BaseProcess, elapsed: float) -> str | None:
        """Return why a busy (READY) worker's run failed: it died, or it ran out of time."""
        if not proc.is_alive():
            code = proc.exitcode
            if self.memory is not None and is_memory_abort(code):
                return out_of_memory(self.memory, abort=True)
            how = (
                f"killed by {_signal_name(-code)}"
                if code is not None and code < 0
                else f"exit code {code}"
            )
            return (
                f"the worker process died while analysing this run ({how}); "
                "the next batch tries it again"
            )
        if self.timeout is not None and elapsed >= self.timeout:
            return f"timed out after {self.timeout:g} s (--timeout); the next batch tries it again"
        return None

    def _shutdown(self) -> None:
        """Finished (or interrupted, or the consumer stopped): idle workers are told to stop,
        busy ones are killed; nothing is left running."""
        for _, conn in self.idle:
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
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def in_own_worker(
    specs: list[RunSpec], limits: Limits, analyse: Analyse = analyse_run
) -> list[list[Row]]:
    """Return the rows of each of ``specs``, analysed one at a time in a worker process under
    ``limits``: a Dask task with --timeout or --worker-memory, so that a run is killed or
    capped as a local one is (and the Dask worker itself lives on), the worker's start-up
    paid once per task (``DASK_RUNS`` runs). It never raises: workers that cannot start are
    the runs' failed rows."""
    try:
        return list(Workers(1, limits.timeout, analyse, limits.memory).map(specs))
    except TraceanaError as e:
        return [[fault_row(spec, one_line(e), 0.0)] for spec in specs]


def dask(
    specs: list[RunSpec],
    address: str,
    limits: Limits = NO_LIMITS,
    analyse: Analyse = analyse_run,
) -> Iterator[list[Row]]:
    """Yield each run's rows as a Dask cluster's workers finish them (``analyse``; with
    ``limits``, each in a worker process of its own, ``in_own_worker``)."""
    try:
        import distributed
    except ImportError as e:
        raise UsageError(
            f"--scheduler needs Dask distributed, which is not installed: {DASK_HINT}"
        ) from e
    dist: Any = distributed  # untyped: its calls are not checked
    try:
        client = dist.Client(address, timeout="20s")
    except (OSError, TimeoutError) as e:
        raise UsageError(f"--scheduler {address}: cannot connect ({one_line(e)})") from e
    try:
        if not limits:
            for f in dist.as_completed(client.map(analyse, specs, pure=False)):
                yield f.result()
            return
        task = partial(in_own_worker, limits=limits, analyse=analyse)
        chunks = [specs[i : i + DASK_RUNS] for i in range(0, len(specs), DASK_RUNS)]
        for f in dist.as_completed(client.map(task, chunks, pure=False)):
            yield from f.result()
    finally:
        client.close()
