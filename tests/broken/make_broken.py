"""Write the corpus of broken inputs under tests/broken/<case>/ (checked in).

Run from the repository root:  .venv/bin/python tests/broken/make_broken.py [--out DIR]

Every case is a small file (or a small Explorer Parquet folder) made from one of three tiny
valid profiles written here: a Kineto trace (3 cpu_ops, 3 launches, 3 kernels, ac2g flows,
baseTimeNanoseconds), an Explorer Parquet export and a legacy Explorer JSON export. ``CASES``
lists each case with what it is and what traceana must do with it:

  ("error", text)   exit 2, one stderr line naming the file and containing ``text``
  ("ok", expect)    exit 0; ``expect`` gives the events kept, the dropped counts by reason,
                    a warning (or note) substring, and the gaps summary of the good events

The expected numbers are typed in from what this script writes, never read back from
traceana. Output is deterministic (no randomness, no clock): reruns are byte-identical.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: conftest's writers
from conftest import EXPLORER_COLUMNS, write_parquet  # noqa: E402

HERE = Path(__file__).resolve().parent
BASE = 1_793_620_800_000_000_000  # baseTimeNanoseconds; ts below are µs after it
US = 1_000

# --- The tiny valid Kineto trace ----------------------------------------------------------
# Three ops on host thread 1/1; each launches one kernel on GPU 0 stream 7. Kernels (µs):
# add 30-40, mul 60-80, relu 90-95: busy 35 µs, gaps 20 µs and 10 µs, window 30-95.


def _x(cat, name, ts, dur, pid, tid, **args):
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def _flow(ph, fid, pid, tid, ts):
    ev = {"ph": ph, "id": fid, "pid": pid, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"}
    if ph == "f":
        ev["bp"] = "e"
    return ev


OPS = [  # (op, kernel, op ts, launch ts, kernel ts, kernel dur)
    ("aten::add", "add_kernel", 10, 12, 30, 10),
    ("aten::mul", "mul_kernel", 50, 52, 60, 20),
    ("aten::relu", "relu_kernel", 84, 86, 90, 5),
]


def kineto_events() -> list[dict]:
    evs = [_x("user_annotation", "ProfilerStep#0", 0, 100, 1, 1)]
    for i, (op, kern, t_op, t_launch, t_kern, d_kern) in enumerate(OPS, start=1):
        evs.append(_x("cpu_op", op, t_op, 6, 1, 1, **{"External id": i}))
        evs.append(_x("cuda_runtime", "cudaLaunchKernel", t_launch, 2, 1, 1,
                      **{"External id": i, "correlation": i}))
        evs.append(_x("kernel", kern, t_kern, d_kern, 0, 7, device=0, stream=7,
                      correlation=i, **{"External id": i}))
        evs.append(_flow("s", i, 1, 1, t_launch))
        evs.append(_flow("f", i, 0, 7, t_kern))
    return evs


def kineto_text(events: list, base: int | None = BASE, dumps=None) -> str:
    """Return the trace laid out as libkineto writes it (one record a line, '},\\n  {')."""
    dumps = dumps or (lambda o: json.dumps(o, separators=(", ", ": ")))
    head = '{\n  "schemaVersion": 1,\n  "deviceProperties": [],\n'
    if base is not None:
        head += f'  "baseTimeNanoseconds": {base},\n'
    body = ",\n  ".join(dumps(e) for e in events)
    return (head + '  "displayTimeUnit": "ms",\n  "traceEvents": [\n  ' + body
            + '\n],\n  "traceName": "trace.json"\n}\n')


GOOD_TEXT = kineto_text(kineto_events())
GOOD_BYTES = GOOD_TEXT.encode()

# The gaps summary of the valid trace and of a trace that lost one kernel.
GAPS_ALL = {"executions": 3, "busy_ns": 35 * US, "gap_count": 2, "idle_ns": 30 * US}
GAPS_NO_RELU = {"executions": 2, "busy_ns": 30 * US, "gap_count": 1, "idle_ns": 20 * US}
GAPS_NO_ADD = {"executions": 2, "busy_ns": 25 * US, "gap_count": 1, "idle_ns": 10 * US}


def ok(events: int, dropped: dict | None = None, warning: str | None = None,
       note: str | None = None, gaps: dict | None = None, start_ns: int | None = None,
       end_ns: int | None = None) -> tuple:
    return ("ok", {"events": events, "dropped": dropped or {}, "warning": warning, "note": note,
                   "gaps": gaps, "start_ns": start_ns, "end_ns": end_ns})


def err(text: str) -> tuple:
    return ("error", text)


def with_event(i: int, **change) -> list[dict]:
    """Return the valid events with event ``i`` changed (a value of ... removes the key)."""
    evs = kineto_events()
    for k, v in change.items():
        if v is ...:
            evs[i].pop(k, None)
        else:
            evs[i][k] = v
    return evs


# indexes into kineto_events(): 0 step, then per op i (0-based): 1+5i op, 2+5i launch,
# 3+5i kernel, 4+5i flow start, 5+5i flow end
I_ADD_KERNEL, I_MUL_OP, I_MUL_LAUNCH, I_RELU_KERNEL, I_RELU_FLOW_END = 3, 6, 7, 13, 15


def _cut(at: str, before: bool = False) -> bytes:
    """The valid trace cut just after (or before) the first occurrence of ``at``."""
    i = GOOD_BYTES.index(at.encode())
    return GOOD_BYTES[: i if before else i + len(at)]


def _deep_text(depth: int) -> bytes:
    """The trace with aten::mul's args holding a list nested ``depth`` deep (written as text:
    json.dumps recurses)."""
    evs = with_event(I_MUL_OP, args={"External id": 2, "deep": "__DEEP__"})
    return kineto_text(evs).replace('"__DEEP__"', "[" * depth + "1" + "]" * depth).encode()


def _nan_dumps(o):  # json.dumps writes NaN/Infinity for float('nan')/float('inf')
    return json.dumps(o, separators=(", ", ": "), allow_nan=True)


def _huge_dumps(o):
    return json.dumps(o, separators=(", ", ": ")).replace('"__HUGE__"', str(10**30))


# --- Explorer Parquet ---------------------------------------------------------------------

PQ_COLUMNS = EXPLORER_COLUMNS  # the 7.4.0 columns, as the tests write them
# Hardware executions on NC 0 (ns after BASE): 1000-2000, 3000-4000, 4500-5000:
# busy 2500, gaps 1000 and 500.
PQ_HW = [(1000, 2000), (3000, 4000), (4500, 5000)]
GAPS_PQ = {"executions": 3, "busy_ns": 2500, "gap_count": 2, "idle_ns": 1500}


def pq_rows() -> list[dict]:
    rows = []
    for i, (s, e) in enumerate(PQ_HW):
        rows.append(dict(name="aten::add", start_ts=BASE + s - 900, end_ts=BASE + s - 100,
                         trace_event_source="framework", thread_id=10))
        rows.append(dict(name="nrt_execute", start_ts=BASE + s - 600, end_ts=BASE + e + 50,
                         trace_event_source="neuron_rt", thread_id=11, nc_idx=0,
                         extra_attributes_json=json.dumps({"nrt_sequence_id": i + 1})))
        rows.append(dict(name="nc_exec_running", start_ts=BASE + s, end_ts=BASE + e,
                         trace_event_source="neuron_hw", nc_idx=0, pcore_idx=0,
                         extra_attributes_json=json.dumps({"nrt_sequence_id": i + 1})))
    for n, r in enumerate(rows, start=1):
        r.update(id=n, instance_id="i-broken", process_id=4242)
    return rows


def write_pq(folder: Path, rows: list[dict], drop=(), override: dict | None = None,
             version: str | None = "7.4.0") -> None:
    path = write_parquet(folder / "SystemProfileEvents.parquet", rows, drop=tuple(drop))
    if override:  # columns replaced whole, with whatever type the case wants
        df = pl.read_parquet(path)
        df.with_columns(pl.Series(col, series) for col, series in override.items()).write_parquet(path)
    if version is not None:
        pl.DataFrame({"profile_schema_version": [version], "ntff_version": [5]}).write_parquet(
            folder / "Metadata.parquet")


# --- Legacy Explorer JSON -----------------------------------------------------------------


def legacy_records(strings: bool) -> list[dict]:
    """The Parquet case's rows as legacy JSON records; numbers as strings when ``strings``."""
    s = str if strings else (lambda v: v)
    out = []
    for r in pq_rows():
        ev = {"name": r["name"], "timestamp": s(r["start_ts"]),
              "duration": s(r["end_ts"] - r["start_ts"]), "id": s(r["id"]),
              "instance_id": r["instance_id"], "process_id": s(r["process_id"]),
              "thread_id": s(r.get("thread_id")) if r.get("thread_id") is not None else None,
              "trace_event_source": r["trace_event_source"]}
        if r.get("nc_idx") is not None:
            ev["nc_idx"] = s(r["nc_idx"])
        if r.get("pcore_idx") is not None:
            ev["pcore_idx"] = s(r["pcore_idx"])
        if ev["thread_id"] is None:
            del ev["thread_id"]
        out.append(ev)
    return out


