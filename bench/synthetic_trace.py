"""Write a tiny Kineto trace that exercises the HTA rules the corpus traces leave untested.

    python bench/synthetic_trace.py /tmp/hta-synth/synthetic.json
    python bench/hta_compare.py --hta-python /tmp/hta-venv/bin/python --explain \
        /tmp/hta-synth/synthetic.json

One host thread launches onto stream 7 of two GPUs (device 0 and 1, same stream number). On
device 0 the stream has: a gap under 30 µs whose launch came early (HTA kernel_wait), gaps of
30-50 µs (HTA other), a late launch (HTA host_wait), two overlapping kernels, a sub-µs kernel
at a fractional ts (HTA's rounding gives it a negative duration), a kernel with no
correlation id, a memcpy and a memset after the kernels, and a cuda_sync event; device 1's
two kernels on stream 7 come after all of that. Expected HTA result, by hand (see
bench/hta_findings.md): host_wait 130, kernel_wait -30, other 336 µs (total 436).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HOST_PID, TID = 100, 100


def kernel(name, ts, dur, device, corr, cat="kernel"):
    args = {"device": device, "stream": 7}
    if corr is not None:
        args["correlation"] = corr
    return {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": 7, "ts": ts, "dur": dur,
            "args": args}


def launch(ts, corr, name="cudaLaunchKernel"):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": HOST_PID, "tid": TID,
            "ts": ts, "dur": 4, "args": {"correlation": corr}}


def events() -> list[dict]:
    out = [{"ph": "X", "cat": "cpu_op", "name": "aten::work", "pid": HOST_PID, "tid": TID,
            "ts": 980, "dur": 720, "args": {"External id": 1}}]
    # (name, ts, dur, device, correlation, launch ts, category)
    gpu = [
        ("k1", 1000, 100, 0, 1, 990, "kernel"),
        ("k2", 1120, 50, 0, 2, 1000, "kernel"),   # 20 µs gap after k1, launched early
        ("k3", 1210, 50, 0, 3, 1010, "kernel"),   # 40 µs gap after k2
        ("k4", 1300, 100, 0, 4, 1280, "kernel"),  # launched after k3 ended: host wait
        ("k5", 1350, 100, 0, 5, 1020, "kernel"),  # overlaps k4
        ("k6", 1500.4, 0.3, 0, 6, 1030, "kernel"),  # sub-µs, fractional ts
        ("k7", 1600, 10, 0, None, None, "kernel"),  # no correlation id
        ("m1", 1700, 20, 0, 8, 1690, "gpu_memcpy"),
        ("s1", 1750, 5, 0, 9, 1040, "gpu_memset"),
        ("d1", 1800, 30, 1, 20, 1045, "kernel"),  # device 1, also stream 7, after s1
        ("d2", 1900, 30, 1, 21, 1046, "kernel"),
    ]
    for name, ts, dur, dev, corr, lts, cat in gpu:
        out.append(kernel(name, ts, dur, dev, corr, cat))
        if lts is not None:
            out.append(launch(lts, corr, "cudaMemcpyAsync" if cat == "gpu_memcpy"
                              else "cudaMemsetAsync" if cat == "gpu_memset"
                              else "cudaLaunchKernel"))
    out.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7,
                "ts": 1460, "dur": 30, "args": {"device": 0, "stream": 7}})
    return out


def main() -> int:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/hta-synth/synthetic.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"schemaVersion": 1, "distributedInfo": {"rank": 0},
           "baseTimeNanoseconds": 1700000000000000000, "traceEvents": events()}
    path.write_text(json.dumps(doc))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
