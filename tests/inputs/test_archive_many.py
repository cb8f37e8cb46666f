"""An archive of many tiny members is walked in linear time and its one trace found.

The suite checks 100,000 members in a zip (about 12 MB; 10 s here) and 5,000 in a tar (a tar
member takes at least 1 KB: 100,000 would be 100 MB to write each run; docs/reliability.md
records that one, 10 s and 149 MB, measured by hand).
"""

from __future__ import annotations

import io
import json
import tarfile
import time
import zipfile

from conftest import X, kineto, run_cli

DOC = kineto([X("kernel", "k", 1.0, 2.0, pid=0, tid=7, device=0, stream=7)],
             baseTimeNanoseconds=1_000_000_000)


def _info_finds_the_trace(path) -> float:
    start = time.perf_counter()
    code, out, err = run_cli("info", path, "--format", "json", "--no-cache")
    took = time.perf_counter() - start
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert [s["events"] for s in run["sources"]] == [1]
    return took


def test_thousands_of_members_and_one_trace(tmp_path):
    path = tmp_path / "many.tar"
    with tarfile.open(path, "w") as tf:
        data = json.dumps(DOC).encode()
        info = tarfile.TarInfo("run/trace.json")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        for i in range(5_000):
            info = tarfile.TarInfo(f"run/junk/{i // 100}/f{i:05d}.txt")
            info.size = 1
            tf.addfile(info, io.BytesIO(b"x"))
    assert _info_finds_the_trace(path) < 10  # about 0.5 s here; quadratic would take minutes


def test_a_hundred_thousand_members_and_one_trace(tmp_path):
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("run/trace.json", json.dumps(DOC))
        for i in range(100_000):
            z.writestr(f"run/junk/{i // 1000}/f{i:06d}.txt", b"x")
    assert _info_finds_the_trace(path) < 60  # about 8 s here