def legacy_text(records: list) -> bytes:
    lines = ",\n".join(json.dumps(e, separators=(",", ":")) for e in records)
    return ('{"system_profile_metadata":{"ntff_version":5},\n"trace_event":[\n' + lines
            + "\n]}\n").encode()


# --- The cases ----------------------------------------------------------------------------
# name -> (file written inside tests/broken/<name>/ ("" for a Parquet folder), what it is,
#          expected outcome, writer(folder))


def _file(fname: str, data: bytes):
    def write(folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / fname).write_bytes(data)
    return fname, write


def _pq(**kw):
    def write(folder: Path) -> None:
        rows = kw.get("rows") or pq_rows()
        write_pq(folder, rows, drop=kw.get("drop", ()), override=kw.get("override"),
                 version=kw.get("version", "7.4.0"))
    return "", write


def _relu_dropped_rows() -> list[dict]:
    rows = pq_rows()
    rows[8]["end_ts"] = rows[8]["start_ts"] - 100  # the third nc_exec_running ends before it starts
    return rows


def _unnamed_rows() -> list[dict]:
    rows = pq_rows()
    rows[8]["name"] = None
    return rows


def _dup_id_rows() -> list[dict]:
    rows = pq_rows()
    for r in rows:
        r["id"] = 7
    return rows


