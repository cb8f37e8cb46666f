"""Coverage-guided fuzzing of traceana's readers with atheris (libFuzzer). See fuzz/README.md.

    python fuzz/fuzz_readers.py TARGET [--seconds N] [--runs N] [libFuzzer flags] [files...]
    python fuzz/fuzz_readers.py all --seconds N     # each target in turn, then a summary
    python fuzz/fuzz_readers.py seeds               # (re)build the seed corpora only

The contract every target checks: reading any bytes either succeeds or raises a
``TraceanaError`` (which the CLI prints as one ``traceana: error:`` line, exit 2). Any other
exception (what the CLI would show as ``internal error``), a hang past ``-timeout`` or a
memory blow-up past ``-rss_limit_mb`` is a crash, written to ``fuzz/.work/TARGET/crashes/``.

The one-input functions (``run_one(target, data)``, ``TARGETS``) import without atheris, so
tests/readers/test_fuzz_harness.py runs them over the seeds and fixed mutations in the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
TARGET_NAMES = (
    "kineto-fast",
    "kineto-native",
    "kineto-exact",
    "kineto-gz",
    "explorer-json",
    "explorer-parquet",
    "archive",
    "pipeline",
)
TIMEOUT_S = 20  # -timeout: one input running longer is a hang (a finding)
RSS_LIMIT_MB = 2048  # -rss_limit_mb: libFuzzer's default, stated
# Modules whose code atheris instruments for coverage (the standard library's archive and
# gzip readers too: their branches decide what reaches traceana).
INSTRUMENT = ["trace_analyzer", "gzip", "tarfile", "zipfile"]

# Instrument traceana only when this file runs as a fuzz target under atheris; imported (by
# the tests) or run as `all`/`seeds`, it needs no atheris.
_FUZZING = __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] in TARGET_NAMES
if _FUZZING:
    try:
        import atheris
    except ImportError:
        sys.exit(
            "fuzz_readers.py: atheris is not installed: pip install atheris==3.0.0 "
            "(or pip install -e '.[fuzz]'); see fuzz/README.md"
        )

    _instrumenting = atheris.instrument_imports(include=INSTRUMENT)
else:
    _instrumenting = contextlib.nullcontext()

with _instrumenting:
    import gzip
    import tarfile
    import zipfile

    import orjson

    from trace_analyzer.errors import TraceanaError
    from trace_analyzer.inputs import archive, limits
    from trace_analyzer.inputs.discover import Source, discover
    from trace_analyzer.loading.profile import load_parts, load_runs
    from trace_analyzer.questions.gaps.analysis import gaps, gaps_runs
    from trace_analyzer.readers import (
        explorer_json,
        explorer_parquet,
        kineto,
        kineto_native,
        read_source,
        sniff,
    )
    from trace_analyzer.readers.common import load_json
    from trace_analyzer.render import RENDERERS, View
    from trace_analyzer.units import parse_size

# The cap on what one compressed input may inflate to (the max_bytes every target passes): a
# gzip or archive bomb stops here, as an InputError. TRACEANA_MAX_BYTES sets it, as for the CLI.
MAX_BYTES = parse_size(os.environ[limits.ENV]) if os.environ.get(limits.ENV) else 64 * 2**20


def _load_seeds():
    spec = importlib.util.spec_from_file_location("traceana_fuzz_seeds", HERE / "seeds.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


seeds = _load_seeds()
MAX_LEN = seeds.MAX_LEN


# --- the scratch folder: one per process, each input written over the last one -------------

_scratch: Path | None = None


def scratch(rel: str, data: bytes) -> Path:
    """Write ``data`` to ``rel`` under this process's scratch folder; return its path."""
    global _scratch
    if _scratch is None:
        _scratch = Path(tempfile.mkdtemp(prefix="traceana-fuzz-"))
        import atexit

        atexit.register(shutil.rmtree, _scratch, True)
    p = _scratch / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


# --- the targets: bytes in, nothing out; only a TraceanaError may escape ------------------


