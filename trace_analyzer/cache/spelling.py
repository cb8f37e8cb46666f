"""One cache entry for a run however its path is spelled (docs/cache.md, "The key").

``fixtures/run``, ``./fixtures/run/``, ``/home/me/fixtures/run`` and the same folder through a
symbolic link are one run: the entry's name and key are taken from the root's real path and
from the run's files relative to the root, never from the path as typed (``identity``).

What a loaded run holds is spelled, though: the events' ``file`` column, each read's source,
the NEFF/NTFF pairs and the warnings and notes name files as the user named the run, and the
outputs print them. An entry therefore records the spelling it was written under (``root``),
and a hit under another spelling is *respelled*: each path that starts with the old root
starts with the new one instead. A path field is respelled exactly; a sentence only where
every mention of the old root in it is plainly a path (``respell_text``). Where a sentence is
not plain (the root's real path written in it, the old root inside another word, a run
named ``.`` whose files are mentioned), the entry is marked not ``portable`` when written:
another spelling misses and reads the run afresh, as every spelling did before.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_analyzer.inputs.discover import Run, run_files

if TYPE_CHECKING:
    import polars as pl

# What may stand before a path in a sentence ("x: ...", "(x/a.json)", "'x/a.json'").
BEFORE = " \t\n'\"`(["
QUOTES = "'\"`(["
# What may follow a bare root in a sentence: it ends the sentence, or starts "x: ...".
AFTER_BARE = ":"
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def relative(path: object, root: object) -> str:
    """Return ``path`` relative to ``root``, as text: the same for every spelling of the root
    (``os.path.relpath`` is lexical: a link inside the run is a part of the name)."""
    return os.path.relpath(str(path), str(root))


def identity(run: Run) -> str:
    """Return what names ``run`` whatever the spelling of its root: the root's real path,
    its own name as typed (a trace named through a link of another name is labelled by it),
    each source relative to the root with its kind, and what discovery passed by."""
    root = str(run.root)
    parts = [os.path.realpath(root), os.path.basename(os.path.abspath(root)), str(run.part)]
    for src in run.sources:  # a file named directly must be a trace; found in a folder, may not
        parts += [relative(src.path, root), src.kind, str(src.named)]
    # what discovery passed by is said by the run (its notes and warnings, stored with it):
    # a FIFO or a skipped file that appears or goes makes the entry stale
    for path, why in (*run.skipped, *run.not_regular):
        parts += [relative(path, root), why]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def names(run: Run) -> frozenset[str]:
    """The first part of each file's path inside the run (``i-0123_pid_42``, ``trace.json``):
    what follows the root in a sentence that names one of the run's files."""
    root = str(run.root)
    files = [*run_files(run), *(p for p, _ in (*run.skipped, *run.not_regular))]
    files += [s.path for s in run.sources]
    return frozenset(relative(f, root).split(os.sep)[0] for f in files)


def respell_path(value: str, old: str, new: str) -> str | None:
    """Return the path ``value``, spelled under the root ``old``, under ``new`` instead; None
    when ``value`` is not ``old`` or a path under it (as ``pathlib`` joins them)."""
    if value == old:
        return new
    prefix = old if old.endswith("/") else old + "/"
    rel = value[len(prefix) :] if value.startswith(prefix) else None
    if old == ".":
        rel = value if not os.path.isabs(value) and not value.startswith("..") else None
    if not rel or str(Path(old) / rel) != value:
        return None
    return str(Path(new) / rel)


def respell_text(
    text: str, old: str, new: str, run_names: frozenset[str], real: str | None = None
) -> str | None:
    """Return the sentence ``text`` with each mention of the root ``old`` spelled ``new``;
    None when a mention is not plainly the root or a path under it, or when the sentence
    holds ``real``, the root's real path (which a fresh read would keep as it is: checked
    when the entry is written, in the working directory ``old`` is relative to)."""
    if (real is not None and real in text) or (old == "." and any(n in text for n in run_names)):
        return None  # (a run named "." mentions its files with no prefix to tell them by)
    if old == ".":  # only ".:" opening the sentence is the root; every other dot is not
        opens = text.startswith(".:") or text == "."
        return new + text[1:] if opens else text
    out, i = [], 0
    while (at := text.find(old, i)) >= 0:
        end = at + len(old)
        if _in_word(text, at, end):  # "run" in "nc_exec_running": not a mention
            out.append(text[i:end])
            i = end
            continue
        before_ok = at == 0 or text[at - 1] in BEFORE
        under = text[end : end + 1] == "/" and _names_file(text, end + 1, run_names)
        opens = at == 0 or text[at - 1] in QUOTES  # a bare root opens the sentence, or quoted
        bare = opens and (end == len(text) or text[end] in AFTER_BARE)
        if not before_ok or not (under or bare):
            return None
        out += [text[i:at], "" if under and new == "." else new]
        i = end + 1 if under and new == "." else end  # under ".": "x/a.json", as pathlib
    return "".join([*out, text[i:]])


