"""What a reader module declares: the format it reads, and how (the registry's entries).

Each reader module has a module-level ``FORMAT = Format(...)``; ``readers/__init__.py`` lists
them in ``REGISTRY``, in the order JSON documents are sniffed. ``read_source`` tries, for a
source of ``source_kind``, every format's ``read_path`` first (a streaming read, or a reader
that parses no JSON: it returns None to decline), then parses the JSON once and hands it to
the first format whose ``sniff`` takes its top level (an object, or, for a format whose
``top`` is ``list``, an array).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from trace_analyzer.inputs.discover import SOURCE_KINDS, Source
from trace_analyzer.readers.common import ReadResult

if TYPE_CHECKING:
    from trace_analyzer.model.schema import Args

# A parsed JSON document's top level: an object (its keys are text, its values any JSON), or
# an array for a format whose ``top`` is ``list`` (the Chrome array form, chrome_array.py).
Document = Any


class PathReader(Protocol):
    """Read a source from its path; None when this format declines it (parse it then).
    ``in_order``: the source is its run's only one, and its events may come sorted as
    ``schema.numbered`` sorts them (a reader that can sort more cheaply than numbered)."""

    def __call__(
        self,
        src: Source,
        keep_args: Args = False,
        *,
        max_bytes: int | None = None,
        in_order: bool = False,
    ) -> ReadResult | None: ...


@dataclass(frozen=True)
class Format:
    """One input format: its name, the source kind it is found as, and its readers.

    ``sniff(doc)`` says whether a parsed JSON document (its top level) is of this format;
    ``read(src, doc)`` reads such a document. ``top``: the JSON type of the top level it
    sniffs, ``dict`` (an object: every format but one) or ``list`` (an array).
    ``read_path(src, keep_args, max_bytes=)``, when given, is tried before any parsing. A
    format gives ``read_path``, or ``sniff`` and ``read``, or all three. A format recognised
    only to be skipped reads into ``ReadResult.skipped``.
    """

    name: str
    description: str
    source_kind: str  # a discovery source kind: "json" or "explorer-parquet"
    sniff: Callable[[Document], bool] | None = None
    read: Callable[[Source, Document], ReadResult] | None = None
    read_path: PathReader | None = None
    top: type = dict

    def __post_init__(self) -> None:
        if self.source_kind not in SOURCE_KINDS:
            raise ValueError(f"{self.name}: unknown source kind {self.source_kind!r}")
        if (self.sniff is None) != (self.read is None):
            raise ValueError(f"{self.name}: sniff and read go together")
        if self.read is None and self.read_path is None:
            raise ValueError(f"{self.name}: no reader")
        if self.top not in (dict, list):
            raise ValueError(f"{self.name}: a top level is an object or an array")