def kineto_fast(data: bytes) -> None:
    """The streaming Kineto path (``kineto.read_fast``), without and with args kept."""
    src = Source(path=scratch("kineto-fast/trace.json", data), kind="json", named=True)
    for keep_args in (False, True):
        kineto.read_fast(src, keep_args, max_bytes=MAX_BYTES)


def kineto_native_target(data: bytes) -> None:
    """The compiled Kineto scanner (``kineto_native.native_scan``) against the exact path: a
    file the scanner takes must be one the exact path reads, to the same events, notes and
    warnings. Anything else (a value read differently, a file the exact path refuses) is an
    AssertionError: a crash. Without the extension built, the polars path is what runs."""
    src = Source(path=scratch("kineto-native/trace.json", data), kind="json", named=True)
    try:
        meta, raw, metadata = kineto_native.native_scan(src.path, False, max_bytes=MAX_BYTES)
    except kineto_native.NotFast:
        kineto.read_fast(src, max_bytes=MAX_BYTES)
        return
    try:
        doc = load_json(src.path, max_bytes=MAX_BYTES)
    except TraceanaError as e:
        raise AssertionError(f"the compiled scanner took a file the exact path refuses: {e}") from e
    assert isinstance(doc, dict), "the compiled scanner took a file that is not an object"
    want = kineto.read(src, doc)
    got = kineto._result(src, meta, [raw], 0, metadata)
    assert got.events.drop("args_json").equals(want.events.drop("args_json")), "events differ"
    assert (got.notes, got.warnings) == (want.notes, want.warnings), "notes differ"


def kineto_exact(data: bytes) -> None:
    """The exact Kineto path: the whole file parsed by orjson (``load_json``), then
    ``kineto.read``."""
    src = Source(path=scratch("kineto-exact/trace.json", data), kind="json", named=True)
    doc = load_json(src.path, max_bytes=MAX_BYTES)
    if sniff(doc) == "kineto-json":
        kineto.read(src, doc)


GZ_MAGIC = b"\x1f\x8b"


def kineto_gz(data: bytes) -> None:
    """A ``.json.gz`` trace through ``read_source`` (streaming path on the gzip stream, then
    the exact one). Input that is already a gzip stream is written as it is (so corrupt and
    truncated streams are tried); anything else is gzipped first."""
    raw = data if data[:2] == GZ_MAGIC else gzip.compress(data, compresslevel=1, mtime=0)
    src = Source(path=scratch("kineto-gz/trace.json.gz", raw), kind="json", named=True)
    read_source(src, max_bytes=MAX_BYTES)


def explorer_json_target(data: bytes) -> None:
    """The Neuron Explorer legacy JSON reader, on what ``load_json`` parses and sniffs as one."""
    src = Source(path=scratch("explorer-json/system_profile.json", data), kind="json", named=True)
    doc = load_json(src.path, max_bytes=MAX_BYTES)
    if sniff(doc) == "explorer-json":
        explorer_json.read(src, doc)


def explorer_parquet_target(data: bytes) -> None:
    """The Explorer Parquet reader, on a folder whose SystemProfileEvents.parquet is the input."""
    table = scratch("explorer-parquet/export/SystemProfileEvents.parquet", data)
    explorer_parquet.read(Source(path=table.parent, kind="explorer-parquet"))


def archive_target(data: bytes) -> None:
    """Bytes as a .zip, .tar.gz or .tar (by their magic): opened, discovered, every run read."""
    suffix = ".zip" if data[:2] == b"PK" else ".tar.gz" if data[:2] == GZ_MAGIC else ".tar"
    path = scratch(f"archive/input{suffix}", data)
    archive._cached.cache_clear()  # keyed by (path, size, mtime, cap): the name is rewritten
    for run in discover(path, max_bytes=MAX_BYTES):
        load_parts(run)  # the members carry the archive's cap


VIEWS = ("device", "lane", "op")


