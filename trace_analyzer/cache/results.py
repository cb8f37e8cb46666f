"""A ``gaps`` result kept beside its run's entry, one per set of options (docs/cache.md).

A large run has hundreds of thousands of gaps: computing them is most of a second analysis.
The result's tables are stored as Parquet, its window, summary and hints in a meta that
holds the entry's key (written last, so that a half-written result misses).

The result is read back under another spelling of the run's path (``spelling.py``) only
where nothing in it names the root as spelled when it was written (``portable``); a result
that does (none does today: gaps name lanes, devices and ops, not files) is used under its
own spelling only.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson
import polars as pl

from trace_analyzer.cache.folder import Folder, Linked
from trace_analyzer.cache.spelling import mentions
from trace_analyzer.questions.gaps.analysis import FRAMES, GapsResult, Window

if TYPE_CHECKING:
    from trace_analyzer.cache.store import Entry


def as_bytes(data: bytes) -> Callable[[BinaryIO], object]:
    """Return what writes ``data`` to an open file."""
    return lambda file: file.write(data)


def result_file(entry: Entry, name: str, options: object, suffix: str) -> str:
    digest = hashlib.sha256(orjson.dumps([name, options])).hexdigest()[:16]
    return f"{entry.stem.name}-{name}-{digest}{suffix}"


def read_gaps(entry: Entry, options: dict[str, Any]) -> GapsResult | None:
    """Return the gaps result cached under the run's entry for these options, or None."""
    try:
        with Folder(entry.folder, entry.inside, create=False) as folder:
            meta = orjson.loads(folder.read(result_file(entry, "gaps", options, ".json")))
            if not isinstance(meta, dict) or meta.get("key") != entry.key:
                return None
            if meta.get("root") != entry.root and not meta.get("portable"):
                return None  # it names the root as it was spelled then
            # the frames the meta lists, by GapsResult field (a stray name: a TypeError, a miss)
            frames: dict[str, Any] = {
                f: folder.table(result_file(entry, "gaps", options, f".{f}.parquet"), meta)
                for f in meta["frames"]
            }
        w = meta["window"]
        return GapsResult(
            window=None if w is None else Window(**w),
            summary=meta["summary"],
            hints=tuple(meta["hints"]),
            **frames,
        )
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, pl.exceptions.PolarsError):
        return None
    except Linked:  # noted when the run was loaded; a link put there since: a miss
        return None


def write_gaps(entry: Entry, options: dict[str, Any], result: GapsResult) -> bool:
    """Cache a gaps result beside the run's entry (the meta, holding the key, last)."""
    w = result.window
    window = None if w is None else {"start_ns": w.start_ns, "end_ns": w.end_ns, "origin": w.origin}
    try:
        with Folder(entry.folder, entry.inside, create=True) as folder:
            names = {f: result_file(entry, "gaps", options, f".{f}.parquet") for f in FRAMES}
            tables = {names[f]: folder.write_table(names[f], getattr(result, f)) for f in FRAMES}
            body: dict[str, Any] = {
                "window": window,
                "summary": result.summary,
                "hints": list(result.hints),
                "frames": list(FRAMES),
                "tables": tables,
                "root": entry.root,
                "key": entry.key,
            }
            said = orjson.dumps({k: v for k, v in body.items() if k != "root"}).decode()
            body["portable"] = not _names_root(entry, said, result)
            data = orjson.dumps(body)
            folder.write(result_file(entry, "gaps", options, ".json"), as_bytes(data))
    except (OSError, TypeError, Linked, pl.exceptions.PolarsError):
        return False
    return True


def _names_root(entry: Entry, said: str, result: GapsResult) -> bool:
    """True when the result's meta (``said``) or a text column of its tables
    holds the run's root as spelled (for a root spelled ``.``: one of the run's files)."""
    needles = entry.names if entry.root == "." else frozenset({entry.root})
    texts = [said.replace(os.path.realpath(entry.root), "")]  # the same under every spelling
    for f in FRAMES:
        df: pl.DataFrame = getattr(result, f)
        for column, dtype in df.schema.items():
            if dtype in (pl.String, pl.Categorical) and df.height:
                values = df.get_column(column).unique().cast(pl.String).drop_nulls()
                # only the values that hold a needle at all are looked at closely
                held = pl.Series([False] * len(values), dtype=pl.Boolean)
                for n in needles:
                    held |= values.str.contains(n, literal=True)
                texts += values.filter(held).to_list()
    return any(mentions(t, entry.root, entry.names) for t in texts)
