"""Columns made in C handed to polars without a copy: an Arrow capsule pair (schema, array),
as the compiled readers (readers/_arrow.h) and the critical path's replay
(questions/critical/_replay.c) make it, behind Arrow's PyCapsule interface."""

from __future__ import annotations

from typing import Any

import polars as pl


class Arrow:
    """An Arrow capsule pair (schema, array) made in C, for polars to take without a copy."""

    def __init__(self, pair: tuple[Any, Any]) -> None:
        self.pair = pair

    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]:
        return self.pair


def frame(pair: tuple[Any, Any]) -> pl.DataFrame:
    """The columns of a struct array made in C (a capsule pair), as a frame."""
    return pl.DataFrame(Arrow(pair))
