"""How the analysing commands load their runs: ``Loading`` (through the cache, strict or not,
capped, some ranks, some runs) and the options that make it (``load_options``,
``limit_options``), and the files a command reads, which it will not write over (``inputs``).
"""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from trace_analyzer.cli.fault import analysing, out_of_memory
from trace_analyzer.cli.messages import FLAGS, MEMORY_ADVICE, plain, say_passed, warn_dropped
from trace_analyzer.errors import InputError, UsageError
from trace_analyzer.units import parse_size

# Only for the annotations: the command modules import no polars until a command runs.
if TYPE_CHECKING:
    from trace_analyzer.analyses.passes import Passes as QuestionPasses
    from trace_analyzer.analyses.results import RunResult, RunResults
    from trace_analyzer.batch.ranks import Mapped
    from trace_analyzer.cache import Cache
    from trace_analyzer.inputs.discover import Run
    from trace_analyzer.loading.profile import Profile
    from trace_analyzer.model.device import DeviceRun
    from trace_analyzer.model.schema import Args
    from trace_analyzer.questions.gaps.analysis import GapsResult
    from trace_analyzer.questions.ranks.analysis import RanksResult

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
R = TypeVar("R", bound="RunResult")
Passes = Callable[[str], "dict[str, QuestionPasses[Any]]"]  # a run's root -> its questions

MAX_BYTES_ENV = "TRACEANA_MAX_BYTES"


