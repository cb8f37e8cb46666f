"""``batch --hash`` hashes each file a chunk at a time (issue 37: a 2 GiB NEFF took 2.1 GB of
memory, read whole to be hashed), as a real process: a run holding a 600 MiB NEFF (sparse: no
disk) is fingerprinted by its bytes with the peak of the process well under the file's size,
and to the digest the whole bytes give."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
from conftest import run_process

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BIG = 600 * 2**20


def test_hashing_a_large_neff_holds_a_chunk_not_the_file(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "rmsnorm_naive", run, ignore=shutil.ignore_patterns(".traceana-*"))
    neff = sorted(run.rglob("*.neff"))[0]
    with open(neff, "r+b") as f:
        f.truncate(BIG)
    out = tmp_path / "runs.parquet"
    code, _, err, peak, _ = run_process("batch", run, "-o", out, "--hash", "--jobs", "1",
                                        timeout=180)  # fmt: skip
    assert code == 0, err
    assert 0 < peak < 400, f"peak {peak} MiB hashing a {BIG >> 20} MiB file"
    row = pl.read_parquet(out).row(0, named=True)
    assert row["fingerprint"].startswith("sha256:")
    # the digest is of the files' bytes: a changed byte at the end of the big file changes it
    with open(neff, "r+b") as f:
        f.seek(BIG - 1)
        f.write(b"\1")
    code, _, err, *_ = run_process("batch", run, "-o", out, "--hash", "--jobs", "1", timeout=180)
    assert code == 0, err
    assert pl.read_parquet(out).row(0, named=True)["fingerprint"] != row["fingerprint"]
