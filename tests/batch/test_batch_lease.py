"""The batch lock is a lease (issue 18): a stale lock is told by more than its pid.

What a user relies on: a lock left by a batch of another host (a table on a shared file
system) whose heartbeat stopped ten minutes ago is taken over by the next batch, with a note
saying why, and no one has to remove it by hand; one whose heartbeat is fresh is refused, the
line saying when it was last seen. On this machine a lock whose pid now belongs to another
process (the pid reused) is taken over, told by the process's start time. A running batch
refreshes its lock, and stops doing so before it removes it. Where ``flock`` is a no-op (some
FUSE mounts) the same rules hold, and two batches taking over one stale lock at once end with
one holder.

The CLI cases are real processes: the test writes the lock file of a batch that is not there
(its host, pid, start time and heartbeat chosen here) and runs ``traceana batch``. The time
constants are arguments of ``table_lock`` (defaults ``HEARTBEAT_S``, ``STALE_S``), which the
in-process cases shorten.
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import threading
import time
from pathlib import Path

import pytest
from test_batch_lock import _tiny_run, run_ids, traceana, under

from trace_analyzer.batch import lock as lock_mod
from trace_analyzer.batch.lock import table_lock
from trace_analyzer.errors import InputError

linux = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")


@pytest.fixture
def root(tmp_path) -> Path:
    for i in range(2):
        _tiny_run(tmp_path / "runs" / f"r{i}", i)
    return tmp_path / "runs"


def _write_lock(lock: Path, holder: dict, beat_ago_s: float) -> None:
    """Write a lock file as a batch would, its last heartbeat ``beat_ago_s`` seconds ago."""
    lock.write_text(json.dumps(holder))
    then = time.time() - beat_ago_s
    os.utime(lock, (then, then))


def _elsewhere() -> dict:
    """A holder on another machine: its pid means nothing here (it may even run here)."""
    return {"pid": os.getpid(), "host": "elsewhere", "started": "2026-01-01T00:00:00+00:00",
            "boot_id": "00000000-0000-0000-0000-000000000000", "pid_ns": "pid:[1]",
            "start_ticks": 12345}


def _this_process(ticks_off: int) -> dict:
    """A holder naming this very process, its start time off by ``ticks_off`` clock ticks."""
    fields = Path("/proc/self/stat").read_bytes().rpartition(b")")[2].split()
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
            "pid_ns": os.readlink("/proc/self/ns/pid"), "start_ticks": int(fields[19]) + ticks_off}


def _notes(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("traceana: note: ")]


def test_another_hosts_lock_without_a_heartbeat_for_eleven_minutes_is_taken_over(root, tmp_path):
    out, lock = tmp_path / "runs.parquet", tmp_path / "runs.parquet.lock"
    _write_lock(lock, _elsewhere(), beat_ago_s=11 * 60)

    done = traceana("batch", root, "-o", out, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    (note,) = _notes(done.stderr)
    assert str(lock) in note and f"pid {os.getpid()} on elsewhere" in note, note
    assert re.search(r"no heartbeat for 1[12] min from elsewhere", note), note
    assert run_ids(out) == under(root)
    assert not lock.exists()


def test_another_hosts_lock_with_a_fresh_heartbeat_is_refused_saying_when_it_beat(root, tmp_path):
    out, lock = tmp_path / "runs.parquet", tmp_path / "runs.parquet.lock"
    holder = _elsewhere()
    _write_lock(lock, holder, beat_ago_s=5 * 60)  # under the 10 minutes: its holder may run

    refused = traceana("batch", root, "-o", out, "--jobs", "1")
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    assert line.startswith(f"traceana: error: {out}: another traceana batch"), line
    assert re.search(r"last heartbeat [56] min ago", line) and str(lock) in line, line
    assert not out.exists()
    assert json.loads(lock.read_text()) == holder  # left for its holder


@linux
def test_a_lock_whose_pid_now_names_another_process_is_taken_over(root, tmp_path):
    out, lock = tmp_path / "runs.parquet", tmp_path / "runs.parquet.lock"
    # This test's process runs, but it is not the one that wrote the lock: that one started
    # at another time. Its heartbeat is fresh, so the pid's start time alone decides.
    _write_lock(lock, _this_process(ticks_off=-1), beat_ago_s=0)

    done = traceana("batch", root, "-o", out, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    (note,) = _notes(done.stderr)
    assert f"pid {os.getpid()} is now another process" in note and str(lock) in note, note
    assert run_ids(out) == under(root)
    assert not lock.exists()


@linux
def test_a_lock_whose_process_still_runs_is_refused_however_old_its_heartbeat(root, tmp_path):
    out, lock = tmp_path / "runs.parquet", tmp_path / "runs.parquet.lock"
    # The pid and its start time match a process that runs (this test's: a batch stopped
    # with SIGSTOP beats no more, and resumes): its lock is kept, an hour without a beat.
    _write_lock(lock, _this_process(ticks_off=0), beat_ago_s=3600)

    refused = traceana("batch", root, "-o", out, "--jobs", "1")
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    assert f"pid {os.getpid()} runs; last heartbeat 60 min ago" in line, line
    assert not out.exists() and lock.exists()


@linux
def test_a_holder_beats_while_it_holds_the_lock_and_stops_before_removing_it(tmp_path):
    table = tmp_path / "runs.parquet"
    lock = tmp_path / "runs.parquet.lock"
    with table_lock(table, heartbeat_s=0.05) as notes:
        assert notes == []
        holder = json.loads(lock.read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        assert holder["start_ticks"] == _this_process(ticks_off=0)["start_ticks"]
        os.utime(lock, (1000, 1000))  # as if its last beat were in 1970
        deadline = time.monotonic() + 3
        while lock.stat().st_mtime < time.time() - 60:
            assert time.monotonic() < deadline, "the heartbeat did not refresh the lock"
            time.sleep(0.01)
    assert not lock.exists()
    assert not [t for t in threading.enumerate() if t.name == "traceana-lock-heartbeat"]


def test_a_short_stale_time_is_honoured(tmp_path):
    table, lock = tmp_path / "runs.parquet", tmp_path / "runs.parquet.lock"
    _write_lock(lock, _elsewhere(), beat_ago_s=2)
    with pytest.raises(InputError, match="last heartbeat 2 s ago"):
        with table_lock(table, stale_s=60):
            pass
    with table_lock(table, stale_s=1) as notes:
        (note,) = notes
        assert "no heartbeat for 2 s from elsewhere" in note, note
    assert not lock.exists()


@pytest.fixture
def noop_flock(monkeypatch):
    """A file system where flock takes every lock and keeps none (some FUSE mounts)."""
    monkeypatch.setattr(lock_mod.fcntl, "flock", lambda fd, how: None)


def test_a_real_flock_and_a_noop_one_are_told_apart(tmp_path, monkeypatch):
    path = tmp_path / "f.lock"
    path.write_text("{}")
    fd = os.open(path, os.O_RDWR)
    try:
        lock_mod.fcntl.flock(fd, lock_mod.fcntl.LOCK_EX)
        assert lock_mod._flock_is_noop(path, fd) is False
        monkeypatch.setattr(lock_mod.fcntl, "flock", lambda fd, how: None)
        assert lock_mod._flock_is_noop(path, fd) is True
    finally:
        os.close(fd)


@linux
@pytest.mark.parametrize("flock", ["real", "noop"])
def test_a_lock_without_a_start_time_is_judged_by_its_flock_or_else_its_heartbeat(
        tmp_path, request, flock):
    # An earlier traceana wrote no start time; its pid (this test's) runs, its heartbeat is
    # fresh. A real flock that is free shows its holder gone; a no-op one shows nothing, and
    # the heartbeat keeps it.
    if flock == "noop":
        request.getfixturevalue("noop_flock")
    table, lock = tmp_path / "runs.parquet", tmp_path / "runs.parquet.lock"
    _write_lock(lock, {"pid": os.getpid(), "host": socket.gethostname()}, beat_ago_s=0)
    if flock == "real":
        with table_lock(table) as notes:
            (note,) = notes
            assert "its flock is free" in note, note
    else:
        with pytest.raises(InputError, match="last heartbeat 0 s ago"):
            with table_lock(table):
                pass


def test_two_takeovers_of_one_stale_lock_on_a_noop_flock_leave_one_holder(
        tmp_path, monkeypatch, noop_flock):
    table, lock = tmp_path / "runs.parquet", tmp_path / "runs.parquet.lock"
    _write_lock(lock, _elsewhere(), beat_ago_s=3600)
    rival = {**_elsewhere(), "host": "rival", "pid": 4242}
    sleep = time.sleep

    def rival_writes_meanwhile(seconds: float) -> None:  # during the takeover's settle
        lock.write_text(json.dumps(rival))
        sleep(0)

    monkeypatch.setattr(lock_mod.time, "sleep", rival_writes_meanwhile)
    with pytest.raises(InputError, match="pid 4242 on rival"):
        with table_lock(table):
            pass
    assert json.loads(lock.read_text()) == rival  # the rival's, untouched


# Three things a lock taken with a library's flock lock (filelock.UnixFileLock, tried for
# issue 33) did not keep, each a batch refused or a folder made where it should not be.

def test_a_fresh_lock_on_a_noop_flock_is_taken(tmp_path, noop_flock):
    # Where flock is a no-op, O_EXCL alone tells the batch that created the lock from one
    # that found it: the first batch on a table must not refuse itself.
    table, lock = tmp_path / "runs.parquet", tmp_path / "runs.parquet.lock"
    with table_lock(table) as notes:
        assert notes == []
        assert json.loads(lock.read_text())["pid"] == os.getpid()
    assert not lock.exists()


@pytest.fixture
def no_flock(monkeypatch):
    """A file system without flock (NFS with no lock daemon): every flock is ENOLCK."""
    def enolck(fd, how):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
    monkeypatch.setattr(lock_mod.fcntl, "flock", enolck)


def test_without_flock_a_batch_takes_a_fresh_lock_and_a_heartbeat_keeps_a_held_one(
        tmp_path, no_flock):
    table, lock = tmp_path / "runs.parquet", tmp_path / "runs.parquet.lock"
    with table_lock(table) as notes:
        assert notes == [] and json.loads(lock.read_text())["pid"] == os.getpid()
    assert not lock.exists()
    _write_lock(lock, _elsewhere(), beat_ago_s=2)
    with pytest.raises(InputError, match="last heartbeat 2 s ago"):
        with table_lock(table):
            pass
    assert json.loads(lock.read_text()) == _elsewhere()  # left for its holder


def test_a_table_in_a_missing_folder_gets_no_lock_and_no_folder(tmp_path):
    # Writing the table says why it cannot be written; taking the lock makes no folder.
    table = tmp_path / "missing" / "runs.parquet"
    with table_lock(table) as notes:
        assert notes == []
    assert not table.parent.exists()
