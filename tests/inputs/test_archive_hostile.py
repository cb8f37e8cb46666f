"""Hostile archive members: names that climb out, absolute names, links, devices, duplicates.

Archives are read in memory and never extracted (docs/formats.md, "Archives"). For every case
the user relies on: nothing is written anywhere (not under the test's folder, not in the
working directory, not where a member's name or link points); a real trace outside the
archive is never read through a link; a legitimate run beside the hostile members is found
and analysed normally; and each command ends in exit 0, or exit 2 with one line.

Each case runs twice: ``alone`` (only the hostile members) through ``info``, ``gaps`` and
``batch``, and ``with_ok`` (plus a valid ``ok/trace.json``) through ``batch``, which finds and
analyses every run (an analysis costs 0.1 s a command). Traces are told apart by their
number of kernel executions: the archive's own traces have 1 (or 2), the outside trace that
links point at has 3.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import polars as pl
import pytest
from conftest import X, kineto, one_line_error, run_cli

from trace_analyzer.inputs.archive import open_archive

NO_PROFILE = "no profile found (no trace JSON, Explorer export or Neuron capture)"


def _trace(executions: int, name: str = "k") -> bytes:
    """A Kineto trace of ``executions`` kernels on one device."""
    return json.dumps(kineto(
        [X("kernel", name, 1.0 + 10 * i, 2.0, pid=0, tid=7, device=0, stream=7)
         for i in range(executions)],
        baseTimeNanoseconds=1_000_000_000)).encode()


ONE, TWO, OUTSIDE = _trace(1), _trace(2), _trace(3, "OUTSIDE_KERNEL")


@dataclass
class Place:
    """Where a case's paths lie: the archive's folder, the working directory, the outside trace."""
    tmp: Path
    arc_dir: Path
    cwd: Path
    outside_dir: Path

    @property
    def outside(self) -> Path:
        return self.outside_dir / "trace.json"

    def strip(self, absolute: str | Path) -> str:
        """The member name an absolute name is read as: without its leading slash."""
        return str(absolute).lstrip("/")


Member = tuple  # (kind, name, data or link target)


@dataclass
class Case:
    id: str
    fmt: str  # "tar" or "zip"
    members: Callable[[Place], list[Member]]
    # Members listed besides ok/trace.json (regular members with safe or stripped names).
    listed: Callable[[Place], set[str]] = lambda p: set()
    # Runs found in the archive alone: member root -> kernel executions. Empty: no profile.
    runs: Callable[[Place], dict[str, int]] = lambda p: {}


def _abs_target(p: Place) -> str:
    return str(p.tmp / "abs_target" / "trace.json")


CASES = [
    # ---- tar: names that climb out of the archive
    Case("tar-dotdot", "tar", lambda p: [("file", "../trace.json", ONE)]),
    Case("tar-dotdot-nested", "tar", lambda p: [("file", "a/../../trace.json", ONE)]),
    Case("tar-dot-dotdot", "tar", lambda p: [("file", "./../trace.json", ONE)]),
    Case("tar-backslash-dotdot", "tar", lambda p: [("file", "..\\trace.json", ONE)]),
    Case("tar-backslash-nested", "tar", lambda p: [("file", "a\\..\\..\\trace.json", ONE)]),
    Case("tar-absolute-dotdot", "tar",
         lambda p: [("file", f"{p.tmp}/x/../escape/trace.json", ONE)]),
    # ---- tar: absolute names are read as their relative member (never written)
    Case("tar-absolute", "tar", lambda p: [("file", _abs_target(p), ONE)],
         listed=lambda p: {p.strip(_abs_target(p))},
         runs=lambda p: {p.strip(_abs_target(p)).rpartition("/")[0]: 1}),
    # "/etc/passwd", under tmp_path: a broken reader that extracted would overwrite the real
    # one when the suite runs as root.
    Case("tar-absolute-etc-passwd", "tar",
         lambda p: [("file", f"{p.tmp}/etc/passwd", b"root:x:0:0::/root:/bin/sh\n")],
         listed=lambda p: {p.strip(f"{p.tmp}/etc/passwd")}),
    Case("tar-backslash-separator", "tar", lambda p: [("file", "run\\trace.json", ONE)],
         listed=lambda p: {"run/trace.json"}, runs=lambda p: {"run": 1}),
    # ---- tar: links, never followed (to the outside trace, or to another member)
    Case("tar-symlink-absolute", "tar", lambda p: [("sym", "link/trace.json", str(p.outside))]),
    Case("tar-symlink-relative", "tar",
         lambda p: [("sym", "rel/trace.json", "../../outside/trace.json")]),
    Case("tar-hardlink-absolute", "tar", lambda p: [("hard", "hard/trace.json", str(p.outside))]),
    Case("tar-hardlink-internal", "tar",
         lambda p: [("file", "data/blob.bin", ONE), ("hard", "copy/trace.json", "data/blob.bin")],
         listed=lambda p: {"data/blob.bin"}),
    Case("tar-symlink-internal", "tar",
         lambda p: [("file", "data/blob.bin", ONE), ("sym", "copy/trace.json", "../data/blob.bin")],
         listed=lambda p: {"data/blob.bin"}),
    # A member "through" a symlinked folder: extracted, it would land in the outside folder.
    Case("tar-through-symlink-dir", "tar",
         lambda p: [("sym", "evil", str(p.outside_dir)), ("file", "evil/notes.txt", b"hi\n")],
         listed=lambda p: {"evil/notes.txt"}),
    Case("tar-through-symlink-dir-trace", "tar",
         lambda p: [("sym", "evil", str(p.outside_dir)), ("file", "evil/trace.json", ONE)],
         listed=lambda p: {"evil/trace.json"}, runs=lambda p: {"evil": 1}),
    Case("tar-through-hardlink-dir", "tar",
         lambda p: [("hard", "evil", str(p.outside_dir)), ("file", "evil/notes.txt", b"hi\n")],
         listed=lambda p: {"evil/notes.txt"}),
    # ---- tar: devices, FIFOs, folders
    Case("tar-fifo", "tar", lambda p: [("fifo", "fifo/trace.json", None)]),
    Case("tar-chardev", "tar", lambda p: [("chr", "dev/trace.json", None)]),
    Case("tar-blockdev", "tar", lambda p: [("blk", "blk/trace.json", None)]),
    Case("tar-dir-dotdot", "tar", lambda p: [("dir", "..", None), ("dir", "../escape", None)]),
    # ---- tar: duplicate names; the last regular member wins, a later link does not shadow it
    Case("tar-duplicate", "tar",
         lambda p: [("file", "dup/trace.json", ONE), ("file", "dup/trace.json", TWO)],
         listed=lambda p: {"dup/trace.json"}, runs=lambda p: {"dup": 2}),
    Case("tar-duplicate-then-symlink", "tar",
         lambda p: [("file", "dup/trace.json", ONE), ("sym", "dup/trace.json", str(p.outside))],
         listed=lambda p: {"dup/trace.json"}, runs=lambda p: {"dup": 1}),
    # ---- zip
    Case("zip-dotdot", "zip", lambda p: [("file", "../trace.json", ONE)]),
    Case("zip-dotdot-nested", "zip", lambda p: [("file", "a/../../trace.json", ONE)]),
    Case("zip-backslash-dotdot", "zip", lambda p: [("file", "..\\trace.json", ONE)]),
    Case("zip-dir-dotdot", "zip", lambda p: [("dir", "../", None), ("dir", "../escape/", None)]),
    Case("zip-absolute", "zip", lambda p: [("file", _abs_target(p), ONE)],
         listed=lambda p: {p.strip(_abs_target(p))},
         runs=lambda p: {p.strip(_abs_target(p)).rpartition("/")[0]: 1}),
    Case("zip-dot-slash", "zip", lambda p: [("file", "./run/trace.json", ONE)],
         listed=lambda p: {"run/trace.json"}, runs=lambda p: {"run": 1}),
    Case("zip-backslash-separator", "zip", lambda p: [("file", "run\\trace.json", ONE)],
         listed=lambda p: {"run/trace.json"}, runs=lambda p: {"run": 1}),
    Case("zip-symlink-absolute", "zip", lambda p: [("sym", "link/trace.json", str(p.outside))]),
    Case("zip-symlink-relative", "zip",
         lambda p: [("sym", "rel/trace.json", "../../outside/trace.json")]),
    # A FIFO entry whose stored bytes are a valid trace: found only if its mode were ignored.
    Case("zip-fifo", "zip", lambda p: [("fifo", "fifo/trace.json", ONE)]),
    Case("zip-duplicate", "zip",
         lambda p: [("file", "dup/trace.json", ONE), ("file", "dup/trace.json", TWO)],
         listed=lambda p: {"dup/trace.json"}, runs=lambda p: {"dup": 2}),
    Case("zip-duplicate-then-symlink", "zip",
         lambda p: [("file", "dup/trace.json", ONE), ("sym", "dup/trace.json", str(p.outside))],
         listed=lambda p: {"dup/trace.json"}, runs=lambda p: {"dup": 1}),
]
BY_ID = {c.id: c for c in CASES}

TAR_TYPES = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE,
             "chr": tarfile.CHRTYPE, "blk": tarfile.BLKTYPE, "dir": tarfile.DIRTYPE}
ZIP_MODES = {"file": stat.S_IFREG | 0o644, "sym": stat.S_IFLNK | 0o777,
             "fifo": stat.S_IFIFO | 0o644, "dir": stat.S_IFDIR | 0o755}


def _write_tar(path: Path, members: list[Member]) -> None:
    with tarfile.open(path, "w") as tar:
        for kind, name, data in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = TAR_TYPES[kind]
            if kind in ("sym", "hard"):
                info.linkname = data
            if kind in ("chr", "blk"):
                info.devmajor, info.devminor = 1, 3
            tar.addfile(info)


def _write_zip(path: Path, members: list[Member]) -> None:
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as z:
        warnings.simplefilter("ignore", UserWarning)  # "Duplicate name": the point of a case
        for kind, name, data in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = ZIP_MODES[kind] << 16
            z.writestr(info, data.encode() if isinstance(data, str) else (data or b""))


def _place(tmp_path: Path) -> Place:
    """Every ``..`` name points inside tmp_path, from the archive's folder or the cwd; the
    relative links (``../../outside/trace.json`` from ``rel/``) reach the outside trace."""
    p = Place(tmp=tmp_path, arc_dir=tmp_path / "arc",
              cwd=tmp_path / "c" / "d" / "cwd", outside_dir=tmp_path / "outside")
    for d in (p.arc_dir, p.cwd, p.outside_dir):
        d.mkdir(parents=True)
    p.outside.write_bytes(OUTSIDE)
    return p


def _build(case: Case, p: Place, with_ok: bool) -> Path:
    members = case.members(p)
    # Every absolute name lies under tmp_path: a reader that extracted must not reach /etc.
    assert all(Path(os.path.normpath(n.replace("\\", "/"))).is_relative_to(p.tmp)
               for _, n, _ in members if n.replace("\\", "/").startswith("/"))
    if with_ok:
        members = [("file", "ok/trace.json", ONE), *members]
    path = p.arc_dir / f"hostile.{case.fmt}"
    (_write_tar if case.fmt == "tar" else _write_zip)(path, members)
    return path


def _targets(case: Case, p: Place) -> list[Path]:
    """Where each member would land if extracted (from the archive's folder or the cwd)."""
    out = []
    for _, name, _ in case.members(p):
        name = name.replace("\\", "/")
        if name.startswith("/"):
            out.append(Path(os.path.normpath(name)))
        else:
            out += [Path(os.path.normpath(base / name)) for base in (p.arc_dir, p.cwd)]
    return [t for t in out if t.is_relative_to(p.tmp)]


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root`` (not following links): its type, size, mtime and content."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            f = Path(dirpath) / name
            st = f.lstat()
            content = (os.readlink(f) if stat.S_ISLNK(st.st_mode)
                       else f.read_bytes() if stat.S_ISREG(st.st_mode) else None)
            out[str(f.relative_to(root))] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns,
                                             content)
    return out


