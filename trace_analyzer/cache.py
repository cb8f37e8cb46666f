"""The analysis cache: a loaded run's events and edges tables, kept as Parquet for next time.

Loading is most of an analysis (parse, label, deduplicate, link). The second analysis of an
unchanged run reads the two tables back instead; an analysis may also keep its own result
beside them (``gaps`` does, per set of options), under the same key. An entry is keyed by the run's files:
path, size, modification and change time and inode of every file the run is made of (its
sources, capture.json, NEFF/NTFF and raw traces), plus traceana's version and this format's;
any change to one of them is a miss, and the entry is rebuilt.

Where (docs/cache.md): ``--cache-dir DIR`` or ``TRACEANA_CACHE_DIR``; otherwise
``.traceana-cache/`` inside the folder the user named, so that nothing is written outside
the path the user named. A single file named directly has no cache unless a folder is
given; archives are never cached. Every cache folder holds a ``CACHEDIR.TAG``, and
discovery skips folders that do. ``--no-cache`` (or ``TRACEANA_NO_CACHE=1``) turns it off. The Python API
(``load``, ``load_runs``) uses no cache unless inside ``cache.configured(...)``. A cache that
cannot be written (a read-only folder, a full disk) is skipped silently: it only saves time.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson
import polars as pl

from trace_analyzer._version import __version__
from trace_analyzer.inputs.archive import MemberPath
from trace_analyzer.inputs.discover import CACHE_DIR_NAME as DIR_NAME
from trace_analyzer.inputs.discover import CACHEDIR_TAG, Run, run_files

# Raised whenever what is stored, or what a stored result would hold, changes within one
# traceana version (2: zero-length executions at the window's edges counted by gaps).
FORMAT = 2


@dataclass(frozen=True)
class Settings:
    enabled: bool = False  # the library does not write unasked; the CLI turns the cache on
    folder: Path | None = None  # explicit cache folder; None: inside the named folder


_settings: contextvars.ContextVar[Settings] = contextvars.ContextVar("cache", default=Settings())


@contextlib.contextmanager
def configured(enabled: bool = True, folder: Path | None = None):
    """Use these cache settings for the loads inside the block."""
    token = _settings.set(Settings(enabled, folder))
    try:
        yield
    finally:
        _settings.reset(token)


def folder_for(named: Path | str) -> Path | None:
    """Return the cache folder for a load of the path the user named, or None for no cache."""
    s = _settings.get()
    if not s.enabled or isinstance(named, MemberPath):
        return None
    if s.folder is not None:
        return Path(s.folder)
    named = Path(named)
    return named / DIR_NAME if named.is_dir() else None


TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This folder is traceana's analysis cache (docs/cache.md); it may be deleted.\n"
)


def key(run: Run, args: bool) -> str | None:
    """Return the digest of everything an entry depends on; None when a file cannot be stat'd.

    Computed before the run is read, so that a file changing during the read makes the
    entry's key stale rather than the entry.
    """
    h = hashlib.sha256(f"{FORMAT}\0{__version__}\0{args}\0{run.root}\0".encode())
    for src in run.sources:  # a file named directly must be a trace; found in a folder, may not
        h.update(f"{src.path}\0{src.kind}\0{src.named}\0".encode())
    try:
        for f in sorted({*run_files(run), *(p for p, _ in run.skipped)}, key=str):
            if isinstance(f, MemberPath):
                return None
            st = f.stat()
            h.update(
                f"{f}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0".encode()
            )
    except OSError:
        return None
    return h.hexdigest()


def _stem(folder: Path, run: Run, args: bool) -> Path:
    name = hashlib.sha256(f"{run.root}\0{args}".encode()).hexdigest()[:24]
    return folder / name


def load(folder: Path, run: Run, args: bool, k: str | None) -> dict | None:
    """Return the cached pieces of a run (meta, events, edges) under key ``k``, or None."""
    if k is None:
        return None
    stem = _stem(folder, run, args)
    try:
        meta = orjson.loads(stem.with_suffix(".json").read_bytes())
        if not isinstance(meta, dict) or meta.get("key") != k:
            return None
        events = pl.read_parquet(stem.with_suffix(".events.parquet"))
        edges = pl.read_parquet(stem.with_suffix(".edges.parquet"))
    except (OSError, orjson.JSONDecodeError, pl.exceptions.PolarsError):
        return None
    return {"meta": meta, "events": events, "edges": edges}


def store(
    folder: Path,
    run: Run,
    args: bool,
    k: str | None,
    meta: dict,
    events: pl.DataFrame,
    edges: pl.DataFrame,
) -> bool:
    """Write an entry under key ``k`` (each file atomically); False when it could not be."""
    if k is None:
        return False
    stem = _stem(folder, run, args)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tag = folder / CACHEDIR_TAG
        if not tag.is_file():
            _atomic(tag, lambda p: Path(p).write_text(TAG))
        # the tables first, the meta (which holds the key) last: a half-written entry misses
        _atomic(
            stem.with_suffix(".events.parquet"),
            lambda p: events.write_parquet(p, compression="lz4"),
        )
        _atomic(
            stem.with_suffix(".edges.parquet"), lambda p: edges.write_parquet(p, compression="lz4")
        )
        _atomic(
            stem.with_suffix(".json"),
            lambda p: Path(p).write_bytes(orjson.dumps({**meta, "key": k})),
        )
    except (OSError, pl.exceptions.PolarsError):
        return False
    return True


def _atomic(target: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@dataclass(frozen=True)
class Ref:
    """Where a loaded run's entry lives, and its key: what an analysis caches its result under."""

    folder: Path
    stem: Path
    key: str


