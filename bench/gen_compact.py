"""Write a compact Kineto trace of a given number of records, for measuring peak memory.

    .venv/bin/python bench/gen_compact.py 5000000 /tmp/k5m.json

Unlike gen_kineto.py (Kineto's own layout, about 310 bytes a record, with the args of real
traces), each record here is one short line, about 118 bytes: a profile written by a tool that
keeps the records small, where the table traceana builds weighs most against the file. Every
launch is five records: an aten op with its External id, its cudaLaunchKernel with a
correlation, the kernel on GPU 0 stream 7, and the ac2g flow pair (s, f), so 5 million
records are 3 million events and 1 million kernels, with one gap of 0-10 µs before each
kernel. The same arguments give the same bytes. Results: docs/benchmarks.md, "Peak memory".
"""

from __future__ import annotations

import argparse
from pathlib import Path

BASE_NS = 1_717_000_000_000_000_000
OPS = ("aten::add", "aten::mul", "aten::mm", "aten::relu", "aten::copy_")
KERNELS = ("kadd", "kmul", "gemm", "relu", "copy")


def launch(corr: int, t: float) -> list[str]:
    """Return the five records of launch ``corr`` at ``t`` µs."""
    i, dur = corr % 5, 5 + (corr * 7) % 20
    return [
        '{"ph":"X","cat":"cpu_op","name":"%s","pid":1,"tid":1,"ts":%.3f,"dur":12.0,'
        '"args":{"External id":%d}}' % (OPS[i], t, corr),
        '{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%.3f,'
        '"dur":4.0,"args":{"correlation":%d,"External id":%d}}' % (t + 2, corr, corr),
        '{"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":7,"ts":%.3f,"dur":%.3f,'
        '"args":{"correlation":%d,"device":0,"stream":7}}' % (KERNELS[i], t + 8, dur, corr),
        '{"ph":"s","id":%d,"pid":1,"tid":1,"ts":%.3f,"cat":"ac2g","name":"ac2g"}' % (corr, t + 2),
        '{"ph":"f","id":%d,"pid":0,"tid":7,"ts":%.3f,"cat":"ac2g","name":"ac2g","bp":"e"}'
        % (corr, t + 8),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", type=int, help="how many records to write (a multiple of 5)")
    ap.add_argument("out", type=Path)
    a = ap.parse_args()
    with a.out.open("w") as f:
        f.write('{"schemaVersion":1,"baseTimeNanoseconds":%d,"traceEvents":[\n' % BASE_NS)
        t, sep = 1_000_000.0, ""
        for corr in range(1, a.records // 5 + 1):
            f.write(sep + ",\n".join(launch(corr, t)))
            sep, t = ",\n", t + 15 + corr % 11
        f.write("\n]}")


if __name__ == "__main__":
    main()