def _unchanged(p: Place, before: dict, allowed_new: set[str] = frozenset()) -> None:
    after = _snapshot(p.tmp)
    assert set(after) - set(before) == set(allowed_new), "new files appeared"
    assert not set(before) - set(after), "files disappeared"
    changed = [k for k in before if after[k] != before[k]]
    assert not changed, f"files changed: {changed}"


def _check_info(p: Place, arc: Path, expected: dict[str, int]) -> None:
    code, out, err = run_cli("info", arc, "--format", "json")
    if expected:
        assert code == 0, err
        assert "Traceback" not in err
        assert {r["root"]: r["events"] for r in json.loads(out)["runs"]} == expected
    else:
        line = one_line_error(code, out, err)
        assert line.startswith("traceana: error:") and str(arc) in line, line
        assert line.endswith(NO_PROFILE), line
    assert "OUTSIDE_KERNEL" not in out + err


def _check_gaps(p: Place, arc: Path, expected: dict[str, int]) -> None:
    code, out, err = run_cli("gaps", arc, "--format", "json")
    if expected:
        assert code == 0, err
        assert "Traceback" not in err
        runs = json.loads(out)["runs"]
        assert {r["root"]: sum(d["executions"] for d in r["devices"]) for r in runs} == expected
    else:
        assert one_line_error(code, out, err).endswith(NO_PROFILE)
    assert "OUTSIDE_KERNEL" not in out + err