def ref(folder: Path, run: Run, args: bool, k: str) -> Ref:
    return Ref(folder, _stem(folder, run, args), k)


def _result_file(r: Ref, name: str, options: object, suffix: str) -> Path:
    digest = hashlib.sha256(orjson.dumps([name, options])).hexdigest()[:16]
    return r.stem.with_name(f"{r.stem.name}-{name}-{digest}{suffix}")


def load_result(r: Ref, name: str, options: object) -> tuple[dict, dict] | None:
    """Return an analysis result cached under the run's entry: (meta, frames), or None."""
    try:
        meta = orjson.loads(_result_file(r, name, options, ".json").read_bytes())
        if not isinstance(meta, dict) or meta.get("key") != r.key:
            return None
        frames = {
            f: pl.read_parquet(_result_file(r, name, options, f".{f}.parquet"))
            for f in meta["frames"]
        }
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, pl.exceptions.PolarsError):
        return None
    return meta, frames


def store_result(
    r: Ref, name: str, options: object, meta: dict, frames: dict[str, pl.DataFrame]
) -> bool:
    """Cache an analysis result beside the run's entry (the meta, holding the key, last)."""
    try:
        for f, df in frames.items():
            _atomic(
                _result_file(r, name, options, f".{f}.parquet"),
                lambda p, df=df: df.write_parquet(p, compression="lz4"),
            )
        body = orjson.dumps({**meta, "frames": list(frames), "key": r.key})
        _atomic(_result_file(r, name, options, ".json"), lambda p: Path(p).write_bytes(body))
    except (OSError, TypeError, pl.exceptions.PolarsError):
        return False
    return True


def reads_meta(reads: list) -> list[dict]:
    """Return what the cache keeps of each ReadResult (all but its events)."""
    return [
        {
            "source": str(r.source.path),
            "format": r.format,
            "schema_version": r.schema_version,
            "rank": r.rank,
            "rank_origin": r.rank_origin,
            "notes": r.notes,
            "warnings": r.warnings,
            "read": r.read,
            "n_events": r.events.height,
        }
        for r in reads
    ]


__all__ = [
    "Settings",
    "Ref",
    "configured",
    "folder_for",
    "key",
    "load",
    "store",
    "ref",
    "load_result",
    "store_result",
    "reads_meta",
]
