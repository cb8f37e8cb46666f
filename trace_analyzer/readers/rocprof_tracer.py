"""rocprof v1's JSON trace (``rocprof --hip-trace``, ``--hsa-trace``, ``--sys-trace``):
recognised, and not read.

rocprof v1 writes ``results.json``, shaped as a Chrome trace (``traceEvents``) but not a
Kineto one: every value a JSON string (``"ts":"773902396463"``), each record's bounds in ns
in its args (``"BeginNs"``, ``"EndNs"``), processes named ``CPU HIP API``, ``COPY``, ``GPU0``,
and no ``cat``. Read as Kineto, every event would be dropped as malformed. Its signature,
looked for in the first ``HEAD`` bytes (decompressed) before any reader parses the file: a
``traceEvents`` key, a ``ts`` written as a string of digits, and ``BeginNs`` and ``EndNs``
args written as strings of digits. Kineto writes ``ts`` as a number, and never those args.

A file named alone, or a path holding nothing else, is refused with ``NOTE`` (exit 2,
loading/profile.py ``NOT_TIMING``); beside a trace traceana reads, the run says it skipped it.
"""

from __future__ import annotations

import re
import zlib
from typing import TYPE_CHECKING

from trace_analyzer.inputs.discover import Source
from trace_analyzer.readers.common import ReadResult
from trace_analyzer.readers.format import Format
from trace_analyzer.readers.kineto_bytes import open_trace

if TYPE_CHECKING:
    from trace_analyzer.model.schema import Args

NAME = "rocprof-v1"
HEAD = 64 << 10  # the bytes looked at: the process metadata, then the first records
NOTE = (
    "a rocprof v1 HIP trace (rocprofiler JSON), not a PyTorch profiler trace: not read; "
    "profile the workload with torch.profiler (on ROCm it writes a Kineto trace traceana "
    "reads), or open this file in Perfetto"
)
SIGNATURE = (
    re.compile(rb'"traceEvents"\s*:'),
    re.compile(rb'"ts"\s*:\s*"\d+"'),
    re.compile(rb'"BeginNs"\s*:\s*"\d+"'),
    re.compile(rb'"EndNs"\s*:\s*"\d+"'),
)


def is_rocprof_v1(head: bytes) -> bool:
    """Whether the first bytes of a JSON file are rocprof v1's trace (``SIGNATURE``)."""
    return all(p.search(head) for p in SIGNATURE)


def read_path(
    src: Source,
    keep_args: Args = False,
    *,
    max_bytes: int | None = None,
    in_order: bool = False,
) -> ReadResult | None:
    """Return the source as recognised and skipped when its head is rocprof v1's; else None
    (the other formats read it). A file that cannot be read is left to them: they word it."""
    try:
        with open_trace(src.path) as f:
            head = f.read(HEAD)
    except (OSError, EOFError, zlib.error):
        return None
    return ReadResult.skipped(src, NAME, NOTE) if is_rocprof_v1(head) else None


FORMAT = Format(NAME, "rocprof v1 JSON trace (--hip-trace), not read", "json", read_path=read_path)