def pipeline(data: bytes) -> None:
    """What ``traceana gaps FOLDER`` does: a trace.json in a folder, loaded, linked, gaps
    found, and the result rendered by every renderer (the JSON one must parse as JSON)."""
    path = scratch("pipeline/run/trace.json", data)
    profiles = load_runs(path.parent, max_bytes=MAX_BYTES)  # the library writes no cache
    result = gaps_runs([gaps(p) for p in profiles], str(path.parent))
    for by in VIEWS:
        for name, renderer in RENDERERS.items():
            if by != VIEWS[0] and name in ("json", "csv"):
                continue  # the view only changes the text reports
            text = renderer(result, options=View(by=by, top=10))
            if name == "json":
                orjson.loads(text)  # strict JSON: no NaN, no Infinity


TARGETS = {
    "kineto-fast": kineto_fast,
    "kineto-native": kineto_native_target,
    "kineto-exact": kineto_exact,
    "kineto-gz": kineto_gz,
    "explorer-json": explorer_json_target,
    "explorer-parquet": explorer_parquet_target,
    "archive": archive_target,
    "pipeline": pipeline,
}
assert tuple(TARGETS) == TARGET_NAMES


def run_one(target: str, data: bytes) -> None:
    """Run one input through ``target``: a TraceanaError is an accepted outcome, anything else
    escapes (a crash)."""
    try:
        TARGETS[target](data)
    except TraceanaError:
        pass


# --- structure-aware mutations -------------------------------------------------------------
#
# Byte mutations mostly break the JSON or the Parquet container, and the readers reject that
# early. These change a parsed document instead: a value of another type or an edge number,
# a key removed or added, a record repeated or removed, nesting deeper than a parser allows;
# a Parquet column cast, emptied, renamed or dropped; an archive member renamed, moved into a
# Neuron capture folder, or mutated itself. Half of the mutations stay libFuzzer's own.

ODD_VALUES = [
    None,
    True,
    False,
    0,
    -1,
    1,
    1.5,
    -0.0,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63),
    -(2**63) - 1,
    1e308,
    -1e308,
    5e-324,
    1e16,
    "",
    "0",
    "-1",
    "1e400",
    "nan",
    "Infinity",
    "x" * 300,
    "\u0000",
    "\ud7ff\ufffd",
    "ProfilerStep#1",
    "ProfilerStep#99999999999999999999",
    "nrt-nc-99999999999999999999",
    "kernel",
    "ac2g",
    "X",
    "s",
    "f",
    "neuron_hw",
    "neuron_rt",
    "nc_exec_running",
    [],
    {},
    [1, "a", None],
    {"a": {"b": [None]}},
    '{"exec_id": 9223372036854775808}',
]
KEYS = [
    "ph",
    "cat",
    "name",
    "pid",
    "tid",
    "ts",
    "dur",
    "id",
    "args",
    "External id",
    "correlation",
    "device",
    "stream",
    "stream_id",
    "nrt_sequence_id",
    "exec_id",
    "baseTimeNanoseconds",
    "distributedInfo",
    "deviceProperties",
    "rank",
    "traceEvents",
    "trace_event",
    "trace_events",
    "timestamp",
    "duration",
    "process_id",
    "thread_id",
    "instance_id",
    "nc_idx",
    "lnc_idx",
    "pcore_idx",
    "trace_event_source",
    "flow_id",
    "framework_stream_id",
    "group",
    "type",
    "nodes",
    "schema",
]
DEEP = "@@deep:{}@@"  # a placeholder replaced by nesting too deep for json.dumps to write


def _slots(doc, limit: int = 5000) -> list:
    """Return (container, key) for up to ``limit`` values of a parsed document, outer first."""
    out, todo = [], [doc]
    while todo and len(out) < limit:
        c = todo.pop(0)
        keys = list(c) if isinstance(c, dict) else range(len(c))
        for k in keys:
            out.append((c, k))
            if isinstance(c[k], (dict, list)):
                todo.append(c[k])
    return out


def _odd(rng) -> object:
    v = rng.choice(ODD_VALUES)
    return json.loads(json.dumps(v)) if isinstance(v, (dict, list)) else v


