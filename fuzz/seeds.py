"""The seed corpus of each fuzz target, built from what the repository already holds.

Sources (each skipped silently when absent):

- ``fixtures/*/``: the four synthetic runs (trace.json, Explorer legacy JSON and Parquet);
- ``tests/broken/*/``: the broken-input corpus (tests/broken/make_broken.py);
- ``../shared/corpus/hta/tests/data``: real Kineto traces (HTA's test data), files under
  ``CORPUS_FILE_MAX`` on disk, at most ``CORPUS_COUNT`` of them, in path order;
- a few inputs made here: re-encodings (uncompressed Parquet, so that byte mutations reach
  values rather than break a compressed page), the older legacy-JSON forms, and archives of
  the fixtures and of the hostile shapes archive.py must refuse or skip.

Every seed is at most ``MAX_LEN`` bytes, the ``-max_len`` the fuzzer runs with: larger files
are left out (libFuzzer would only see their first ``MAX_LEN`` bytes).
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
BROKEN = REPO / "tests" / "broken"
CORPUS_DATA = REPO.parent / "shared" / "corpus" / "hta" / "tests" / "data"

MAX_LEN = 256 * 1024  # bytes: libFuzzer's -max_len, and the cap on every seed
CORPUS_FILE_MAX = 2 * 2**20  # corpus files larger than this on disk are not looked at
CORPUS_COUNT = 16  # corpus files taken at most
GZ_INFLATED_MAX = 1 * 2**20  # a raw .gz seed inflating past this makes every run too slow
SKIP_DIRS = {".traceana-cache"}  # an analysis cache left in a fixture is no input

TARGETS = ("kineto-fast", "kineto-native", "kineto-exact", "kineto-gz", "explorer-json",
           "explorer-parquet", "archive", "pipeline")


def corpus_available(corpus: Path | None = CORPUS_DATA) -> bool:
    return corpus is not None and corpus.is_dir()


def _files(root: Path, pattern: str) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob(pattern)
                  if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(root).parts))


def _name(origin: str, path: Path, root: Path) -> str:
    rel = str(path.relative_to(root)).replace("/", "__")
    return f"{origin}__{rel}"


def _corpus_files(corpus: Path | None) -> list[Path]:
    if not corpus_available(corpus):
        return []
    files = [p for p in sorted(corpus.rglob("*.json*")) if p.is_file()
             and p.stat().st_size <= CORPUS_FILE_MAX]
    return files[:CORPUS_COUNT]


def _inflate(path: Path, limit: int) -> bytes | None:
    """Return the file's bytes (inflated when .gz), or None when they exceed ``limit``."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                data = f.read(limit + 1)
        except (OSError, EOFError):
            return None
    return data if len(data) <= limit else None


# --- per kind of input --------------------------------------------------------------------


def kineto_json(corpus: Path | None = CORPUS_DATA) -> dict[str, bytes]:
    """Plain (uncompressed) Kineto-like JSON: fixtures, broken cases, corpus traces."""
    out: dict[str, bytes] = {}
    for p in _files(FIXTURES, "trace.json"):
        out[_name("fixture", p, FIXTURES)] = p.read_bytes()
    for p in _files(BROKEN, "trace.json"):
        out[_name("broken", p, BROKEN)] = p.read_bytes()
    for p in _corpus_files(corpus):
        data = _inflate(p, MAX_LEN)
        if data is not None:
            out[_name("corpus", p, corpus).removesuffix(".gz")] = data
    return out


def kineto_gz(corpus: Path | None = CORPUS_DATA) -> dict[str, bytes]:
    """Raw .json.gz files (the harness reads them as they are) and plain JSON (it gzips them)."""
    out: dict[str, bytes] = {}
    for p in _files(BROKEN, "*.json.gz"):
        out[_name("broken", p, BROKEN)] = p.read_bytes()
    for p in _corpus_files(corpus):
        if p.name.endswith(".gz") and p.stat().st_size <= MAX_LEN \
                and _inflate(p, GZ_INFLATED_MAX) is not None:
            out[_name("corpus", p, corpus)] = p.read_bytes()
    for p in _files(FIXTURES, "trace.json"):
        out[_name("fixture", p, FIXTURES)] = p.read_bytes()
    return out


OLD_RECORDS = [  # the Profiler 2.0 record shapes (tests/readers/test_explorer.py)
    {"name": "PjitFunction(matmul)", "timestamp": 1_793_620_800_000_000_000, "duration": 100_000,
     "group": "framework", "id": 1, "instance_id": "i-0", "process_id": "4242",
     "thread_id": 7, "type": 99999, "flow_id": [1, "2"]},
    {"name": "nrt_tensor_write", "timestamp": "1793620800000001000", "duration": 27_094,
     "group": "nrt-nc-000", "id": 1, "instance_id": "i-0", "lnc_idx": "0", "process_id": "4242",
     "size": "4", "thread_id": 4242, "type": 11, "nrt_sequence_id": 3, "exec_id": "9"},
    {"name": "nc_exec_running", "timestamp": 1_793_620_800_000_030_000, "duration": 44_000,
     "instance_id": "i-0", "process_id": "4242", "nc_idx": "0", "pcore_idx": "1"},
]


