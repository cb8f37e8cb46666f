"""The buckets a report's timeline is drawn on (timeline.py, lanes.py): a ``Grid`` of
buckets, intervals cut at their edges, the time covered per bucket and what covers most of
it; and ``longest``, the gaps a report lists."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

# per row key (a lane, an op row): each column's value in every bucket
Dense = dict[Any, dict[str, list[int]]]


def longest(frame: pl.DataFrame, n: int, by: str = "duration_ns") -> pl.DataFrame:
    """Return the ``n`` rows of ``frame`` with the largest ``by`` (table order at equal
    values), in table order: the gaps a report lists."""
    if frame.height <= n:
        return frame
    picked = frame.with_row_index("_row").sort(by, descending=True, maintain_order=True)
    return picked.head(n).sort("_row").drop("_row")


@dataclass(frozen=True)
class Grid:
    """Buckets ``n`` of ``width`` ns from ``start`` (ns); ``origin``: the window start."""

    start: int
    width: int
    n: int
    origin: int

    def pieces(self, frame: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
        """Return each interval ``s``..``e`` of ``frame`` cut at the bucket edges: ``keys``,
        ``bucket`` and ``overlap`` (ns). Intervals of one key must not overlap."""
        w, lim = self.width, self.n * self.width
        d = frame.select(
            *keys,
            s=(pl.col("s") - self.start).clip(0, lim),
            e=(pl.col("e") - self.start).clip(0, lim),
        ).filter(pl.col("e") > pl.col("s"))
        d = d.with_columns(b0=pl.col("s") // w, b1=(pl.col("e") - 1) // w)
        first = d.select(
            *keys, bucket="b0", overlap=pl.min_horizontal("e", (pl.col("b0") + 1) * w) - pl.col("s")
        )
        last = d.filter(pl.col("b1") > pl.col("b0")).select(
            *keys, bucket="b1", overlap=pl.col("e") - pl.col("b1") * w
        )
        inner = (
            d.filter(pl.col("b1") > pl.col("b0") + 1)
            .select(*keys, bucket=pl.int_ranges(pl.col("b0") + 1, pl.col("b1")))
            .explode("bucket")
            .with_columns(overlap=pl.lit(w))
        )
        cast_to = {"bucket": pl.Int64, "overlap": pl.Int64}
        return pl.concat([f.cast(cast_to) for f in (first, last, inner)])  # type: ignore[arg-type]

    def dense(self, found: pl.DataFrame, key: str, columns: dict[str, int]) -> Dense:
        """Return per ``key`` value of ``found`` (one row per key and bucket) a list of every
        bucket's value of each of ``columns`` (their default where ``found`` has none)."""
        out: Dense = {}
        for (k,), part in found.sort("bucket").group_by(key, maintain_order=True):
            b = part["bucket"].to_list()
            out[k] = {}
            for col, default in columns.items():
                values = [default] * self.n
                for i, v in zip(b, part[col].to_list(), strict=True):
                    values[i] = v
                out[k][col] = values
        return out


def per_mille(col: str, width: int) -> pl.Expr:
    return ((pl.col(col) * 1000 + width // 2) // width).cast(pl.Int64)


def dominant(pieces: pl.DataFrame, key: str, what: str, width: int) -> pl.DataFrame:
    """Return per ``key`` and bucket the time ``pieces`` cover (per mille) and the ``what``
    covering most of it (the first in order at equal time)."""
    per = pieces.group_by(key, "bucket", what).agg(pl.col("overlap").sum())
    return (
        per.sort(key, "bucket", "overlap", what, descending=[False, False, True, False])
        .group_by(key, "bucket", maintain_order=True)
        .agg(pl.col("overlap").sum(), pl.col(what).first())
        .with_columns(per_mille("overlap", width).alias("cover"))
    )
