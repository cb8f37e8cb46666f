"""A batch stopped by a full disk leaves no lock behind (issue 37: its lock stayed, empty, and
a rerun within 10 s was refused as "another traceana batch is writing this table"), as real
processes on a real 2 MiB tmpfs filled to its last byte (root only): both runs say the disk is
full, and nothing is left beside the table."""

from __future__ import annotations

from pathlib import Path

from conftest import fill, run_process

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_a_full_disk_leaves_no_lock_and_a_rerun_says_the_same(small_disk):
    fill(small_disk)
    table = small_disk / "runs.parquet"
    for _ in range(2):  # at once: no lease to wait out
        code, out, err, *_ = run_process("batch", FIXTURES / "rmsnorm_naive", "-o", table,
                                         "--jobs", "1")  # fmt: skip
        assert code == 2, (code, out, err)
        assert err.strip().splitlines()[-1] == (
            f"traceana: error: {table}: cannot write: No space left on device"
        ), err
        assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]