@dataclass(frozen=True)
class Loading:
    """How the analysing commands load: through the cache, strict or not, with a size cap."""

    cache: Cache
    strict: bool = False
    max_bytes: int | None = None
    ranks: str | None = None  # --rank N|GLOB: only those ranks' processes (loading/select.py)
    verbose: bool = False  # --verbose: each thing discovery passed by, not a count per kind
    run: str | None = None  # --run NAME: only the runs it names (loading/parts.py)

    def runs(self, path: Path, *, args: Args = False) -> list[Profile]:
        """Every run under ``path`` (their files kept as this command's inputs); with
        ``ranks``, each run's ranks it names, and the runs with none of them left out (none
        left: the first run's usage error)."""
        profiles = self._reading(
            path,
            lambda: self.cache.load_runs(
                path, args=args, strict=self.strict, max_bytes=self.max_bytes, run=self.run
            ),
        )
        say_passed(path, [x for p in profiles for x in p.run.not_regular], self.verbose)
        for p in profiles:
            warn_dropped(read_from(p))
        if self.ranks is None:
            return profiles
        from trace_analyzer.loading.select import select_in_runs

        return select_in_runs(profiles, self.ranks)

    def analysed(
        self, path: Path, analyse: Callable[[Profile], R], *, args: Args = False
    ) -> RunResults[R]:
        """``analyse`` of every run under ``path`` (``runs``, read with ``args``), each with the
        run's warnings: what a command over PATH prints."""
        from trace_analyzer.analyses.results import RunResults

        profiles = self.runs(path, args=args)
        results = tuple(analyse(p) for p in profiles)
        return RunResults(str(path), results, warnings=[p.warnings for p in profiles])

    def by_rank(
        self, path: Path, *, step: int | None, jobs: int, scheduler: str | None
    ) -> RunResults[RanksResult]:
        """``ranks`` of every run under ``path``, each read a file at a time and reduced
        (batch/ranks.py: in-process for one job, ``jobs`` worker processes, or the Dask
        ``scheduler``); a run that cannot be is read whole, as ``analysed`` reads it. A run
        that holds none of the ranks --rank names is left out, as ``analysed`` leaves it."""
        from trace_analyzer.analyses.results import RunResults
        from trace_analyzer.batch.ranks import Mapped, RankMap, by_rank
        from trace_analyzer.questions.ranks.analysis import ranks

        place = self.cache.place_for(path)
        how = RankMap(step, self.ranks, self.strict, self.cache if place else None, place)
        go = partial(by_rank, how=how, jobs=jobs, scheduler=scheduler, max_bytes=self.max_bytes)
        found = self.by_file(path, go, partial(how.load, max_bytes=self.max_bytes))
        results = [x.result if isinstance(x, Mapped) else ranks(x, step=step) for x in found]
        warnings = [x.warnings for x in found]
        return RunResults(str(path), tuple(results), warnings=warnings)

    def gaps_by_rank(
        self, path: Path, analyse: Callable[[Profile], Any], options: dict[str, Any], jobs: int,
        scheduler: str | None, next_fix: bool = False,
    ) -> tuple[list[Any], list[list[str]]]:  # fmt: skip
        """The gaps of every run under ``path``, each read a file at a time and reduced
        (batch/gaps.py: ``options`` are ``GapsMap``'s lanes, min_gap_ns and latency_ns; with
        ``next_fix``, the verdict of its critical path too); a run that cannot be is read
        whole and given to ``analyse``. Returns the results and each one's warnings. A mapped
        run's result is kept in the cache beside its entry (``Cache.run_gaps``; not with
        --rank or ``next_fix``, nor where its files said a warning)."""
        from trace_analyzer.batch.gaps import GapsMap, gaps_by_rank
        from trace_analyzer.batch.ranks import Mapped
        from trace_analyzer.loading.profile import load_parts

        place = self.cache.place_for(path)
        cache = self.cache if place else None
        how = GapsMap(**options, ranks=self.ranks, strict=self.strict, cache=cache, place=place)
        go = partial(gaps_by_rank, how=how, jobs=jobs, scheduler=scheduler,
                     max_bytes=self.max_bytes, next_fix=next_fix)  # fmt: skip

        def kept(run: Run) -> Mapped | None:  # through the cache: a second command reads it
            if not place or self.ranks is not None or next_fix:
                return go(run)
            said: list[Mapped | None] = []

            def made() -> GapsResult | None:
                said.append(go(run))
                mapped = said[-1]
                return None if mapped is None or mapped.warnings else mapped.result

            stored = {**options, "by_file": True}  # its own result: it keeps no warnings
            found = self.cache.run_gaps(run, place, stored, made, self.max_bytes)
            if said:  # read just now: its warnings, kept or not
                return said[0]
            return None if found is None else Mapped(found, [])

        def whole(run: Run) -> list[Profile]:
            if place:
                return self.cache.load_parts(
                    run, place, strict=self.strict, max_bytes=self.max_bytes
                )
            return load_parts(run, strict=self.strict, max_bytes=self.max_bytes)

        found = self.by_file(path, kept, whole)
        results = [x.result if isinstance(x, Mapped) else analyse(x) for x in found]
        return results, [x.warnings for x in found]

    def by_file(
        self,
        path: Path,
        mapped: Callable[[Run], Mapped | None],
        whole: Callable[[Run], list[Profile]],
    ) -> list[Mapped | Profile]:
        """Every run under ``path`` in order: ``mapped`` a file at a time, or where that gives
        None, its profiles read ``whole`` (its ranks --rank names: ``selected``). A run that
        holds none of the ranks --rank names is left out (none left: the first one's usage
        error); a profile of another kind (rocprofiler's, an execution trace) is refused only
        where no run read a trace, as ``runs`` refuses it (``refuse_untimed``)."""
        from trace_analyzer.batch.ranks import Mapped
        from trace_analyzer.inputs.discover import discover
        from trace_analyzer.loading.parts import pick, picked
        from trace_analyzer.loading.profile import refuse_untimed

        found = self._reading(
            path, lambda: pick(discover(path, max_bytes=self.max_bytes), self.run, path)
        )
        say_passed(path, [x for r in found for x in r.not_regular], self.verbose)
        out: list[Mapped | Profile] = []
        first = None
        for run in found:
            inputs(*[s.path for s in run.sources])
            try:
                got = self._reading(path, partial(mapped, run))
                if got is not None:
                    out.append(got)
                    continue
                read = self._reading(path, partial(whole, run))
                out += [
                    self.selected(warn_dropped(read_from(p))) for p in picked(read, self.run, path)
                ]
            except UsageError as e:
                if e.param != "ranks":
                    raise
                first = first or e
        if first is not None and not out:
            raise first
        if not any(isinstance(x, Mapped) for x in out):
            refuse_untimed([x for x in out if not isinstance(x, Mapped)])
        return out

    def one_by_file(
        self, path: Path, passes: Passes, jobs: int, scheduler: str | None
    ) -> Mapped | None:
        """The one run under ``path`` (several: ``one``'s usage error) mapped a file at a time
        by the questions ``passes(root)`` give (batch/passes.py: in-process for one job,
        ``jobs`` worker processes, or the Dask ``scheduler``), their results by name; None
        where it is to be read whole (``one``)."""
        from trace_analyzer.batch.passes import by_passes
        from trace_analyzer.batch.ranks import RankMap
        from trace_analyzer.inputs.discover import discover
        from trace_analyzer.loading.parts import pick
        from trace_analyzer.loading.profile import one_run

        found = self._reading(
            path,
            lambda: one_run(path, pick(discover(path, max_bytes=self.max_bytes), self.run, path)),
        )
        inputs(*[s.path for s in found.sources])
        place = self.cache.place_for(path)
        how = RankMap(None, self.ranks, self.strict, self.cache if place else None, place)
        go = partial(by_passes, found, passes, how.load, self.ranks, jobs=jobs,
                     scheduler=scheduler, max_bytes=self.max_bytes)  # fmt: skip
        return self._reading(path, go)

    def one(self, path: Path, *, args: Args = False) -> Profile:
        """The one run under ``path`` (several: a usage error naming them), with ``ranks``
        its ranks named."""
        profile = self._reading(
            path,
            lambda: self.cache.load(
                path, args=args, strict=self.strict, max_bytes=self.max_bytes, run=self.run
            ),
        )
        say_passed(path, profile.run.not_regular, self.verbose)
        return self.selected(warn_dropped(read_from(profile)))

    def device(self, path: Path) -> DeviceRun:
        """The device-profile exports under ``path`` (``engines``, ``diff --engines``), read
        as the options say where they apply to an export (docs/output.md, "Conventions"):
        ``run``, a folder or file below ``path`` (``device_place``); ``max_bytes``, the cap
        on a ``.json.gz`` export and on each Parquet table; ``ranks``, the profiles of the
        processes of those ranks, as the system profile beside them gives them (``beside``);
        what the search passed by said as ``verbose`` asks. Nothing of an export is cached and
        nothing in it is dropped (a table that cannot be read is an error): the cache options
        reach only the system profile beside it, and ``strict`` nothing."""
        from trace_analyzer.readers.device_profile import load_device

        where = device_place(path, self.run)
        found = self._reading(where, lambda: load_device(where, max_bytes=self.max_bytes))
        say_passed(where, found.passed, self.verbose)
        inputs(*[p.root for p in found.profiles])
        if self.ranks is None:
            return found
        from trace_analyzer.loading.device import process_ranks, select_device_ranks

        return select_device_ranks(found, self.ranks, process_ranks(self.beside(where)))

    def beside(self, path: Path) -> list[Profile]:
        """The system-profile runs under ``path``, beside its device-profile exports (the
        ranks of their processes, the ops that launched their NEFFs), read through the
        cache with their args, every rank, leniently (a malformed event changes no process's
        rank nor a NEFF's op); none where ``path`` holds none or they cannot be read (what
        needs them then goes without)."""
        from trace_analyzer.errors import TraceanaError

        try:
            return self.cache.load_runs(path, args=True, max_bytes=self.max_bytes)
        except TraceanaError:
            return []

    def selected(self, profile: Profile) -> Profile:
        """``profile`` with only the ranks ``--rank`` names (all without it)."""
        if self.ranks is None:
            return profile
        from trace_analyzer.loading.select import select_ranks

        return select_ranks(profile, self.ranks)

    @staticmethod
    def _reading(path: Path, load: Callable[[], T]) -> T:
        """Return ``load()``; a MemoryError in it is an InputError naming ``path`` (raised
        once the failed read's memory is let go). ``path`` is kept as what the command
        analyses, for a MemoryError later on (``handle_errors``)."""
        ctx = click.get_current_context(silent=True)
        if ctx is not None:
            ctx.find_root().meta["traceana.analysing"] = path
        analysing(path)  # the line a native abort ends with (fault.py)
        try:
            return load()
        except BaseException as e:  # MemoryError, or polars' panic on a failed allocation
            if not out_of_memory(e):
                raise
        finally:  # a scan begun and not taken (a run the cache served): let go
            from trace_analyzer.readers.ahead import forget

            forget()
            # leaving the handler drops the traceback, and the memory it holds
        raise InputError(path, f"out of memory reading it ({MEMORY_ADVICE})")


