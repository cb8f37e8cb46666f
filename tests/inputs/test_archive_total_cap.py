"""The cap on what an archive inflates to counts a zip's members all told, as a tar's (issue
37: 30 members of 1.4 MB in a 47 KB zip were read under --max-bytes 5M, exit 0, where the
same members as .tar.gz were refused), as real processes: both refused with one line, both
read under a cap they fit."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile

import pytest
from conftest import run_process

EVENTS = [{"ph": "X", "name": "k", "cat": "kernel", "ts": 1, "dur": 2, "pid": 0, "tid": 7}]
DOC = json.dumps({"traceEvents": EVENTS, "pad": "x" * 1_400_000}).encode()


def zipped(path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(30):
            z.writestr(f"r{i:02d}/trace.json", DOC)
    return path


def tarred(path):
    with tarfile.open(path, "w:gz") as t:
        for i in range(30):
            info = tarfile.TarInfo(f"r{i:02d}/trace.json")
            info.size = len(DOC)
            t.addfile(info, io.BytesIO(DOC))
    return path


@pytest.mark.parametrize("make", [zipped, tarred], ids=["zip", "tar.gz"])
def test_many_small_members_are_capped_all_told(tmp_path, make):
    archive = make(tmp_path / ("runs.zip" if make is zipped else "runs.tar.gz"))
    assert archive.stat().st_size < 200_000  # a few KB that inflate to 42 MB
    code, out, err, *_ = run_process("gaps", archive, "--max-bytes", "5M", "--no-cache")
    assert code == 2 and out == "", (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "decompresses to more than 5,000,000 bytes" in lines[0], err
    code, out, err, *_ = run_process("gaps", archive, "--max-bytes", "64M", "--no-cache")
    assert code == 0, err
