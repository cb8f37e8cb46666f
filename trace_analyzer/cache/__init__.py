"""The analysis cache (docs/cache.md): ``store`` keeps a loaded run's tables and its ``gaps``
results for next time; ``folder`` reads and writes the files of a cache folder without
following a link the user did not name.

The package's names are ``store``'s, imported when first used (PEP 562), so that what needs
only ``folder`` (the CLI's stored answers, cli/answers.py, read before anything imports
polars) does not load the analyses with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trace_analyzer.cache.store import FORMAT, TABLES, Cache, as_cache, key

__all__ = ["FORMAT", "TABLES", "Cache", "as_cache", "key"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("trace_analyzer.cache.store"), name)
