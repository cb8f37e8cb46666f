"""What the analyses return: small frozen dataclasses of polars frames and scalars.

Every analysis returns one result per run (``GapsResult``, ``OpsResult``, ``ChainResult``,
``InfoResult``, ``DiffResult``, ``TimelineResult``), each with one documented ``to_json()``:
the shape its command's ``--format json`` prints under ``runs`` (docs/gaps.md, docs/graph.md,
docs/ci.md). What a command prints over every run under a path is a ``RunResults``: the path,
the runs, and ``to_json()`` for the whole document. Renderers take these and never compute.

In a notebook a result shows its summary table (``_repr_html_``) and converts to pandas
(``to_pandas()``, when pandas is installed); ``repr`` is one line.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import polars as pl

SCHEMA_VERSION = 1


class RunResult:
    """What every per-run result offers (a mixin of the frozen result dataclasses)."""

    # The JSON key of the table a CSV shows, one row per item (render/csv.py).
    csv_table: ClassVar[str] = "rows"

    def to_json(self) -> dict[str, Any]:
        """Return the result as the plain data of its command's JSON output (one run)."""
        raise NotImplementedError

    def csv_rows(self, data: dict[str, Any]) -> list[Any]:
        """Return the rows a CSV shows of ``data``, the result's JSON: its ``csv_table``."""
        rows: list[Any] = data[self.csv_table]
        return rows

    def main_frame(self) -> pl.DataFrame:
        """Return the table the result is about (what ``to_pandas`` converts)."""
        raise NotImplementedError

    def summary_rows(self) -> list[tuple[str, object]]:
        """Return (label, value) pairs: the summary a notebook shows."""
        raise NotImplementedError

    def to_pandas(self) -> Any:
        """Return ``main_frame()`` as a pandas DataFrame (needs pandas and pyarrow)."""
        return self.main_frame().to_pandas()

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_shown(v))}</td></tr>"
            for k, v in self.summary_rows()
        )
        return f"<table><caption>{html.escape(repr(self))}</caption>{rows}</table>"


