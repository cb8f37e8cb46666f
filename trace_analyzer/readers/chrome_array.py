"""The Chrome array form: a trace written as a bare JSON array of events, no ``traceEvents`` key
(the Trace Event Format's "JSON Array Format"; docs/formats.md, "The Chrome array form").

Two producers wrote it, told apart by their records:

- **early Kineto** (PyTorch 1.8, until 2021): Kineto's records with the early category names
  (``Operator``, ``Runtime``, ``Kernel``, ``Memset``, ``Memcpy``), a device record's ``tid``
  written ``"stream 7"``, and launch flows ``cat: "async"``, ``name: "launch"`` (Kineto's
  later ``ac2g``) from the runtime call to the kernel. Read as the Kineto reader reads a
  trace, the stream's ``tid`` read as its number so that the flows bind (kineto._bind).
- **the legacy autograd profiler's** ``export_chrome_trace`` (PyTorch <= 1.7): ``ph: "X"``
  records without ``cat`` under ``pid: "CPU functions"`` (every op and ``record_function``
  label, ``tid`` the thread), with ``use_cuda`` an ``X`` record per op under ``pid: "CUDA
  functions"`` (``tid`` the device; its times are CUDA events recorded around the op, not a
  kernel's record) and ``cpu_to_cuda`` flows between them; ``ts`` in µs from the profile's
  start. Its host records are read as framework ops of one process; the CUDA-event intervals
  are not device activity, and are counted in a note.

Only the exact path reads this form (the streaming paths decline a file without
``traceEvents``): the array is parsed once, adjusted here, and read by ``kineto.read``.
"""

from __future__ import annotations

import re
from typing import Any

from trace_analyzer.inputs.discover import Source
from trace_analyzer.readers import kineto
from trace_analyzer.readers.common import ReadResult
from trace_analyzer.readers.format import Format

NAME = "chrome-array"
PROBE = 100  # the records looked at to decide that an array is one of events
STREAM_TID = re.compile(r"^stream (\d+)$")  # early Kineto's tid of a device record
REMOTE_TID = re.compile(r"thread_id:\s*(\d+)")  # the legacy export's tid of a remote event
LEGACY_HOST, LEGACY_GPU = "CPU functions", "CUDA functions"  # the legacy export's two pids
LEGACY_PID = 0  # the legacy export records no process id: its host records are one process
EARLY_NOTE = (
    "the Chrome array form (a bare JSON array of events, as early Kineto wrote until 2021): "
    "read as a Kineto trace, its 'async' launch flows as Kineto's ac2g"
)
LEGACY_NOTE = (
    "the legacy autograd profiler's export_chrome_trace (PyTorch <= 1.7, a bare JSON array): "
    "its records are read as the host's framework ops, of one process (the export records no "
    "pid), in µs from the profile's start"
)


def sniff(doc: list[Any]) -> bool:
    """Whether ``doc`` is a trace as a bare JSON array of events: a list whose first ``PROBE``
    items are all objects with a phase (``ph``). Anything else in a list is not a trace."""
    return bool(doc) and all(isinstance(e, dict) and "ph" in e for e in doc[:PROBE])


def is_legacy(doc: list[Any]) -> bool:
    """Whether the array is the legacy autograd profiler's export: its records' pid is one of
    its two names, never a process id."""
    return any(isinstance(e, dict) and e.get("pid") == LEGACY_HOST for e in doc[:PROBE])


def read(src: Source, doc: list[Any]) -> ReadResult:
    """Return the events of a trace in the Chrome array form."""
    if is_legacy(doc):
        events, gpu = _legacy(doc)
        result = kineto.read(src, {"traceEvents": events})
        _relative_clock(result)
        result.notes.append(LEGACY_NOTE)
        if gpu:
            result.notes.append(
                f"{gpu:,} CUDA-event interval{'s' * (gpu != 1)} of the legacy profiler (use_cuda: "
                "one per op, "
                "timed around it on the device, not a kernel's record): not device activity"
            )
    else:
        result = kineto.read(src, {"traceEvents": [_early(e) for e in doc]})
        result.notes.append(EARLY_NOTE)
    result.format = NAME
    return result


def _early(e: Any) -> Any:
    """Return an early Kineto record as the Kineto reader reads it: a device record's ``tid``
    ``"stream N"`` as N, and a launch flow (``cat: "async"``, ``name: "launch"``) as ``ac2g``."""
    if not isinstance(e, dict):
        return e
    tid = e.get("tid")
    if isinstance(tid, str) and (m := STREAM_TID.match(tid)):
        e = {**e, "tid": int(m.group(1))}
    if e.get("cat") == "async" and e.get("name") == "launch" and e.get("ph") in ("s", "f"):
        e = {**e, "cat": "ac2g"}
    return e


def _legacy(doc: list[Any]) -> tuple[list[Any], int]:
    """Return the legacy export's host records as Kineto framework ops (``cat: "Operator"``,
    one pid, a remote event's ``tid`` its thread id), and the count of its CUDA-event
    intervals, left out (the ``cpu_to_cuda`` flows stay, and are counted as not events)."""
    events: list[Any] = []
    gpu = 0
    for e in doc:
        if not isinstance(e, dict):
            events.append(e)
            continue
        pid = e.get("pid")
        if pid == LEGACY_GPU and e.get("ph") == "X":
            gpu += 1
            continue
        if pid in (LEGACY_HOST, LEGACY_GPU):
            e = {**e, "pid": LEGACY_PID}
            tid = e.get("tid")
            if isinstance(tid, str) and (m := REMOTE_TID.search(tid)):
                e["tid"] = int(m.group(1))
            if e.get("ph") == "X" and "cat" not in e:
                e["cat"] = "Operator"
        events.append(e)
    return events, gpu


def _relative_clock(result: ReadResult) -> None:
    """The legacy export's ts are µs from the profile's start, as it always wrote them: said
    in a note, not warned as a clock of unknown origin."""
    unknown = [w for w in result.warnings if "times are relative to an unknown origin" in w]
    for w in unknown:
        result.warnings.remove(w)
    if unknown:
        result.notes.append("clock: ts in µs from the profile's start (the legacy export's)")


FORMAT = Format(
    NAME,
    "the Chrome array form: early Kineto, the legacy autograd profiler's export",
    "json",
    sniff=sniff,
    read=read,
    top=list,
)
