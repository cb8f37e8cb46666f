"""Issue 34's figures: traceana against its floor and its peers, in one run, as ratios.

    .venv/bin/python bench/issue34.py --old /work/wt-old --runs 2 > /tmp/issue34.md

Every command is a fresh process started from the system's temporary folder; for each it
records the wall seconds and the child's peak RSS (``os.wait4``). Within a run the commands
of a case alternate (new, old, floor or peers, new, old, ...), so that the machine's drift over
the run (2 cores, shared) falls on all of them alike: the ratio between two commands of one
run is the figure that carries over to another machine, not the seconds.

Cases (inputs under --dir, /tmp/scale by default; bench/scaling.py, gen_kineto.py and
gen_metadata_heavy.py write them):
- ``neuron-<N>``: ``traceana gaps --no-cache`` (table out) beside the floor, bench/floor.py
  (per-lane device gaps in plain polars, its whole process: the interpreter and polars too).
- ``kineto-100.json``, ``kineto-1000.json``: ``traceana gaps --no-cache`` with the table and
  with ``--format json`` out, beside ``json.load`` and ``orjson.loads`` of the file and, with
  --hta, HolisticTraceAnalysis 0.5.0's idle time breakdown (bench/run.py's script), and with
  --perfetto, Perfetto's own trace processor loading the file (tests/perfetto_tp.py: the
  UI's wasm engine under Node; its time is the load alone, from a started engine, and its
  peak is not measured: n/a).
- ``metadata-heavy.json`` (the stand-in for the real 87 MB MTIA trace): table out, beside
  ``json.load``.

--warm GIB (default 8) first writes to that much fresh memory and lets it go: on a virtual
machine whose memory its host backs only when first touched, a fresh machine's page faults
cost several times what they cost later (the 10 M case: 13.4 s, 7.3 s of it in the kernel, on
a machine started minutes before; 11.4 s, 4.2 s in the kernel, once 5 GB had been touched).
Warmed first, the first runs of a bench measure what the later ones do. 0: no warming.

--old runs the same traceana commands from another checkout (a ``git worktree`` of an
earlier commit, its compiled extensions copied in) for a before/after column. Results:
docs/benchmarks.md, "Performance, round three".
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = Path(sys.executable)
TRACEANA = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"
PEERS = {
    "json.load": "import json, sys; json.load(open(sys.argv[1], 'rb'))",
    "orjson.loads": "import orjson, sys; orjson.loads(open(sys.argv[1], 'rb').read())",
}


def measure(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Return the wall seconds and peak RSS (MB) of one command; exit 0 or 1 is required."""
    t = time.perf_counter()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, cwd=tempfile.gettempdir(),
                             env=env)
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"{' '.join(map(str, cmd))} failed: {err.strip()[-400:]}")
    return wall, ru.ru_maxrss / 1024


def warm(gib: float) -> None:
    """Write one byte to every page of ``gib`` GiB of fresh anonymous memory, then free it, in
    a child process: the peak of every later child (``wait4``) would otherwise start at this
    process's (Linux keeps it across the children's exec)."""
    code = (
        "import mmap, sys\n"
        "size, page = int(float(sys.argv[1]) * 2**30), mmap.PAGESIZE\n"
        "with mmap.mmap(-1, size) as m:\n"
        "    for at in range(0, size, page):\n"
        "        m[at] = 1\n"
    )
    if gib > 0:
        subprocess.run([str(PY), "-c", code, str(gib)], check=True)


def traceana(root: Path) -> tuple[list[str], dict[str, str]]:
    """Return the command prefix and environment that run traceana from checkout ``root``."""
    return [str(PY), "-c", TRACEANA], {**os.environ, "PYTHONPATH": str(root)}


def perfetto_load(path: Path) -> float | None:
    """Return the seconds Perfetto's trace processor takes to load ``path``, or None."""
    sys.path.insert(0, str(REPO / "tests"))
    from perfetto_tp import Engine, missing  # the tests' engine: the UI's wasm under Node

    if missing():
        return None
    with Engine() as tp:
        t = time.perf_counter()
        tp.load(path)
        return time.perf_counter() - t


