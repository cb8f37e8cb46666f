"""Rows: a result table handed to the renderers without turning every row into a dict.

A large profile has hundreds of thousands of gaps. The text renderers show the top few; the
JSON renderer writes the table as polars writes JSON (the same values; tests check). Only a
caller that iterates the rows pays for dicts, once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import orjson
import polars as pl


class Rows(Sequence[dict[str, Any]]):
    """The rows of ``frame`` as a read-only sequence of dicts, made on first use.

    ``frame``: the result table. ``len`` is its height; indexing and iterating make the
    dicts (once); ``top`` picks rows without making them all.
    """

    __slots__ = ("frame", "_dicts")

    def __init__(self, frame: pl.DataFrame):
        self.frame = frame
        self._dicts: list[dict[str, Any]] | None = None

    def _list(self) -> list[dict[str, Any]]:
        if self._dicts is None:
            self._dicts = self.frame.to_dicts()
        return self._dicts

    def __len__(self) -> int:
        return self.frame.height

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        return self._list()[i]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (Sequence, list)) else NotImplemented

    def __repr__(self) -> str:
        return f"Rows({self.frame.height} rows)"

    def top(self, n: int, by: str) -> list[dict[str, Any]]:
        """Return the ``n`` rows with the largest column ``by``, in table order at equal
        values."""
        return self.frame.sort(by, descending=True, maintain_order=True).head(n).to_dicts()


def longest(frame: pl.DataFrame, n: int, by: str) -> pl.DataFrame:
    """Return the ``n`` rows of ``frame`` with the largest ``by`` (never null), largest
    first and in table order at equal values: the rows are chosen on that one column
    (``top_k``), so only they are gathered, not the whole table sorted (800 thousand gaps at
    1 GB of trace)."""
    chosen = (
        frame.select(by)
        .with_row_index("row")
        .top_k(n, by=[by, "row"], reverse=[False, True])
        .sort([by, "row"], descending=[True, False])
    )
    return frame[chosen["row"]]


def as_frame(rows: Rows | Sequence[dict[str, Any]]) -> pl.DataFrame:
    """Return a result table ``rows`` as a DataFrame, whether Rows or a list of dicts."""
    return rows.frame if isinstance(rows, Rows) else pl.DataFrame(rows, infer_schema_length=None)


def json_default(obj: object) -> orjson.Fragment:
    """orjson ``default``: return ``obj``, a Rows, as the JSON polars writes of its frame
    (one pass in Rust, no dicts); any other object raises TypeError."""
    if isinstance(obj, Rows):
        return orjson.Fragment(obj.frame.write_json())
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def counted_quantile(q: float, value: str = "duration_ns", n: str = "n") -> pl.Expr:
    """polars' ``quantile(q, interpolation="linear")`` of values held as their distinct
    values, sorted (``value``), and how often each came (``n``): the values at the ranks
    below and above ``q`` x (count - 1), and the share of the way between them (this form,
    not ``lo·(1-f) + hi·f``, is polars' to the last bit)."""
    d, k = pl.col(value), pl.col(n)
    at = (k.sum() - 1).cast(pl.Float64) * q
    lo, hi = at.floor(), at.ceil()
    below = d.filter(k.cum_sum() > lo).first()
    above = d.filter(k.cum_sum() > hi).first()
    return below + (above - below) * (at - lo)