def _in_word(text: str, at: int, end: int) -> bool:
    """True when ``text[at:end]`` is part of a longer name (a name character touches it)."""
    return (at > 0 and text[at - 1] in NAME_CHARS) or (end < len(text) and text[end] in NAME_CHARS)


def mentions(text: str, old: str, run_names: frozenset[str]) -> bool:
    """True when ``text`` may mention the root ``old`` (for ``.``: one of the run's files),
    anywhere but inside a longer name: what a stored result must not, to serve every
    spelling."""
    for needle in run_names if old == "." else (old,):
        at = text.find(needle)
        while at >= 0:
            if not _in_word(text, at, at + len(needle)):
                return True
            at = text.find(needle, at + 1)
    return False


def _names_file(text: str, at: int, run_names: frozenset[str]) -> bool:
    """True when ``text`` names, from ``at``, one of the run's files (its first part, then
    a ``/`` or anything that cannot be part of a name)."""
    for name in run_names:
        end = at + len(name)
        if text.startswith(name, at) and (end == len(text) or text[end] not in NAME_CHARS):
            return True
    return False


def portable(texts: Iterable[str], paths: Iterable[str | None], run: Run) -> bool:
    """True when an entry of ``run`` holding these sentences and paths (as spelled now) can
    be respelled for any other spelling of its root: every path lies under the root, and
    every sentence names it plainly, never by its real path."""
    old, run_names = str(run.root), names(run)
    real = os.path.realpath(old)
    if any(p is not None and respell_path(p, old, old) is None for p in paths):
        return False
    return all(respell_text(t, old, old, run_names, real) is not None for t in texts)


def texts_of(meta: dict[str, Any]) -> list[str]:
    """The sentences an entry's meta holds: the run's and each read's notes and warnings,
    and the reasons events were dropped."""
    reads = meta["reads"]
    return [
        *meta["warnings"],
        *meta["notes"],
        *meta["dropped"],
        *(t for r in reads for t in (*r["notes"], *r["warnings"])),
    ]


def paths_of(meta: dict[str, Any], files: Iterable[str]) -> list[str | None]:
    """The paths an entry's meta holds (each read's source, the NEFF/NTFF pairs, the files
    kept apart), and ``files``: the events' ``file`` values."""
    pairs = [p.get(k) for p in meta["pairs"] for k in ("ntff", "neff")]
    return [*(r["source"] for r in meta["reads"]), *pairs, *meta["apart"], *files]


def respell_meta(meta: dict[str, Any], old: str, run: Run) -> dict[str, Any] | None:
    """Return an entry's meta, written under the root ``old``, spelled as ``run``'s root;
    None when some part of it cannot be (the entry is then a miss)."""
    new, run_names = str(run.root), names(run)

    def path(p: str | None) -> str | None:
        if p is None:
            return None
        moved = respell_path(p, old, new)
        if moved is None:
            raise ValueError(p)
        return moved

    def text(t: str) -> str:
        moved = respell_text(t, old, new, run_names)
        if moved is None:
            raise ValueError(t)
        return moved

    try:
        return {
            **meta,
            "reads": [
                {
                    **r,
                    "source": path(r["source"]),
                    "notes": [text(t) for t in r["notes"]],
                    "warnings": [text(t) for t in r["warnings"]],
                }
                for r in meta["reads"]
            ],
            "warnings": [text(t) for t in meta["warnings"]],
            "notes": [text(t) for t in meta["notes"]],
            "dropped": {text(why): n for why, n in meta["dropped"].items()},
            "pairs": [
                {k: path(v) if k in ("ntff", "neff") else v for k, v in p.items()}
                for p in meta["pairs"]
            ],
            "apart": [path(f) for f in meta["apart"]],
        }
    except ValueError:
        return None


def respell_files(events: pl.DataFrame, old: str, new: str) -> pl.DataFrame | None:
    """Return ``events`` with each ``file`` value spelled under ``new`` instead of ``old``
    (mapped once per distinct file, the column's type kept); None when one cannot be."""
    import polars as pl

    dtype = events.schema["file"]
    spelled = events.get_column("file").unique().drop_nulls().cast(pl.String).to_list()
    moved = [respell_path(f, old, new) for f in spelled]
    if any(m is None for m in moved):
        return None
    file = pl.col("file").cast(pl.String).replace(spelled, moved).cast(dtype)
    return events.with_columns(file)