def _check_batch(p: Place, arc: Path, expected: dict[str, int]) -> None:
    code, out, err = run_cli("batch", arc, "-o", p.tmp / "out.parquet", "--jobs", "1")
    assert code == 0, err  # failed runs are rows, not an exit code (docs/batch.md)
    assert "Traceback" not in err
    df = pl.read_parquet(p.tmp / "out.parquet")
    if expected:
        assert df["error"].null_count() == len(df), df["error"].to_list()
        got = df.group_by("run_id").agg(pl.col("executions").sum())
        assert dict(got.iter_rows()) == expected
        assert "OUTSIDE_KERNEL" not in str(df["top_idle_op"].to_list())
    else:  # the whole archive is one failed run
        (row,) = df.select("run_id", "member", "error").to_dicts()
        assert row["run_id"] == str(arc) and row["member"] is None
        assert row["error"].endswith(NO_PROFILE), row["error"]
        assert f"failed: {arc}: " in err


CHECKS = {"info": (_check_info, set()), "gaps": (_check_gaps, set()),
          "batch": (_check_batch, {"out.parquet"})}


def _check_commands(case: Case, p: Place, arc: Path, with_ok: bool, commands) -> None:
    """Open the archive, then run each command: the right members and runs, and nothing but
    batch's table appears anywhere under tmp_path."""
    expected = {f"{arc}!/{root}": n for root, n in case.runs(p).items()}
    if with_ok:
        expected[f"{arc}!/ok"] = 1
    targets = {t: t.exists() for t in _targets(case, p)}
    before = _snapshot(p.tmp)
    listed = case.listed(p) | ({"ok/trace.json"} if with_ok else set())
    assert set(open_archive(arc).files) == listed  # opened (and cached) here: the first read
    _unchanged(p, before)
    for command in commands:
        check, new = CHECKS[command]
        check(p, arc, expected)
        _unchanged(p, before, new)
        before = _snapshot(p.tmp)
    assert {t: t.exists() for t in targets} == targets, "a member's target was written"
    assert not any(p.cwd.iterdir())


