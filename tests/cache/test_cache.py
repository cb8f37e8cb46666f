"""The analysis cache (trace_analyzer/cache.py, docs/cache.md), as a user relies on it.

Every test works on a copy of a profile in tmp_path (the naive RMSNorm fixture, a tiny Kineto
GPU trace written here, or an HTA corpus CUDA trace) and sets the cache environment itself, so
nothing is written into the repository. Whether a run was answered from the cache is told by
counting the calls of ``profile.read_source``: a miss reads the run's sources, a hit reads
none. Expected values come from the inputs (the trace documents written or modified here) or
from the same command run with ``--no-cache``.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import zlib
from pathlib import Path

import polars as pl
import pytest
from conftest import X, kineto, run_cli, write_trace

import trace_analyzer as ta
from trace_analyzer import cache
from trace_analyzer.cache.where import default_folder
from trace_analyzer.loading import profile

ROOT = Path(__file__).resolve().parents[2]
NAIVE = ROOT / "fixtures" / "rmsnorm_naive"
CACHE = ".traceana-cache"
COMMANDS = ("info", "gaps", "ops", "chain")

BASE = 1_793_620_800_000_000_000  # baseTimeNanoseconds; ts below are µs after it
HOST, GPU, STREAM = 4242, 0, 7


# --- inputs -------------------------------------------------------------------------------------

def gpu_events(pid: int = HOST, gpu: int = GPU, k_mm_dur: int = 50) -> list[dict]:
    """aten::mm launches k_mm (200 µs, ``k_mm_dur`` long); k_add (300..330 µs) has no launch."""
    return [
        X("cpu_op", "aten::mm", 100, 20, pid=pid, tid=pid,
          **{"External id": 1, "Input Dims": [[4, 4], [4, 4]]}),
        X("cuda_runtime", "cudaLaunchKernel", 105, 5, pid=pid, tid=pid, correlation=11,
          **{"External id": 1}),
        X("kernel", "k_mm", 200, k_mm_dur, pid=gpu, tid=STREAM, device=gpu, stream=STREAM,
          correlation=11),
        X("kernel", "k_add", 300, 30, pid=gpu, tid=STREAM, device=gpu, stream=STREAM),
    ]


def write_kineto(path: Path, events: list[dict]) -> Path:
    return write_trace(path, kineto(events, baseTimeNanoseconds=BASE))


def kernel_busy_ns(*traces: Path) -> int:
    """Return the summed kernel time of trace files (their kernels do not overlap), in ns."""
    evs = [e for t in traces for e in json.loads(t.read_text())["traceEvents"]]
    return sum(e["dur"] for e in evs if e.get("cat") == "kernel") * 1000


def n_records(*traces: Path) -> int:
    """Return the number of complete events in trace files: the rows of the events table."""
    return sum(e.get("ph") == "X" for t in traces for e in json.loads(t.read_text())["traceEvents"])


def copy_tree(src: Path, dst: Path) -> Path:
    """Copy a profile folder, writable (the shared corpus is read-only)."""
    # without the cache a `traceana gaps fixtures/...` (make demo) may have left in the source
    shutil.copytree(src, dst, copy_function=shutil.copyfile,
                    ignore=shutil.ignore_patterns(".traceana-cache"))
    for folder, _, _ in os.walk(dst):
        os.chmod(folder, 0o755)
    return dst


@pytest.fixture(autouse=True)
def _environment(monkeypatch, tmp_path):
    """No cache variable set (conftest sets TRACEANA_CACHE_DIR for the session), and a working
    directory of its own, which must stay empty."""
    monkeypatch.delenv("TRACEANA_CACHE_DIR", raising=False)
    monkeypatch.delenv("TRACEANA_NO_CACHE", raising=False)
    # the cache inside the profile folder, as asked (the default, the user's cache directory,
    # is tests/cache/test_cache_where.py's): the entries' mechanics are the same in both
    monkeypatch.setenv("TRACEANA_CACHE_IN_PROFILE", "1")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield
    assert list(cwd.iterdir()) == [], "nothing is written to the working directory"


@pytest.fixture
def gpu(tmp_path) -> Path:
    """A Kineto-only run folder: one trace.json with one host process and one GPU stream."""
    folder = tmp_path / "kineto"
    write_kineto(folder / "trace.json", gpu_events())
    return folder


@pytest.fixture
def naive(tmp_path) -> Path:
    return copy_tree(NAIVE, tmp_path / "naive")




def cli(*args) -> str:
    """Run ``traceana ARGS``; return stdout, after checking exit 0 and a quiet stderr."""
    code, out, err = run_cli(*args)
    assert code == 0, f"exit {code}: {err}"
    assert err == ""
    return out


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Return every file and folder under ``folder``: relative path -> (size, mtime_ns)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.stat()
            out[str(p.relative_to(folder))] = (st.st_size if p.is_file() else 0, st.st_mtime_ns)
    return out


def entries(folder: Path) -> list[Path]:
    """The runs' entries (their meta files); analyses' results sit beside them as <entry>-<name>-*."""
    return sorted(p for p in folder.glob("*.json") if "-" not in p.stem)


def gaps_summary(path: Path, *extra) -> dict:
    (run,) = json.loads(cli("gaps", path, "--format", "json", *extra))["runs"]
    return run["summary"]


def info_run(path: Path, *extra) -> dict:
    (run,) = json.loads(cli("info", path, "--format", "json", *extra))["runs"]
    return run


# --- a second run is answered from the cache, with the same output ------------------------------

@pytest.fixture(params=["naive", "kineto", "corpus_cuda"])
def any_run(request, tmp_path) -> Path:
    if request.param == "naive":
        return request.getfixturevalue("naive")
    if request.param == "kineto":
        return request.getfixturevalue("gpu")
    corpus = request.getfixturevalue("corpus")
    return copy_tree(corpus / "critical_path" / "simple_add", tmp_path / "simple_add")


def test_second_run_is_a_hit_with_byte_identical_output(any_run, reads):
    reference = {c: cli(c, any_run, "--format", "json", "--no-cache") for c in COMMANDS}
    assert not (any_run / CACHE).exists()
    n_sources = reads.n // len(COMMANDS)
    assert n_sources > 0

    reads.n = 0
    first = {c: cli(c, any_run, "--format", "json") for c in COMMANDS}
    assert reads.n == n_sources  # the first command read the run; the other three did not
    assert len(entries(any_run / CACHE)) == 1

    reads.forbid = True
    second = {c: cli(c, any_run, "--format", "json") for c in COMMANDS}
    for c in COMMANDS:
        assert first[c] == reference[c], c
        assert second[c] == reference[c], c


def test_diff_reads_both_runs_from_the_cache(tmp_path, reads):
    base = tmp_path / "base"
    head = tmp_path / "head"
    write_kineto(base / "trace.json", gpu_events())
    write_kineto(head / "trace.json", gpu_events(k_mm_dur=70))
    reference = cli("diff", base, head, "--format", "json", "--no-cache")
    assert cli("diff", base, head, "--format", "json") == reference
    reads.forbid = True
    assert cli("diff", base, head, "--format", "json") == reference
    assert (base / CACHE).is_dir() and (head / CACHE).is_dir()


def test_library_caches_only_when_asked(gpu, tmp_path):
    p0 = ta.load(gpu)
    assert not p0.cached
    assert not (gpu / CACHE).exists()  # the library writes nothing unasked

    p1 = ta.load(gpu, cache=True)
    p2 = ta.load(gpu, cache=True)
    assert not p1.cached and p2.cached
    assert not (gpu / CACHE).exists()  # True: the user's cache directory (XDG_CACHE_HOME)
    assert len(entries(default_folder())) >= 1
    inside = cache.Cache(in_profile=True)
    assert not ta.load(gpu, cache=inside).cached and ta.load(gpu, cache=inside).cached
    assert (gpu / CACHE).is_dir()  # asked for: inside the profile folder
    assert p2.events.schema == p0.events.schema
    assert p2.events.equals(p0.events)
    assert p2.links().equals(p0.links())
    for attr in ("warnings", "notes", "dropped", "pairs"):
        assert getattr(p2, attr) == getattr(p0, attr), attr
    assert [(str(r.source.path), r.format, r.count, r.read) for r in p2.reads] == \
           [(str(r.source.path), r.format, r.count, r.read) for r in p0.reads]
    assert not ta.load(gpu).cached  # not asked: no cache again

    elsewhere = tmp_path / "elsewhere"
    (p3,) = ta.load_runs(gpu, cache=elsewhere)
    (p4,) = ta.load_runs(gpu, cache=elsewhere)
    assert not p3.cached and p4.cached
    assert len(entries(elsewhere)) == 1
    assert not ta.load(gpu, cache=cache.Cache(enabled=False, folder=elsewhere)).cached


# --- where, asked to be in the profile (--cache-in-profile): inside the named folder, or where
# told; nothing for a named file (the default, the user cache directory: test_cache_where.py) --

def test_in_profile_the_cache_is_inside_the_named_folder_and_nothing_else_is_written(naive, tmp_path):
    reference = cli("gaps", naive, "--format", "json", "--no-cache")
    before = listing(tmp_path)
    out = tmp_path / "out.json"
    assert cli("gaps", naive, "--format", "json", "-o", out) == ""
    assert out.read_text() == reference
    new = set(listing(tmp_path)) - set(before)
    cache_files = {p for p in new if p.startswith(f"naive/{CACHE}/")}
    assert new == {"out.json", f"naive/{CACHE}"} | cache_files
    run_files = [Path(p).name for p in cache_files if "-gaps-" not in p]
    suffixes = sorted(name.split(".", 1)[1] for name in run_files)
    assert suffixes == ["TAG", "edges.parquet", "events.parquet", "json"]  # CACHEDIR.TAG + entry
    # and the gaps result beside it: its six tables and its meta
    gaps_files = sorted(Path(p).name.split(".", 1)[1] for p in cache_files if "-gaps-" in p)
    assert gaps_files == sorted(["devices.parquet", "device_gaps.parquet", "gaps.parquet",
                                 "lanes.parquet", "ops.parquet", "steps.parquet", "json"])
    after = listing(tmp_path)  # what was there is untouched (but the named folder's mtime)
    kept = [p for p in before if p != "naive"]
    assert {p: after[p] for p in kept} == {p: before[p] for p in kept}


def test_in_profile_a_named_file_has_no_cache_unless_a_folder_is_given(gpu, tmp_path, monkeypatch, reads):
    trace = gpu / "trace.json"
    before = listing(tmp_path)
    first = cli("gaps", trace, "--format", "json")
    assert cli("gaps", trace, "--format", "json") == first
    assert reads.n == 2  # read both times
    assert listing(tmp_path) == before

    given = tmp_path / "given"
    assert cli("gaps", trace, "--format", "json", "--cache-dir", given) == first
    assert len(entries(given)) == 1
    reads.forbid = True
    assert cli("gaps", trace, "--format", "json", "--cache-dir", given) == first

    # TRACEANA_CACHE_DIR is the same as --cache-dir, for a file and for a folder
    from_env = tmp_path / "from_env"
    monkeypatch.setenv("TRACEANA_CACHE_DIR", str(from_env))
    reads.forbid = False
    assert cli("gaps", gpu, "--format", "json") == first.replace(str(trace), str(gpu))
    assert len(entries(from_env)) == 1
    assert not (gpu / CACHE).exists()
    reads.forbid = True
    cli("gaps", gpu, "--format", "json")


def test_an_archive_named_directly_is_not_cached(gpu, tmp_path, reads):
    archive = tmp_path / "run.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(gpu / "trace.json", arcname="run/trace.json")
    shutil.rmtree(gpu)
    before = listing(tmp_path)
    first = cli("gaps", archive, "--format", "json")
    assert cli("gaps", archive, "--format", "json", "--cache-dir", tmp_path / "c") == first
    assert cli("gaps", archive, "--format", "json", "--cache-dir", tmp_path / "c") == first
    assert reads.n == 3
    assert listing(tmp_path) == before


# --- --no-cache and TRACEANA_NO_CACHE: nothing read, nothing written -----------------------------

def poison(folder: Path) -> None:
    """Keep only the first event of the cached events table, under the entry's valid key (its
    size and CRC-32 recorded in the meta too, as the cache records a table it writes)."""
    (table,) = folder.glob("*.events.parquet")
    pl.read_parquet(table).head(1).write_parquet(table)
    meta_file = table.with_name(table.name.replace(".events.parquet", ".json"))
    meta = json.loads(meta_file.read_bytes())
    data = table.read_bytes()
    meta["tables"][table.name] = [len(data), zlib.crc32(data)]
    meta_file.write_text(json.dumps(meta))


@pytest.mark.parametrize("how", ["flag", "env"])
def test_no_cache_neither_reads_nor_writes(gpu, tmp_path, monkeypatch, reads, how):
    extra = ("--no-cache",) if how == "flag" else ()
    reference = cli("info", gpu, "--format", "json")
    poison(gpu / CACHE)
    # the entry is still valid for its key: a plain run trusts it
    assert info_run(gpu)["events"] == 1
    before = listing(tmp_path)

    if how == "env":
        monkeypatch.setenv("TRACEANA_NO_CACHE", "1")
    reads.n = 0
    assert cli("info", gpu, "--format", "json", *extra) == reference
    assert reads.n == 1
    assert listing(tmp_path) == before  # the poisoned entry is neither read nor replaced

    fresh = tmp_path / "fresh"
    write_kineto(fresh / "trace.json", gpu_events())
    cli("gaps", fresh, "--format", "json", *extra)
    assert not (fresh / CACHE).exists()
    cli("gaps", fresh, "--format", "json", *extra, "--cache-dir", tmp_path / "c")
    assert not (tmp_path / "c").exists()


# --- invalidation: a changed run is read again ----------------------------------------------------

@pytest.mark.parametrize("keep_mtime", [False, True], ids=["rewritten", "same-size-same-mtime"])
def test_changed_content_is_a_miss(gpu, reads, keep_mtime):
    trace = gpu / "trace.json"
    assert gaps_summary(gpu)["busy_ns"] == kernel_busy_ns(trace)
    st = trace.stat()
    text = trace.read_text()
    old = '"ts": 200, "dur": 50'
    assert text.count(old) == 1
    trace.write_text(text.replace(old, '"ts": 200, "dur": 70'))  # k_mm 50 µs -> 70 µs
    assert trace.stat().st_size == st.st_size
    if keep_mtime:  # only the change time (and content) tells the difference now
        os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert trace.stat().st_mtime_ns == st.st_mtime_ns
    reads.n = 0
    summary = gaps_summary(gpu)
    assert reads.n == 1
    assert summary["busy_ns"] == kernel_busy_ns(trace) == 100_000
    assert summary["busy_ns"] == gaps_summary(gpu, "--no-cache")["busy_ns"]


def test_touched_file_is_a_miss(gpu, reads):
    first = cli("ops", gpu, "--format", "json")
    trace = gpu / "trace.json"
    st = trace.stat()
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    reads.n = 0
    assert cli("ops", gpu, "--format", "json") == first
    assert reads.n == 1
    reads.forbid = True  # and the new entry answers the next run
    assert cli("ops", gpu, "--format", "json") == first


def test_added_and_deleted_trace_files_change_the_run(gpu, reads):
    one = gpu / "trace.json"
    run = info_run(gpu)
    assert [s["path"] for s in run["sources"]] == [str(one)]
    assert run["events"] == n_records(one)

    two = write_kineto(gpu / "rank1.json", gpu_events(pid=HOST + 1, gpu=GPU + 1, k_mm_dur=60))
    reads.n = 0
    run = info_run(gpu)
    assert reads.n == 2
    assert [s["path"] for s in run["sources"]] == [str(two), str(one)]
    assert run["events"] == n_records(one, two)
    assert gaps_summary(gpu)["busy_ns"] == kernel_busy_ns(one, two)

    one.unlink()
    reads.n = 0
    run = info_run(gpu)
    assert reads.n == 1
    assert [s["path"] for s in run["sources"]] == [str(two)]
    assert run["events"] == n_records(two)
    assert gaps_summary(gpu)["busy_ns"] == kernel_busy_ns(two) == 90_000


# --- a broken or unwritable cache only costs time -------------------------------------------------

@pytest.mark.parametrize(("suffix", "how"), [
    (".events.parquet", "truncated"), (".edges.parquet", "truncated"), (".json", "truncated"),
    (".events.parquet", "garbage"), (".json", "empty"),
    ("-gaps-*.json", "truncated"), ("-gaps-*.device_gaps.parquet", "garbage")])
def test_corrupt_entry_is_a_miss(gpu, reads, suffix, how):
    reference = cli("gaps", gpu, "--format", "json", "--no-cache")
    assert cli("gaps", gpu, "--format", "json") == reference
    result = suffix.startswith("-gaps-")  # the cached gaps result, beside the run's entry
    (f,) = [p for p in (gpu / CACHE).glob(f"*{suffix}") if result or "-gaps-" not in p.name]
    data = f.read_bytes()
    broken = {"truncated": data[: len(data) // 2], "empty": b"", "garbage": b"\0" * len(data)}
    f.write_bytes(broken[how])

    reads.n = 0
    assert cli("gaps", gpu, "--format", "json") == reference
    assert reads.n == (0 if result else 1)
    reads.forbid = True  # rewritten whole
    assert cli("gaps", gpu, "--format", "json") == reference


@pytest.mark.parametrize("text", [b"null", b"[]"])
def test_meta_of_the_wrong_shape_is_a_miss(gpu, text):
    reference = cli("info", gpu, "--format", "json")
    (meta,) = entries(gpu / CACHE)
    meta.write_bytes(text)
    assert cli("info", gpu, "--format", "json") == reference


def chmod_is_effective(folder: Path) -> bool:
    """Return whether a 0o555 folder refuses a new entry here (not as root: geteuid() == 0)."""
    probe = folder / ".probe"
    try:
        probe.mkdir()
    except PermissionError:
        return True
    probe.rmdir()
    return False


@pytest.mark.parametrize("how", ["cache-dir under a file", "read-only named folder"])
def test_unwritable_cache_is_skipped(naive, tmp_path, how):
    reference = cli("chain", naive, "--format", "json", "--no-cache")
    extra: tuple = ()
    if how == "cache-dir under a file":  # a folder that cannot be made, even by root
        blocker = tmp_path / "blocker"
        blocker.write_text("a file, not a folder\n")
        extra = ("--cache-dir", blocker / "cache")
    before = listing(tmp_path)
    os.chmod(naive, 0o555)
    try:
        if how == "read-only named folder" and not chmod_is_effective(naive):
            pytest.skip("running as root: a 0o555 folder is still writable")
        assert cli("chain", naive, "--format", "json", *extra) == reference
        assert cli("chain", naive, "--format", "json", *extra) == reference
    finally:
        os.chmod(naive, 0o755)
    assert listing(tmp_path) == before


# --- discovery never reads the cache ----------------------------------------------------------

def test_discovery_ignores_the_cache_folder(naive):
    before = info_run(naive, "--no-cache")
    cli("info", naive)
    assert run_cli("export", naive, "-o", naive.parent / "export.json")[0] == 0  # an args entry
    assert len(entries(naive / CACHE)) == 2  # JSON files a walk would take for sources
    after = info_run(naive, "--no-cache")
    assert [s["path"] for s in after["sources"]] == [s["path"] for s in before["sources"]]
    assert after == before
    assert info_run(naive) == before


def test_a_cache_dir_inside_the_named_folder_is_not_input(gpu):
    reference = cli("info", gpu, "--format", "json", "--no-cache")
    cli("info", gpu, "--cache-dir", gpu / "cache")
    assert cli("info", gpu, "--format", "json", "--cache-dir", gpu / "cache") == reference


# --- export keeps the args, whatever the cache holds -------------------------------------------

def test_export_after_gaps_keeps_args(gpu, tmp_path, reads):
    cli("gaps", gpu, "--format", "json")  # an entry without args
    assert len(entries(gpu / CACHE)) == 1
    reference, out = tmp_path / "reference.json", tmp_path / "annotated.json"
    assert run_cli("export", gpu, "-o", reference, "--no-cache")[0] == 0
    assert run_cli("export", gpu, "-o", out)[0] == 0
    assert out.read_bytes() == reference.read_bytes()

    (mm,) = [e for e in json.loads(out.read_text())["traceEvents"] if e.get("name") == "aten::mm"]
    (src,) = [e for e in json.loads((gpu / "trace.json").read_text())["traceEvents"]
              if e.get("name") == "aten::mm"]
    assert mm["args"]["Input Dims"] == src["args"]["Input Dims"] == [[4, 4], [4, 4]]
    assert mm["args"]["External id"] == src["args"]["External id"]

    reads.forbid = True  # the export's own entry (with args) answers the next export
    out.unlink()
    assert run_cli("export", gpu, "-o", out)[0] == 0
    assert out.read_bytes() == reference.read_bytes()


# --- what the key must cover (each of these once went stale) ------------------------------------

def test_named_non_trace_file_is_still_an_error_with_a_shared_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEANA_CACHE_DIR", str(tmp_path / "shared"))
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "notes.json").write_text('{"foo": 1}')
    cli("info", folder)  # a folder: a non-trace JSON is skipped, exit 0
    code, _, err = run_cli("info", folder / "notes.json", "--no-cache")
    assert code == 2 and "not a trace" in err
    code, _, err = run_cli("info", folder / "notes.json")
    assert code == 2 and "not a trace" in err


def test_added_device_json_note_appears(tmp_path):
    run = tmp_path / "run"
    write_kineto(run / "host_pid_4242" / "trace.json", gpu_events())
    info_run(run)
    (run / "host_pid_4242" / "profile_nc_0_session_0.json").write_text("{}")
    reference = info_run(run, "--no-cache")
    assert any("per-core device JSON" in n for n in reference["notes"])
    assert info_run(run) == reference


def test_file_changed_while_read_is_not_cached_stale(gpu, monkeypatch):
    trace = gpu / "trace.json"
    real = profile.read_source

    def read_then_rewrite(src, keep_args=False, **options):
        result = real(src, keep_args, **options)
        write_kineto(trace, gpu_events() + [X("cpu_op", "aten::add", 500, 5, pid=HOST, tid=HOST)])
        return result

    monkeypatch.setattr(profile, "read_source", read_then_rewrite)
    info_run(gpu)
    monkeypatch.setattr(profile, "read_source", real)
    assert info_run(gpu)["events"] == n_records(trace) == 5


def test_archive_of_an_analysed_folder_has_one_run(gpu, tmp_path):
    cli("info", gpu)  # populates gpu/.traceana-cache
    archive = tmp_path / "run.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(gpu, arcname="run")
    assert len(json.loads(cli("info", archive, "--format", "json"))["runs"]) == 1
