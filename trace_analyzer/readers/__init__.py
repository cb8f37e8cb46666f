"""Readers: one module per input format, each returning rows of the events table.

The package's names are ``registry``'s (the formats, ``read_source``), imported when first
used (PEP 562), so that what needs one reader's polars-free part (``ahead``, the compiled
Kineto scan begun while polars loads) does not load every reader and polars with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trace_analyzer.readers.registry import (
        FORMATS,
        REGISTRY,
        Format,
        ReadResult,
        read_source,
        sniff,
    )

__all__ = ["FORMATS", "REGISTRY", "Format", "ReadResult", "read_source", "sniff"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("trace_analyzer.readers.registry"), name)
