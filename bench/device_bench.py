"""Time and peak memory of `traceana engines` on a large device-profile export, beside reading
the same Parquet tables with polars alone in the same run (the peer: what holding them costs).

The export is the compiled RMSNorm fixture's (fixtures/rmsnorm_compiled/device_profiles/),
repeated COPIES times one after the other: every timed table shifted by the profile's span
per copy, one execution per copy in ExecutionInfo (the same NEFF), Metadata and Summary as
they are (the Summary comparison then reports mismatches: expected, the totals grew).

    .venv/bin/python bench/device_bench.py --copies 2000 [--repeat 2]

Each command is its own process, its peak its own VmHWM (bench/peak.py). Results:
docs/benchmarks.md, "`traceana engines` on a large device profile".
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import polars as pl
from peak import REPO, TRACEANA, measure

FIXTURE = next((REPO / "fixtures" / "rmsnorm_compiled" / "device_profiles").glob("*_session_*"))
TIMED = {  # table -> its time columns
    "Instruction": ("start_ts", "end_ts"),
    "ActiveTime": ("start_ts", "end_ts"),
    "DmaPacketAggregated": ("start_ts", "end_ts"),
    "Throttle": ("timestamp",),
    "ExecutionInfo": ("execution_start_ts", "execution_end_ts"),
}
POLARS = (
    "import sys, glob, polars as pl; "
    "[pl.read_parquet(f) for f in glob.glob(sys.argv[1] + '/*.parquet')]"
)


def build(copies: int, out: Path) -> int:
    """Write the export repeated ``copies`` times to ``out``; return its instruction count."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ins = pl.read_parquet(FIXTURE / "Instruction.parquet")
    span = int(ins["end_ts"].max()) - int(ins["start_ts"].min()) + 10_000
    for f in FIXTURE.glob("*.parquet"):
        table = f.stem
        df = pl.read_parquet(f)
        if table in TIMED:
            parts = []
            for k in range(copies):
                shifted = df.with_columns(pl.col(c) + k * span for c in TIMED[table])
                if table == "ExecutionInfo":
                    shifted = shifted.with_columns(execution_index=pl.lit(k, pl.Int32))
                parts.append(shifted)
            df = pl.concat(parts)
        df.write_parquet(out / f.name)
    return ins.height * copies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("/tmp/device_bench") / FIXTURE.name)
    a = ap.parse_args()
    n = build(a.copies, a.out)
    mb = sum(f.stat().st_size for f in a.out.glob("*.parquet")) / 1e6
    print(f"{a.out}: {n:,} instructions, {a.copies:,} executions, {mb:,.1f} MB of Parquet")
    print("| command | seconds | peak MiB |")
    print("|---|---:|---:|")
    rows = [
        ("traceana engines --format json", TRACEANA,
         ["engines", str(a.out), "--format", "json", "-o", str(a.out.parent / "out.json")]),
        ("polars.read_parquet, every table", POLARS, [str(a.out)]),
    ]  # fmt: skip
    for name, code, args in rows:
        for _ in range(a.repeat):
            seconds, peak = measure(code, args)
            print(f"| {name} | {seconds:.2f} | {peak:,} |")


if __name__ == "__main__":
    main()