def table(title: str, rows: dict[str, list[tuple[float, float]]], base: str, mb: float = 0) -> str:
    """Return a Markdown table of ``rows`` (label: [(s, MB) per run]): the median seconds,
    the range, the peak, and each row's seconds over ``base``'s; MB/s where ``mb``."""
    ref = statistics.median(s for s, _ in rows[base])
    out = [f"\n**{title}**\n", "| command | seconds (median; runs) | peak MB |"
           + (" MB/s |" if mb else "") + f" × {base} |", "|---|---:|---:|"
           + ("---:|" if mb else "") + "---:|"]
    for label, runs in rows.items():
        s = statistics.median(r[0] for r in runs)
        peaks = [r[1] for r in runs]
        peak = "n/a" if any(p != p for p in peaks) else f"{min(peaks):,.0f}-{max(peaks):,.0f}"
        cells = [label, f"{s:.2f} ({', '.join(f'{r[0]:.2f}' for r in runs)})", peak]
        if mb:
            cells.append(f"{mb / s:.0f}")
        cells.append(f"{s / ref:.2f}")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/scale"))
    ap.add_argument("--old", type=Path, help="another checkout, for a before column")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--neuron", nargs="*", type=int, default=[1_000_000, 3_000_000, 10_000_000])
    ap.add_argument("--kineto", nargs="*", type=int, default=[100, 1000])
    ap.add_argument("--hta", help="the python of a venv with HTA 0.5.0 (bench/README.md)")
    ap.add_argument("--perfetto", action="store_true", help="Perfetto's engine on 100 MB")
    ap.add_argument("--warm", type=float, default=8, help="GiB of memory touched first")
    a = ap.parse_args()
    warm(a.warm)
    sides = {"traceana": traceana(REPO)} | ({"before": traceana(a.old)} if a.old else {})
    print(f"issue 34 bench, {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
          f"python {sys.version.split()[0]}; --runs {a.runs}")

    def run(case: dict[str, tuple[list[str], dict[str, str] | None]]) -> dict[str, list]:
        got: dict[str, list] = {k: [] for k in case}
        for _ in range(a.runs):
            for label, (cmd, env) in case.items():
                got[label].append(measure(cmd, env))
        return got

    for n in a.neuron:
        path = a.dir / f"neuron-{n}"
        if not path.exists():
            continue
        case = {f"{k} gaps": (c + ["gaps", str(path), "--no-cache"], e)
                for k, (c, e) in sides.items()}
        case["polars floor"] = ([str(PY), str(REPO / "bench/floor.py"), str(path), "--runs",
                                 "1"], None)
        print(table(f"Neuron export, {n:,} rows", run(case), "polars floor"), flush=True)
    for mb in a.kineto:
        path = a.dir / f"kineto-{mb}.json"
        if not path.exists():
            continue
        size = path.stat().st_size / 1e6
        case = {}
        for k, (c, e) in sides.items():
            case[f"{k} table"] = (c + ["gaps", str(path), "--no-cache"], e)
            case[f"{k} json"] = (c + ["gaps", str(path), "--no-cache", "--format", "json"], e)
        for label, code in PEERS.items():
            case[label] = ([str(PY), "-c", code, str(path)], None)
        got = run(case)
        if a.hta and mb <= 150:
            sys.path.insert(0, str(REPO / "bench"))
            from run import HTA_SCRIPT

            got["HTA 0.5.0 idle breakdown"] = [measure([a.hta, "-c", HTA_SCRIPT, str(path)])]
        if a.perfetto and mb <= 150:
            s = perfetto_load(path)
            if s is not None:
                got["Perfetto trace processor (load)"] = [(s, float("nan"))]
        print(table(f"Kineto {size:,.0f} MB", got, "json.load", size), flush=True)
    meta = a.dir / "metadata-heavy.json"
    if meta.exists():
        case = {f"{k} table": (c + ["gaps", str(meta), "--no-cache"], e)
                for k, (c, e) in sides.items()}
        case["json.load"] = ([str(PY), "-c", PEERS["json.load"], str(meta)], None)
        size = meta.stat().st_size / 1e6
        print(table(f"metadata-heavy stand-in, {size:,.0f} MB", run(case), "json.load", size))


if __name__ == "__main__":
    main()