def _swap_type(v, rng) -> object:
    if isinstance(v, bool) or v is None:
        return rng.choice([0, "true", [], None if v is not None else 1])
    if isinstance(v, (int, float)):
        return rng.choice(
            [
                str(v),
                [v],
                {"v": v},
                v * rng.choice([-1, 1000, 2**40]) + rng.choice([0, 1, -1]),
                float(v) if isinstance(v, int) else int(v) if abs(v) < 1e18 else v,
            ]
        )
    if isinstance(v, str):
        return rng.choice([len(v), [v], {v: v}, v * 2, v[: len(v) // 2], v.upper()])
    if isinstance(v, list):
        return rng.choice([{str(i): x for i, x in enumerate(v)}, v[:1], v + v, len(v)])
    return rng.choice([list(v.values()), list(v), str(v)[:50]])


def _dump(doc, rng) -> bytes:
    def dumps(v) -> str:
        return json.dumps(v, ensure_ascii=rng.random() < 0.3, separators=(",", ":"))

    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list) and rng.random() < 0.7:
        # the layout libkineto writes ("},\n  {" between records): the streaming path's own
        parts = [
            '"traceEvents": [\n  ' + ",\n  ".join(dumps(e) for e in doc["traceEvents"]) + "\n]"
            if k == "traceEvents"
            else f"{dumps(k)}: {dumps(v)}"
            for k, v in doc.items()
        ]
        text = "{\n  " + ",\n  ".join(parts) + "\n}"
    else:
        text = dumps(doc) if rng.random() < 0.7 else json.dumps(doc, indent=rng.choice([1, 2]))
    out = text.encode("utf-8", "surrogatepass")
    for m in set(re.findall(rb'"@@deep:(\d+)@@"', out)):
        n = int(m)
        out = out.replace(b'"@@deep:%d@@"' % n, b"[" * n + b"1" + b"]" * n)
    return out


def mutate_json(data: bytes, rng) -> bytes | None:
    """Return a structural mutation of a JSON document, or None when ``data`` is not JSON."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, (dict, list)):
        return None
    for _ in range(rng.randint(1, 3)):
        slots = _slots(doc)
        if not slots:
            break
        c, k = rng.choice(slots[:50] if rng.random() < 0.2 else slots)
        op = rng.randrange(7)
        if op == 0:
            c[k] = _odd(rng)
        elif op == 1:
            c[k] = _swap_type(c[k], rng)
        elif op == 2:
            del c[k]
        elif op == 3 and isinstance(c, list):
            c.insert(rng.randint(0, len(c)), json.loads(json.dumps(c[k])))
        elif op == 3 or op == 4:
            target = c if isinstance(c, dict) else c[k] if isinstance(c[k], dict) else None
            if target is not None:
                target[rng.choice(KEYS)] = _odd(rng)
        elif op == 5:
            c[k] = DEEP.format(rng.choice([64, 255, 256, 600, 1023, 1025, 3000]))
        else:  # a neighbour's value: the right type in the wrong place
            c2, k2 = rng.choice(slots)
            c[k] = json.loads(json.dumps(c2[k2]))
    try:
        return _dump(doc, rng)
    except (ValueError, RecursionError, TypeError):
        return None


PARQUET_NAMES = [
    "id",
    "name",
    "start_ts",
    "end_ts",
    "duration_ns",
    "trace_event_source",
    "instance_id",
    "process_id",
    "thread_id",
    "nc_idx",
    "pcore_idx",
    "flow_id",
    "framework_stream_id",
    "extra_attributes_json",
    "worker_gid",
]
EXTRA_JSON = [
    '{"exec_id": 9223372036854775808}',
    '{"nrt_sequence_id": "7"}',
    "{",
    "",
    '{"\\u0065xec_id": 3}',
    '{"exec_id": [1]}',
    '{"exec_id": 1e400}',
    "null",
    "[]",
]


def mutate_parquet(data: bytes, rng) -> bytes | None:
    """Return the table changed column-wise and written again, or None when it does not read."""
    import polars as pl

    try:
        df = pl.read_parquet(io.BytesIO(data))
    except BaseException:  # noqa: BLE001 - a panic included: then byte mutations only
        return None
    for _ in range(rng.randint(1, 3)):
        cols = df.columns
        op = rng.randrange(8)
        try:
            if op == 0 and cols:
                df = df.drop(rng.choice(cols))
            elif op == 1 and cols:
                a = rng.choice(cols)
                new = rng.choice(PARQUET_NAMES)
                df = (
                    df.rename({a: new})
                    if new not in cols
                    else df.rename({a: "_t", new: a}).rename({"_t": new})
                )
            elif op == 2 and cols:
                c = rng.choice(cols)
                dtype = rng.choice(
                    [
                        pl.String,
                        pl.Int32,
                        pl.UInt64,
                        pl.Float64,
                        pl.Categorical,
                        pl.Boolean,
                        pl.Null,
                        pl.List(pl.String),
                        pl.List(pl.Int64),
                        pl.Int8,
                        pl.Datetime("ns"),
                        pl.Binary,
                    ]
                )
                df = df.with_columns(pl.col(c).cast(dtype, strict=False))
            elif op == 3 and cols and df.height:
                c = rng.choice(cols)
                i = rng.randrange(df.height)
                dt = df.schema[c]
                if dt.is_integer():
                    v = (
                        rng.choice([None, 0, -1, 2**63 - 1, -(2**63), 1])
                        if dt.is_signed_integer()
                        else None
                    )
                elif dt == pl.String:
                    v = rng.choice(
                        [
                            None,
                            "",
                            "x" * 500,
                            "neuron_hw",
                            "neuron_rt",
                            "ProfilerStep#1",
                            "nc_exec_running",
                            "-1",
                            "9999999999999999999999",
                            *EXTRA_JSON,
                        ]
                    )
                else:
                    v = None
                df = df.with_columns(
                    pl.when(pl.int_range(pl.len()) == i)
                    .then(pl.lit(v, dtype=dt))
                    .otherwise(pl.col(c))
                    .alias(c)
                )
            elif op == 4:
                df = rng.choice(
                    [
                        df.head(0),
                        df.head(1),
                        pl.concat([df, df]),
                        df.reverse(),
                        df.sample(fraction=1.0, shuffle=True, seed=rng.randrange(1000)),
                    ]
                )
            elif op == 5:
                name = rng.choice(PARQUET_NAMES)
                df = df.with_columns(pl.lit(rng.choice([None, 1, "1", "x", 2**63 - 1])).alias(name))
            elif op == 6 and "extra_attributes_json" in cols:
                df = df.with_columns(extra_attributes_json=pl.lit(rng.choice(EXTRA_JSON)))
            elif op == 7 and cols:
                c = rng.choice(cols)  # a column filled from another one
                df = df.with_columns(df[rng.choice(cols)].alias(c))
        except (pl.exceptions.PolarsError, ValueError, TypeError, OverflowError):
            continue
    buf = io.BytesIO()
    try:
        df.write_parquet(
            buf,
            compression=rng.choice(["uncompressed", "zstd", "snappy"]),
            statistics=rng.random() < 0.5,
            row_group_size=rng.choice([None, 1, 7]),
        )
    except BaseException:  # noqa: BLE001
        return None
    return buf.getvalue()


def _members(data: bytes) -> tuple[str, dict[str, bytes]] | None:
    try:
        if data[:2] == b"PK":
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                return "zip", {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as t:
            out = {}
            for m in t:
                if m.isreg():
                    out[m.name] = t.extractfile(m).read()
            return ("tar.gz" if data[:2] == GZ_MAGIC else "tar"), out
    except Exception:  # noqa: BLE001 - not an archive this mutator can rebuild
        return None


RENAMES = [
    "../{}",
    "./{}",
    "/{}",
    "{}/",
    "a\\{}",
    "i-0_pid_42/{}",
    "i-0_pid_42/1793620800000000000/{}",
    "i-0_pid_42/20261102_120000_000/{}",
    "rank7/{}",
    ".traceana-cache/{}",
    "x/../{}",
    "{}.gz",
]
ADDED = {
    "capture.json": [b'{"backend": "neuron"}', b'{"backend": ["x"]}', b"[]", b"\xff"],
    "ntrace.pb": [b""],
    "neff_1.neff": [b"x"],
    "1_instid_0_vnc_0.ntff": [b""],
    "profile_nc_0_session_0.ntff": [b""],
    "truth.json": [b"{}"],
    "SystemProfileEvents_1.parquet": [b"PAR1"],
    "Metadata.parquet": [b"PAR1"],
    "device_profile_model_1.json": [b"{}"],
    "execution_trace.json": [b'{"nodes": [], "schema": 1}'],
}


def mutate_archive(data: bytes, rng) -> bytes | None:
    """Return the archive's members changed (renamed, moved, added, mutated) in a container."""
    got = _members(data)
    if got is None or not got[1]:
        return None
    kind, members = got
    for _ in range(rng.randint(1, 2)):
        names = sorted(members)
        if not names:
            break
        name = rng.choice(names)
        op = rng.randrange(5)
        if op == 0:
            new = rng.choice(RENAMES).format(name)
            members[new] = members.pop(name)
        elif op == 1:
            folder = name.rpartition("/")[0]
            extra = rng.choice(sorted(ADDED))
            members[f"{folder}/{extra}".lstrip("/")] = rng.choice(ADDED[extra])
        elif op == 2:
            del members[name]
        elif op == 3:
            raw = members[name]
            if raw[:2] == GZ_MAGIC:
                try:
                    raw = gzip.decompress(raw)
                except (OSError, EOFError):
                    continue
            if name.endswith(".parquet"):
                out = mutate_parquet(raw, rng)
            else:
                out = mutate_json(raw, rng)
            if out is not None:
                members[name] = gzip.compress(out, mtime=0) if name.endswith(".gz") else out
        else:
            kind = rng.choice(["zip", "tar", "tar.gz"])
    buf = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for n, d in members.items():
                z.writestr(zipfile.ZipInfo(n, (1980, 1, 1, 0, 0, 0)), d)
    else:
        with tarfile.open(
            fileobj=buf, mode="w:gz" if kind == "tar.gz" else "w", format=tarfile.GNU_FORMAT
        ) as t:
            for n, d in members.items():
                info = tarfile.TarInfo(n)
                info.size = len(d)
                t.addfile(info, io.BytesIO(d))
    return buf.getvalue()


def mutate_gz(data: bytes, rng) -> bytes | None:
    """A gzip stream's content mutated as JSON, gzipped again; plain JSON mutated as it is."""
    if data[:2] != GZ_MAGIC:
        return mutate_json(data, rng)
    try:
        inner = gzip.decompress(data)
    except (OSError, EOFError):
        return None
    out = mutate_json(inner, rng)
    return None if out is None else gzip.compress(out, compresslevel=1, mtime=0)


STRUCTURE = {
    "kineto-fast": mutate_json,
    "kineto-native": mutate_json,
    "kineto-exact": mutate_json,
    "kineto-gz": mutate_gz,
    "explorer-json": mutate_json,
    "explorer-parquet": mutate_parquet,
    "archive": mutate_archive,
    "pipeline": mutate_json,
}


def mutate(target: str, data: bytes, rng) -> bytes | None:
    """Return a structure-aware mutation of ``data`` for ``target``, or None when none applies."""
    try:
        return STRUCTURE[target](data, rng)
    except Exception:  # noqa: BLE001 - the mutator is best effort: libFuzzer's own then
        return None


# --- running atheris ----------------------------------------------------------------------


def folders(target: str) -> dict[str, Path]:
    base = WORK / target
    return {
        "base": base,
        "corpus": base / "corpus",
        "seeds": base / "seeds",
        "crashes": base / "crashes",
    }


DICT = HERE / "json.dict"
DICT_TARGETS = {
    "kineto-fast",
    "kineto-native",
    "kineto-exact",
    "kineto-gz",
    "explorer-json",
    "pipeline",
}


STRUCTURE_SHARE = 0.5  # of the mutations: structure-aware; the rest are libFuzzer's own


def fuzz(
    target: str, seconds: int | None, runs: int | None, extra: list[str], structure: bool = True
) -> None:
    """Fuzz one target in this process (atheris.Fuzz does not return)."""
    f = folders(target)
    for key in ("corpus", "crashes"):
        f[key].mkdir(parents=True, exist_ok=True)
    files = [a for a in extra if not a.startswith("-")]
    flags = [a for a in extra if a.startswith("-")]
    # argv[0] is the command libFuzzer reruns itself with (-minimize_crash, -fork): this
    # interpreter, this file and the target, so the file need not be executable
    argv = [
        f"{sys.executable} {Path(__file__).resolve()} {target}",
        f"-max_len={MAX_LEN}",
        f"-timeout={TIMEOUT_S}",
        f"-rss_limit_mb={RSS_LIMIT_MB}",
        f"-artifact_prefix={f['crashes']}/",
        "-print_final_stats=1",
    ]
    if target in DICT_TARGETS and DICT.is_file():
        argv.append(f"-dict={DICT}")
    if seconds is not None:
        argv.append(f"-max_total_time={seconds}")
    if runs is not None:
        argv.append(f"-runs={runs}")
    argv += flags
    if files:  # rerun given inputs (a crash file), nothing else
        argv += files
    else:
        n = seeds.write(target, f["seeds"])
        print(f"fuzz: {target}: {n} seeds in {f['seeds']}", file=sys.stderr, flush=True)
        argv += [str(f["corpus"]), str(f["seeds"])]
    fn = TARGETS[target]

    def test_one_input(data: bytes) -> None:
        try:
            fn(data)
        except TraceanaError:
            pass

    def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if rng.random() < STRUCTURE_SHARE:
            out = mutate(target, data, rng)
            if out is not None and len(out) <= max_size:
                return out
        return atheris.Mutate(data, max_size)

    if structure:
        atheris.Setup(argv, test_one_input, custom_mutator=custom_mutator)
    else:
        atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


# --- `all`: each target in its own process, then a table ---------------------------------

EXECS = re.compile(r"stat::number_of_executed_units:\s*(\d+)")
PROGRESS = re.compile(r"^#(\d+)\s", re.M)
CORP = re.compile(r"\bcorp: (\d+)/")
FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _signature(out: str) -> str:
    """Return a crash's signature: the exception type and the innermost traceana frame."""
    if "ERROR: libFuzzer: timeout" in out:
        return "timeout"
    if "out-of-memory" in out:
        return "out-of-memory"
    if "=== Uncaught Python exception: ===" not in out:  # the process died: a native abort
        alloc = re.search(r"memory allocation of (\d+) bytes failed", out)
        return (
            f"abort (a native allocation of ~2^{int(alloc[1]).bit_length() - 1} bytes failed)"
            if alloc
            else "deadly signal"
        )
    tb = out.split("=== Uncaught Python exception: ===", 1)[-1]
    frames = [m for m in FRAME.finditer(tb)]
    ours = [m for m in frames if "trace_analyzer" in m[1]] or frames
    lines = tb.strip().splitlines()
    exc = lines[0].split(":", 1)[0].strip() if lines else ""  # atheris: 'KeyError: ...' first
    where = f"{Path(ours[-1][1]).name}:{ours[-1][2]} in {ours[-1][3]}" if ours else "?"
    return f"{exc or 'crash'} at {where}"


def run_all(targets: list[str], seconds: int, extra: list[str]) -> list[dict]:
    """Fuzz each target for ``seconds``, restarting after each crash until the time is spent."""
    rows = []
    for target in targets:
        f = folders(target)
        f["crashes"].mkdir(parents=True, exist_ok=True)
        log = f["base"] / "fuzz.log"
        row = {
            "target": target,
            "seconds": 0.0,
            "execs": 0,
            "crashes": 0,
            "signatures": [],
            "corpus": 0,
            "artifacts": [],
        }
        start, quick = time.monotonic(), 0
        with log.open("w") as fh:
            # The first run gets the whole budget (at least 1 s); after a crash the target is
            # restarted while 5 s or more are left.
            started = False
            while True:
                left = seconds - (time.monotonic() - start)
                if started and left < 5:
                    break
                started = True
                cmd = [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    target,
                    "--seconds",
                    str(max(1, int(left))),
                    *extra,
                ]
                print(f"fuzz: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
                before = set(f["crashes"].iterdir())
                began = time.monotonic()
                try:
                    proc = subprocess.run(
                        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=left + 120
                    )
                    out, rc = proc.stdout.decode(errors="replace"), proc.returncode
                except subprocess.TimeoutExpired as e:
                    out, rc = (e.stdout or b"").decode(errors="replace"), "killed"
                fh.write(out + f"\nfuzz: exit status {rc}\n")
                fh.flush()
                m = EXECS.findall(out) or PROGRESS.findall(out)
                row["execs"] += int(m[-1]) if m else 0
                corp = CORP.findall(out)
                if corp:
                    row["corpus"] = int(corp[-1])
                arts = sorted(str(p) for p in set(f["crashes"].iterdir()) - before)
                if rc == 0 and not arts:
                    break
                row["crashes"] += 1
                row["artifacts"] += arts
                sig = _signature(out)
                if sig not in row["signatures"]:
                    row["signatures"].append(sig)
                print(
                    f"fuzz: {target}: crash (exit status {rc}): {sig} "
                    f"({', '.join(arts) or 'no artifact'})",
                    file=sys.stderr,
                    flush=True,
                )
                quick = quick + 1 if time.monotonic() - began < 10 else 0
                if quick >= 3:
                    break  # dies at once each time (a harness problem): do not loop on it
        row["seconds"] = round(time.monotonic() - start, 1)
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    head = ("target", "seconds", "inputs tried", "crashes", "distinct", "corpus")
    lines = [head] + [
        (
            r["target"],
            f"{r['seconds']:.0f}",
            f"{r['execs']:,}",
            str(r["crashes"]),
            str(len(r["signatures"])),
            str(r["corpus"]),
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    ]
    out.insert(1, "  ".join("-" * w for w in widths))
    for r in rows:
        for s in r["signatures"]:
            out.append(f"{r['target']}: {s}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Fuzz traceana's readers with atheris. Flags this parser does not know "
        "(-timeout=5, -jobs=2, ...) and input files go to libFuzzer."
    )
    parser.add_argument("target", choices=[*TARGET_NAMES, "all", "seeds"])
    parser.add_argument("--seconds", type=int, help="time budget (each target's, with all)")
    parser.add_argument("--runs", type=int, help="stop after this many inputs")
    parser.add_argument("--targets", help="with all: a comma-separated subset")
    parser.add_argument(
        "--no-structure",
        action="store_true",
        help="libFuzzer's byte mutations only (no structure-aware mutator)",
    )
    args, extra = parser.parse_known_args(argv)
    if args.target == "seeds":
        for t in TARGET_NAMES:
            n = seeds.write(t, folders(t)["seeds"])
            print(f"{t}: {n} seeds in {folders(t)['seeds']}")
        return
    if args.target == "all":
        targets = args.targets.split(",") if args.targets else list(TARGET_NAMES)
        unknown = set(targets) - set(TARGET_NAMES)
        if unknown:
            parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
        passed = (
            extra
            + ([f"--runs={args.runs}"] if args.runs else [])
            + (["--no-structure"] if args.no_structure else [])
        )
        rows = run_all(targets, args.seconds or 180, passed)
        WORK.mkdir(exist_ok=True)
        (WORK / "summary.json").write_text(json.dumps(rows, indent=1))
        print(table(rows))
        sys.exit(1 if any(r["crashes"] for r in rows) else 0)
    fuzz(args.target, args.seconds, args.runs, extra, structure=not args.no_structure)


if __name__ == "__main__":
    main()
