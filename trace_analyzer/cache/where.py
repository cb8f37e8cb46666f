"""Where the analysis cache of one command lives (docs/cache.md, "Where").

By default, in the user's cache directory (``platformdirs``: ``$XDG_CACHE_HOME/traceana``, else
``~/.cache/traceana`` on Linux, ``~/Library/Caches/traceana`` on macOS), so that nothing is
written inside a profile folder, which may be read-only, shared, or someone else's. A home
that does not exist is not made for it: then there is no cache. Entries
are named and keyed by each run's real path and files (store.py), so one folder holds every
run's. ``--cache-dir DIR`` (``TRACEANA_CACHE_DIR``) names another; ``--cache-in-profile``
(``TRACEANA_CACHE_IN_PROFILE``) keeps it in ``.traceana-cache/`` inside the folder named, as
traceana did until issue 39 (none then for a named file). Archives are never cached.

Imported by the console script before polars (cli/answers.py): this module imports neither.
"""

from __future__ import annotations

from pathlib import Path

from trace_analyzer.inputs.discover import CACHE_DIR_NAME

APP = "traceana"


def default_folder() -> Path:
    """The user's cache directory for traceana (not created here)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP, appauthor=False))


def cache_place(
    named: str | Path, folder: str | Path | None, in_profile: bool
) -> tuple[Path, Path | None] | None:
    """Return the cache folder for a command over the path ``named``, and the folder the user
    named that holds it (``.traceana-cache`` inside the profile folder, opened without
    following a link: cache/folder.py) or None for a folder of its own; None for no cache (a
    file or an archive named with ``in_profile``). ``folder``: ``--cache-dir``."""
    if folder is not None:
        return Path(folder), None
    if not in_profile:
        default = default_folder()
        # made when needed, with the user cache directory (~/.cache), never a missing home
        return (default, None) if default.parent.parent.is_dir() else None
    named = Path(named)
    return (named / CACHE_DIR_NAME, named) if named.is_dir() else None
