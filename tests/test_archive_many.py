"""An archive of many tiny members is walked in linear time and its one trace found.

The suite uses 5,000 members; docs/reliability.md records 100,000 (10 s, 149 MB) measured by
hand, too slow for every run.
"""

from __future__ import annotations

import io
import json
import tarfile
import time

from conftest import X, kineto, run_cli


def test_thousands_of_members_and_one_trace(tmp_path):
    doc = kineto([X("kernel", "k", 1.0, 2.0, pid=0, tid=7, device=0, stream=7)],
                 baseTimeNanoseconds=1_000_000_000)
    path = tmp_path / "many.tar"
    with tarfile.open(path, "w") as tf:
        data = json.dumps(doc).encode()
        info = tarfile.TarInfo("run/trace.json")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        for i in range(5_000):
            info = tarfile.TarInfo(f"run/junk/{i // 100}/f{i:05d}.txt")
            info.size = 1
            tf.addfile(info, io.BytesIO(b"x"))
    start = time.perf_counter()
    code, out, err = run_cli("info", path, "--format", "json", "--no-cache")
    took = time.perf_counter() - start
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert [s["events"] for s in run["sources"]] == [1]
    assert took < 10  # about 0.5 s here; quadratic walking would take minutes