def _legacy_missing_ts() -> bytes:
    recs = legacy_records(strings=True)
    del recs[8]["timestamp"]  # the third nc_exec_running
    return legacy_text(recs)


GOOD_EVENTS = 10  # step + 3 x (op, launch, kernel)
T0, T_END = BASE, BASE + 100 * US  # the step spans the trace
PQ_T0, PQ_END = BASE + 100, BASE + 5050

_CASES = {
    # truncated JSON at several points (test_bad_input cuts at byte 40 only)
    "trunc_first_byte": (*_file("trace.json", GOOD_BYTES[:1]),
                         "the valid trace cut after its first byte '{'", err("not valid JSON")),
    "trunc_in_header": (*_file("trace.json", _cut('"baseTimeNano')),
                        "cut inside a top-level key before traceEvents", err("not valid JSON")),
    "trunc_at_record_boundary": (*_file("trace.json", _cut('},\n  {"ph": "X", "cat": "cpu_op", "name": "aten::mul"', before=True) + b"}"),
                                 "cut at the end of a record inside traceEvents", err("not valid JSON")),
    "trunc_in_string": (*_file("trace.json", _cut('"name": "mul_ker')),
                        "cut inside a string value in the middle of traceEvents", err("not valid JSON")),
    "trunc_after_array": (*_file("trace.json", _cut("\n]")),
                          "cut just after the closing ] of traceEvents", err("not valid JSON")),
    "trunc_last_brace": (*_file("trace.json", GOOD_BYTES.rstrip()[:-1]),
                         "everything but the final }", err("not valid JSON")),
    "trunc_inside_gzip": (*_file("trace.json.gz", gzip.compress(_cut('"name": "mul_ker'), mtime=0)),
                          "a complete gzip stream of a truncated trace", err("not valid JSON")),
    # empty inputs beyond test_bad_input's 0-byte .json
    "empty_gz_0byte": (*_file("trace.json.gz", b""), "a 0-byte .json.gz file", err("empty")),
    "empty_gz_stream": (*_file("trace.json.gz", gzip.compress(b"", mtime=0)),
                        "a valid gzip stream of nothing", err("empty")),
    # not JSON / wrong shape
    "not_json_binary": (*_file("trace.json", bytes(range(256)) * 2),
                        "binary bytes 0..255 named .json", err("not valid JSON")),
    "json_scalar": (*_file("trace.json", b"42\n"), "a JSON number", err("not a trace")),
    "json_string": (*_file("trace.json", b'"traceEvents"\n'), "a JSON string", err("not a trace")),
    "traceevents_null": (*_file("trace.json", b'{"traceEvents": null}'), "traceEvents is null",
                         err("not a list")),
    "records_not_objects": (*_file("trace.json", kineto_text([1, "x", None, [2]] + kineto_events()).encode()),
                            "4 non-object records among the valid ones",
                            ok(GOOD_EVENTS, note="4 non-object records", gaps=GAPS_ALL,
                               start_ns=T0, end_ns=T_END)),
    "field_wrong_types": (*_file("trace.json", kineto_text(with_event(I_MUL_LAUNCH, ts="52")).encode()),
                          "the mul launch's ts is the string \"52\"",
                          ok(GOOD_EVENTS - 1, dropped={"null start_ns": 1, "null end_ns": 1},
                             warning="malformed events dropped", gaps=GAPS_ALL,
                             start_ns=T0, end_ns=T_END)),
    # encodings
    "bom_kineto_layout": (*_file("trace.json", b"\xef\xbb\xbf" + GOOD_BYTES),
                          "UTF-8 BOM before a trace in libkineto's layout (the fast path)",
                          ok(GOOD_EVENTS, gaps=GAPS_ALL, start_ns=T0, end_ns=T_END)),
    "invalid_utf8": (*_file("trace.json", GOOD_BYTES.replace(b"mul_kernel", b"mul_\xff\xfekernel")),
                     "bytes FF FE (invalid UTF-8) inside a kernel name", err("UTF-8")),
    # numbers
    "nan_dur": (*_file("trace.json", kineto_text(with_event(I_RELU_KERNEL, dur=float("nan")), dumps=_nan_dumps).encode()),
                "the relu kernel's dur is the bare token NaN (not JSON)", err("not valid JSON")),
    "infinity_ts": (*_file("trace.json", kineto_text(with_event(I_ADD_KERNEL, ts=float("inf")), dumps=_nan_dumps).encode()),
                    "the add kernel's ts is the bare token Infinity (not JSON)", err("not valid JSON")),
    "negative_dur": (*_file("trace.json", kineto_text(with_event(I_MUL_OP, dur=-6)).encode()),
                     "aten::mul has dur -6",
                     ok(GOOD_EVENTS - 1, dropped={"end before start": 1},
                        warning="malformed events dropped", gaps=GAPS_ALL, start_ns=T0, end_ns=T_END)),
    "huge_ts": (*_file("trace.json", kineto_text(with_event(I_RELU_KERNEL, ts="__HUGE__"), dumps=_huge_dumps).encode()),
                "the relu kernel's ts is 10**30 (beyond int64 ns)",
                ok(GOOD_EVENTS - 1, dropped={"null start_ns": 1, "null end_ns": 1},
                   warning="malformed events dropped", gaps=GAPS_NO_RELU, start_ns=T0, end_ns=T_END)),
    "huge_ids": (*_file("trace.json", kineto_text(with_event(I_MUL_LAUNCH, pid=2**64, args={"correlation": 2**70, "External id": 2**63}), dumps=None).encode()),
                 "the mul launch's pid, correlation and External id beyond int64",
                 # no pid, so no lane: the launch is dropped and counted; the rest is right
                 ok(GOOD_EVENTS - 1, dropped={"null lane": 1}, warning="malformed events dropped",
                    gaps=GAPS_ALL, start_ns=T0, end_ns=T_END)),
    "huge_step_number": (*_file("trace.json", kineto_text(with_event(0, name="ProfilerStep#" + "9" * 23)).encode()),
                         "the step annotation is ProfilerStep#99999999999999999999999 (beyond int64)",
                         ok(GOOD_EVENTS, gaps=GAPS_ALL, start_ns=T0, end_ns=T_END)),
    # ids, names, flows, clock
    "duplicate_ids": (*_file("trace.json", kineto_text([
                          {**e, "id": 1} if e.get("cat") == "ac2g" else
                          ({**e, "args": {**e["args"], "correlation": 1, "External id": 1}} if "args" in e else e)
                          for e in kineto_events()]).encode()),
                      "every flow has id 1 and every correlation/External id is 1",
                      ok(GOOD_EVENTS, gaps=GAPS_ALL, start_ns=T0, end_ns=T_END)),
    "no_name": (*_file("trace.json", kineto_text(with_event(I_RELU_KERNEL, name=...)).encode()),
                "the relu kernel has no name",
                ok(GOOD_EVENTS - 1, dropped={"null name": 1}, warning="malformed events dropped",
                   gaps=GAPS_NO_RELU, start_ns=T0, end_ns=T_END)),
    "flow_no_end": (*_file("trace.json", kineto_text([e for i, e in enumerate(kineto_events()) if i != I_RELU_FLOW_END]).encode()),
                    "the relu flow has a start and no end",
                    ok(GOOD_EVENTS, gaps=GAPS_ALL, start_ns=T0, end_ns=T_END)),
    "no_base_time": (*_file("trace.json", kineto_text(kineto_events(), base=None).encode()),
                     "no baseTimeNanoseconds; ts are small relative µs",
                     ok(GOOD_EVENTS, warning="no baseTimeNanoseconds", gaps=GAPS_ALL,
                        start_ns=0, end_ns=100 * US)),
    # nesting
    "deep_args_ok": (*_file("trace.json", _deep_text(500)),
                     "aten::mul's args hold a list nested 500 deep",
                     ok(GOOD_EVENTS, gaps=GAPS_ALL, start_ns=T0, end_ns=T_END)),
    "deep_args_too_deep": (*_file("trace.json", _deep_text(3000)),
                           "aten::mul's args hold a list nested 3000 deep",
                           err("depth")),
    "deep_top_level": (*_file("trace.json", b"[" * 5000 + b"]" * 5000), "a list nested 5000 deep",
                       err("depth")),
    # Explorer Parquet
    "pq_start_ts_text": (*_pq(override={"start_ts": ["t" + str(i) for i in range(9)]}),
                         "start_ts is a String column of non-numbers", err("start_ts")),
    "pq_start_ts_digits": (*_pq(override={"start_ts": [str(r["start_ts"]) for r in pq_rows()]}),
                           "start_ts is a String column holding decimal ns",
                           ok(9, gaps=GAPS_PQ, start_ns=PQ_T0, end_ns=PQ_END)),
    "pq_name_int": (*_pq(override={"name": list(range(9))}), "name is an Int64 column",
                    err("column name has type Int64")),
    "pq_missing_two_columns": (*_pq(drop=("name", "trace_event_source")),
                               "no name and no trace_event_source column",
                               err("missing required columns: name, trace_event_source")),
    "pq_unknown_major": (*_pq(version="9.1.0"), "Metadata says schema 9.1.0",
                         ok(9, warning="Explorer schema 9.1.0", gaps=GAPS_PQ, start_ns=PQ_T0,
                            end_ns=PQ_END)),
    "pq_end_before_start": (*_pq(rows=_relu_dropped_rows()),
                            "the third nc_exec_running ends 100 ns before it starts",
                            ok(8, dropped={"end before start": 1}, warning="malformed events dropped",
                               gaps={"executions": 2, "busy_ns": 2000, "gap_count": 1, "idle_ns": 1000},
                               start_ns=PQ_T0, end_ns=PQ_END)),
    "pq_null_name": (*_pq(rows=_unnamed_rows()), "the third nc_exec_running has a null name",
                     ok(8, dropped={"null name": 1}, warning="malformed events dropped",
                        gaps={"executions": 2, "busy_ns": 2000, "gap_count": 1, "idle_ns": 1000},
                        start_ns=PQ_T0, end_ns=PQ_END)),
    "pq_duplicate_ids": (*_pq(rows=_dup_id_rows()), "every row has id 7",
                         ok(9, gaps=GAPS_PQ, start_ns=PQ_T0, end_ns=PQ_END)),
    # legacy Explorer JSON
    "legacy_string_numbers": (*_file("system_profile.json", legacy_text(legacy_records(strings=True))),
                              "every number (timestamp, duration, ids, cores) is a string",
                              ok(9, gaps=GAPS_PQ, start_ns=PQ_T0, end_ns=PQ_END)),
    "legacy_missing_timestamp": (*_file("system_profile.json", _legacy_missing_ts()),
                                 "string numbers; the third nc_exec_running has no timestamp",
                                 ok(8, warning="1 trace_event records without a timestamp dropped",
                                    gaps={"executions": 2, "busy_ns": 2000, "gap_count": 1, "idle_ns": 1000},
                                    start_ns=PQ_T0, end_ns=PQ_END)),
    "legacy_not_a_list": (*_file("system_profile.json", b'{"trace_event": 5}'),
                          "trace_event is a number", err("trace_event is not a list")),
}

# Cases on which traceana does not (yet) do what the table says: the tests mark them xfail.
KNOWN_BUGS: dict[str, str] = {}  # none open; fixed so far: huge_step_number, pq_name_int

# The public table: name, target inside tests/broken/<name>/ ("" = the folder), what, outcome,
# and the known bug (None when traceana is expected to pass).
CASES = [dict(name=n, target=t, what=w, expect=x, bug=KNOWN_BUGS.get(n))
         for n, (t, _, w, x) in _CASES.items()]


def write_all(out: Path = HERE) -> None:
    for name, (_, write, _, _) in _CASES.items():
        folder = out / name
        if folder.exists():
            shutil.rmtree(folder)
        write(folder)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE)
    write_all(ap.parse_args().out)


if __name__ == "__main__":
    main()