def explorer_json() -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for p in _files(FIXTURES, "*.json"):
        if p.parent.name == "json" and p.parent.parent.name == "explorer":
            out[_name("fixture", p, FIXTURES)] = p.read_bytes()
    for p in _files(BROKEN, "system_profile.json"):
        out[_name("broken", p, BROKEN)] = p.read_bytes()
    out["made__trace_events_list.json"] = json.dumps({"trace_events": OLD_RECORDS}).encode()
    out["made__trace_events_groups.json"] = json.dumps(
        {"trace_events": {"framework": OLD_RECORDS[:1], "runtime": OLD_RECORDS[1:]}}).encode()
    out["made__trace_event.json"] = json.dumps({"trace_event": OLD_RECORDS}).encode()
    return out


def explorer_parquet() -> dict[str, bytes]:
    import polars as pl

    out: dict[str, bytes] = {}
    tables = [*_files(FIXTURES, "SystemProfileEvents*.parquet"),
              *_files(BROKEN, "SystemProfileEvents*.parquet")]
    for p in tables:
        root, origin = (FIXTURES, "fixture") if p.is_relative_to(FIXTURES) else (BROKEN, "broken")
        out[_name(origin, p, root)] = p.read_bytes()
    for p in _files(FIXTURES, "SystemProfileEvents*.parquet"):
        # uncompressed, few rows, no statistics: mutations land in the values
        buf = io.BytesIO()
        pl.read_parquet(p).head(24).write_parquet(buf, compression="uncompressed", statistics=False)
        out[_name("made-uncompressed", p, FIXTURES)] = buf.getvalue()
    return {k: v for k, v in out.items() if len(v) <= MAX_LEN}


# --- archives -----------------------------------------------------------------------------


def _tar(members: dict[str, bytes], gz: bool, extra=()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info)
    return buf.getvalue()


def _zip(members: dict[str, bytes], dirs=()) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for d in dirs:
            z.writestr(zipfile.ZipInfo(d.rstrip("/") + "/", (1980, 1, 1, 0, 0, 0)), b"")
        for name, data in members.items():
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()


def _run_members(run: Path) -> dict[str, bytes]:
    return {f"{run.name}/{p.relative_to(run)}": p.read_bytes() for p in _files(run, "*")}


def archives(corpus: Path | None = CORPUS_DATA) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    runs = sorted(p for p in FIXTURES.iterdir() if p.is_dir()) if FIXTURES.is_dir() else []
    for i, run in enumerate(runs):
        members = _run_members(run)
        # each fixture once, in a different container each, to keep the corpus small
        kind = ("tar", "tar.gz", "zip")[i % 3]
        data = _zip(members) if kind == "zip" else _tar(members, gz=kind == "tar.gz")
        out[f"fixture__{run.name}.{kind}"] = data
    if runs:
        small = runs[0]
        trace = next(iter(_files(small, "trace.json")), None)
        if trace is not None:
            t = trace.read_bytes()
            two = {"rank0/trace.json": t, "rank1/trace.json": t}
            out["made__two_runs.tar"] = _tar(two, gz=False)
            out["made__two_runs.zip"] = _zip(two, dirs=["rank0", "rank1"])
            link = tarfile.TarInfo("run/link.json")
            link.type, link.linkname = tarfile.SYMTYPE, "../../etc/passwd"
            out["made__symlink_and_dotdot.tar"] = _tar(
                {"run/trace.json": t, "../escape/trace.json": t, "./run/./x.json.gz": gzip.compress(t, mtime=0)},
                gz=False, extra=[link])
            out["made__gz_member.tar.gz"] = _tar({"r/rank-3.pt.trace.json.gz": gzip.compress(t, mtime=0)}, gz=True)
    parquet = explorer_parquet()
    if parquet:
        first = next(v for k, v in parquet.items() if k.startswith("made-uncompressed"))
        out["made__parquet_export.zip"] = _zip({"export/SystemProfileEvents.parquet": first})
    for p in _corpus_files(corpus)[:3]:
        if p.stat().st_size <= MAX_LEN // 2:
            out[_name("corpus", p, corpus) + ".tar"] = _tar({f"run/{p.name}": p.read_bytes()}, gz=False)
    out["made__empty.tar"] = _tar({}, gz=False)
    out["made__empty.zip"] = _zip({})
    return {k: v for k, v in out.items() if len(v) <= MAX_LEN}


# --- per target ---------------------------------------------------------------------------


def seeds(target: str, corpus: Path | None = CORPUS_DATA) -> dict[str, bytes]:
    """Return the seed inputs of ``target``, by name. ``corpus=None`` leaves the corpus out."""
    if target in ("kineto-fast", "kineto-native", "kineto-exact", "pipeline"):
        found = kineto_json(corpus)
    elif target == "kineto-gz":
        found = kineto_gz(corpus)
    elif target == "explorer-json":
        found = explorer_json()
    elif target == "explorer-parquet":
        found = explorer_parquet()
    elif target == "archive":
        found = archives(corpus)
    else:
        raise ValueError(f"unknown target {target!r} (one of {', '.join(TARGETS)})")
    return {k: v for k, v in found.items() if len(v) <= MAX_LEN}


def write(target: str, folder: Path, corpus: Path | None = CORPUS_DATA) -> int:
    """Write ``target``'s seeds into ``folder`` (emptied first); return how many."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if old.is_file():
            old.unlink()
    found = seeds(target, corpus)
    for name, data in found.items():
        (folder / name).write_bytes(data)
    return len(found)