def device_place(path: Path, run: str | None) -> Path:
    """Where ``--run NAME`` puts a command over device-profile exports: ``path``/NAME, a run's
    folder, an export's folder or an export file below ``path`` (``path`` itself without
    it); NAME naming nothing there is a usage error listing the exports below ``path``."""
    if run is None:
        return path
    place = path / run
    if place.exists():
        return place
    from trace_analyzer.inputs.device import find_exports

    names = [str(f.relative_to(path)) for f in find_exports(path)] if path.is_dir() else []
    there = f"the exports there: {', '.join(names[:5])}" if names else "it holds no export"
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    raise UsageError(
        f"{{param}} {run}: nothing is named so below {path}; {there}{more}", param="run"
    )


def read_from(profile: Profile) -> Profile:
    """Keep the files of ``profile``'s run (its traces, exports, NEFF/NTFF, capture.json; an
    archive for its members) as inputs of this command, which ``writing`` will not replace."""
    run = profile.run
    paths = [s.path for s in run.sources] + run.neffs + run.ntffs + run.raw + run.captures
    inputs(*paths)
    return profile


def inputs(*paths: object) -> None:
    """Keep ``paths`` (files, folders of Parquet tables, archive members) as this command's
    inputs; outside a click command, nothing."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return
    kept: set[tuple[int, int]] = ctx.find_root().meta.setdefault("traceana.inputs", set())
    for path in paths:
        archive = getattr(path, "archive", None)  # an archive member: the archive itself
        local = Path(str(archive.path if archive is not None else path))
        files = [f for f in local.rglob("*") if f.is_file()] if local.is_dir() else [local]
        kept.update(i for i in map(file_identity, files) if i is not None)


def file_identity(path: Path) -> tuple[int, int] | None:
    """The file ``path`` names, as its device and inode (through links: a symbolic link, a
    hard link and a bind mount of one file are the same file); None for none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def limit_options(fn: F) -> F:
    """--max-bytes (or TRACEANA_MAX_BYTES), given to the command as ``max_bytes`` (bytes)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, max_bytes: str | None, **kwargs: Any) -> Any:
        try:
            cap = None if max_bytes is None else parse_size(max_bytes)
        except UsageError as e:  # a bad size is a usage error now, not in a worker later
            click.echo(f"traceana: error: {plain(e.worded(FLAGS))}", err=True)
            sys.exit(2)
        return fn(*args, max_bytes=cap, **kwargs)

    return click.option(
        "--max-bytes",
        metavar="SIZE",
        envvar=MAX_BYTES_ENV,
        show_envvar=False,
        help="Cap on what one compressed input (a .gz trace, an archive) may inflate to, "
        "e.g. 4G [default: an eighth of the memory traceana may use, at most 16GiB].",
    )(wrapper)  # type: ignore[return-value]


# The options of ``load_options`` but --max-bytes (``limit_options``), in reverse of the order
# --help shows them.
LOAD_OPTIONS = (
    click.option(
        "--verbose",
        "-v",
        is_flag=True,
        help="List each file or folder discovery passed by (a folder it cannot read, a FIFO), "
        "not a count of each kind.",
    ),
    click.option(
        "--run",
        metavar="NAME",
        help="Only the run NAME names: its folder below PATH, a part of a folder of traces "
        "recorded apart (PATH#NAME), or one of its files.",
    ),
    click.option(
        "--rank",
        metavar="N|GLOB",
        help="Only this rank (a number), or the ranks a glob names (e.g. '[0-3]'): from "
        "distributedInfo, the file name or the Neuron worker id.",
    ),
    click.option(
        "--strict", is_flag=True, help="Malformed events are an error (exit 2), not a warning."
    ),
    click.option(
        "--cache-in-profile",
        is_flag=True,
        envvar="TRACEANA_CACHE_IN_PROFILE",
        help="Keep the analysis cache in .traceana-cache/ inside the folder named, not in "
        "your cache directory.",
    ),
    click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="TRACEANA_CACHE_DIR",
        help="Keep the analysis cache here [default: traceana's folder in your cache "
        "directory, e.g. ~/.cache/traceana; none for an archive].",
    ),
    click.option(
        "--no-cache",
        is_flag=True,
        envvar="TRACEANA_NO_CACHE",
        help="Neither read nor write the analysis cache.",
    ),
)


def by_rank_options(same: str) -> Callable[[F], F]:
    """--jobs and --scheduler: a multi-rank run read a rank's file at a time, in worker
    processes or on a Dask cluster, and reduced (docs/distributed.md); ``same``: what that
    gives (the same output, the same page)."""

    def decorate(fn: F) -> F:
        fn = click.option(
            "--scheduler",
            metavar="ADDRESS",
            help="Read each rank's file on an existing Dask cluster, e.g. tcp://host:8786 (the "
            "dask extra), and reduce here, as --jobs.",
        )(fn)
        return click.option(
            "--jobs",
            "-j",
            type=click.IntRange(min=1),
            help="Read a multi-rank run a rank's file at a time, in this many local worker "
            f"processes (1: in-process), and reduce what each gives: {same} "
            "(docs/distributed.md).",
        )(fn)

    return decorate


def load_options(fn: F) -> F:
    """--no-cache, --cache-dir, --cache-in-profile, --strict, --max-bytes, --rank, --run and
    --verbose, given as ``loading: Loading``."""

    @functools.wraps(fn)
    def wrapper(
        *args: Any,
        no_cache: bool,
        cache_dir: Path | None,
        cache_in_profile: bool,
        strict: bool,
        max_bytes: int | None,
        rank: str | None,
        run: str | None,
        verbose: bool,
        **kwargs: Any,
    ) -> Any:
        if isinstance(path := kwargs.get("path"), Path):  # its trace scanned as polars loads
            from trace_analyzer.readers.ahead import begin

            begin(path)
        from trace_analyzer.cache import Cache

        cache = Cache(enabled=not no_cache, folder=cache_dir, in_profile=cache_in_profile)
        loading = Loading(cache, strict, max_bytes, rank, verbose, run)
        return fn(*args, loading=loading, **kwargs)

    decorated = limit_options(wrapper)
    for option in LOAD_OPTIONS:  # the last shown first
        decorated = option(decorated)
    return decorated  # type: ignore[return-value]