class Made(Protocol):
    """A table not made yet (``Later``): calling it makes the whole table; ``pick`` makes
    ``choose`` of it (a few rows: the longest gaps a text report lists) without the rest."""

    def __call__(self) -> pl.DataFrame: ...

    def pick(self, choose: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.DataFrame: ...

    @property
    def height(self) -> int: ...


@dataclass(frozen=True, repr=False)
class Listed:
    """A table of which only some rows are held, and how many it had (``total``): those a
    report of a multi-rank run made a rank at a time shows (the longest gaps, every gap of
    the lanes it draws; batch/report.py). Read whole it is the rows held (it is never
    replaced by them: ``height`` stays the rows it had); ``pick`` chooses among them, which
    is right for the choices they were kept for. ``counts``: what the report draws of every
    row it had (the device gaps' durations, per duration and cause: ``n``, ``idle``)."""

    rows: pl.DataFrame
    total: int
    counts: pl.DataFrame | None = None

    def __call__(self) -> pl.DataFrame:
        return self.rows

    def pick(self, choose: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.DataFrame:
        return choose(self.rows)

    @property
    def height(self) -> int:
        return self.total

    def __repr__(self) -> str:
        return f"Listed({self.rows.height} of {self.total} rows)"


class Later:
    """A table of a result that may be made when it is first read: stored as the table, or
    as what makes it (a function, or a ``Made``), which reading calls once (its table then
    kept). ``picked`` takes a few rows of it without making the rest where it can.

    ``GapsResult.gaps``, every lane's gaps attributed, is what the JSON, the CSV, the cache
    and the other commands read, and the text reports do not: where the lanes are not the
    devices (``lanes_are_devices``) it is a second attribution, as long as the devices'
    (half of a Kineto trace's gaps time), made for a report only when one reads it. Its
    evidence and ``device_gaps``' are sentences written when the table is read: a text report
    writes those of the rows it lists only (at 10 million events, 0.5 s of 11)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot = name, f"_{name}"

    def __get__(self, result: object | None, owner: type | None = None) -> pl.DataFrame:
        if result is None:  # on the class: no default (the dataclass field is required)
            raise AttributeError(self.slot)
        value = result.__dict__[self.slot]
        if isinstance(value, Listed):  # kept as it is: its height is the rows it had
            return value.rows
        if callable(value):
            value = result.__dict__[self.slot] = value()
        return value  # type: ignore[no-any-return]

    def __set__(self, result: object, value: pl.DataFrame | Callable[[], pl.DataFrame]) -> None:
        result.__dict__[self.slot] = value

    def stored(self, result: object) -> pl.DataFrame | Callable[[], pl.DataFrame]:
        """Return what ``result`` holds: the table, or what makes it, not called yet."""
        return result.__dict__[self.slot]  # type: ignore[no-any-return]

    def picked(
        self, result: object, choose: Callable[[pl.DataFrame], pl.DataFrame]
    ) -> pl.DataFrame:
        """Return ``choose`` of the table (rows chosen by columns every form of it holds),
        made for those rows only where what makes it can (``Made.pick``)."""
        value = self.stored(result)
        if isinstance(value, pl.DataFrame) or not hasattr(value, "pick"):
            return choose(self.__get__(result))
        return value.pick(choose)  # type: ignore[no-any-return]

    def height(self, result: object) -> int:
        """Return the table's rows, without making it where what makes it knows them."""
        value = self.stored(result)
        if isinstance(value, pl.DataFrame) or not hasattr(value, "height"):
            return self.__get__(result).height
        return int(value.height)


T = TypeVar("T")


def replaced(result: T, **changes: Any) -> T:
    """``dataclasses.replace`` of the dataclass ``result``, each table not made yet
    (``Later``) passed on as it is: a copy that made it would make it for every report."""
    kind = type(result)
    held = {
        f.name: kind.__dict__[f.name].stored(result)
        for f in fields(result)  # type: ignore[arg-type]
        if isinstance(kind.__dict__.get(f.name), Later) and f.name not in changes
    }
    return replace(result, **held, **changes)  # type: ignore[type-var]


class TableResult(RunResult):
    """A result about one long table, ``table`` (a row per op, or per hardware execution: a
    large trace has many thousands), in the JSON as ``rows``: what ``to_pandas`` converts."""

    table: pl.DataFrame

    def main_frame(self) -> pl.DataFrame:
        return self.table


def _shown(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


R = TypeVar("R", bound=RunResult)


@dataclass(frozen=True, repr=False)
class RunResults(Generic[R]):
    """One analysis of every run under a path: what a command prints.

    ``to_json()`` is ``{"schema_version": 1, "path": ..., "runs": [...]}``; ``header`` adds
    keys after ``path`` (``gaps`` adds ``min_gap_ns``; ``diff`` names base and head instead).
    ``warnings``: each run's warnings (the loaded profile's, one list per run), which the
    reports open with and which end each run's JSON as ``warnings``; None for a result that
    holds its own (``info``) or has none.
    """

    path: str
    runs: tuple[R, ...]
    header: Mapping[str, object] | None = None
    labels: Sequence[str] = ("path",)
    warnings: Sequence[Sequence[str]] | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the whole document: the JSON output of the command."""
        head: dict[str, Any] = {"path": self.path} if "path" in self.labels else {}
        head.update(self.header or {})
        runs = [r.to_json() for r in self.runs]
        if self.warnings is not None:
            runs = [{**d, "warnings": list(w)} for d, w in zip(runs, self.warnings, strict=True)]
        return {"schema_version": SCHEMA_VERSION, **head, "runs": runs}

    def __repr__(self) -> str:
        kinds = sorted({type(r).__name__ for r in self.runs}) or ["results"]
        return f"RunResults({'/'.join(kinds)}, path={self.path!r}, {len(self.runs)} runs)"

    def _repr_html_(self) -> str:
        return "".join(r._repr_html_() for r in self.runs)


def frame_repr(name: str, **parts: object) -> str:
    """Return the one-line repr of a result named ``name``: ``Name(k=v, ...)`` of ``parts``,
    frames as their height."""
    shown = []
    for k, v in parts.items():
        if isinstance(v, pl.DataFrame):
            one = v.height == 1 and k.endswith("s")
            shown.append(f"{v.height} {k[:-1] if one else k}")
        else:
            shown.append(f"{k}={v!r}")
    return f"{name}({', '.join(shown)})"