COMMANDS = {False: ("info", "gaps", "batch"), True: ("batch",)}


@pytest.mark.parametrize("with_ok", [False, True], ids=["alone", "with_ok"])
@pytest.mark.parametrize("case_id", list(BY_ID))
def test_hostile_member(case_id, with_ok, tmp_path, monkeypatch):
    case = BY_ID[case_id]
    p = _place(tmp_path)
    monkeypatch.chdir(p.cwd)
    arc = _build(case, p, with_ok)
    _check_commands(case, p, arc, with_ok, COMMANDS[with_ok])


def test_only_links_to_a_real_trace_find_no_profile(tmp_path, monkeypatch):
    """Every kind of link at once, each pointing at a real trace: still no profile."""
    p = _place(tmp_path)
    monkeypatch.chdir(p.cwd)
    links = [m for cid in ("tar-symlink-absolute", "tar-symlink-relative", "tar-hardlink-absolute")
             for m in BY_ID[cid].members(p)]
    links.append(("sym", "outside", str(p.outside_dir)))
    case = Case("all-links", "tar", lambda _: links)
    arc = _build(case, p, with_ok=False)
    _check_commands(case, p, arc, False, ("info", "gaps", "batch"))


# A process costs about a second of imports: two cases, run at once, as the real command.
AS_PROCESS = {"tar-symlink-absolute": (False, "info"),  # exit 2, "no profile found"
              "zip-absolute": (True, "gaps")}  # exit 0 (was an internal error, KeyError)


def test_as_a_process_no_traceback(tmp_path):
    """The real command (not click's runner): no traceback, the exit code and one-line
    contract hold, and nothing is written."""
    env = {**os.environ, "TRACEANA_CACHE_DIR": str(tmp_path / "cache")}
    entry = "from trace_analyzer.cli import main; main()"
    started = {}
    for case_id, (with_ok, command) in AS_PROCESS.items():
        p = _place(tmp_path / case_id)
        arc = _build(BY_ID[case_id], p, with_ok)
        before = _snapshot(p.tmp)
        argv = [sys.executable, "-c", entry, command, str(arc), "--format", "json"]
        proc = subprocess.Popen(argv, cwd=p.cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        started[case_id] = (proc, p, before)
    failures = []
    for case_id, (proc, p, before) in started.items():
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            failures.append(f"{case_id}: hung")
            continue
        try:
            assert "Traceback" not in err and "internal error" not in err, err
            assert "OUTSIDE_KERNEL" not in out + err
            if AS_PROCESS[case_id][0]:
                assert proc.returncode == 0, (proc.returncode, err)
                roots = {r["root"] for r in json.loads(out)["runs"]}
                assert roots == {f"{p.arc_dir / 'hostile.zip'}!/{m}"
                                 for m in ("ok", p.strip(_abs_target(p)).rpartition("/")[0])}
            else:
                assert one_line_error(proc.returncode, out, err).endswith(NO_PROFILE)
            _unchanged(p, before)
        except AssertionError as e:
            failures.append(f"{case_id}: {e}")
    assert not failures, "\n".join(failures)
