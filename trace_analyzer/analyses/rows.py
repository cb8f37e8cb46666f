"""Rows: a result table handed to the renderers without turning every row into a dict.

A large profile has hundreds of thousands of gaps. The text renderers show the top few; the
JSON renderer writes the table as polars writes JSON (the same values; tests check). Only a
caller that iterates the rows pays for dicts, once.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson
import polars as pl


class Rows(Sequence):
    """The rows of ``frame`` as a read-only sequence of dicts, made on first use."""

    __slots__ = ("frame", "_dicts")

    def __init__(self, frame: pl.DataFrame):
        self.frame = frame
        self._dicts: list[dict] | None = None

    def _list(self) -> list[dict]:
        if self._dicts is None:
            self._dicts = self.frame.to_dicts()
        return self._dicts

    def __len__(self) -> int:
        return self.frame.height

    def __getitem__(self, i):
        return self._list()[i]

    def __iter__(self):
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (Sequence, list)) else NotImplemented

    def __repr__(self) -> str:
        return f"Rows({self.frame.height} rows)"

    def top(self, n: int, by: str) -> list[dict]:
        """Return the n rows with the largest ``by``, in table order at equal values."""
        return self.frame.sort(by, descending=True, maintain_order=True).head(n).to_dicts()


def as_frame(rows) -> pl.DataFrame:
    """Return a result table as a DataFrame, whether Rows or a list of dicts."""
    return rows.frame if isinstance(rows, Rows) else pl.DataFrame(rows, infer_schema_length=None)


def json_default(obj: object):
    """orjson ``default``: Rows are written by polars (one pass in Rust, no dicts)."""
    if isinstance(obj, Rows):
        return orjson.Fragment(obj.frame.write_json())
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")
