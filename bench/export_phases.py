"""Where `traceana export` spends its time and memory on one trace: each phase timed in one
process, with the process's resident memory after it and its peak so far (VmRSS, VmHWM).

    .venv/bin/python bench/export_phases.py /tmp/k457.json [--traceana-root DIR]

Makes the library calls the command makes (`--no-cache`): the run loaded with its args, its
gaps, its critical path, then the document and its write to a temporary file (removed). A
checkout from before the document was streamed (`--traceana-root`, a `git worktree` or
`git archive` of an older commit) builds the whole document, then writes it. Results:
docs/benchmarks.md, "Export: streaming the document".
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PHASES = r"""
import sys, tempfile, time
from pathlib import Path
from trace_analyzer.loading import profile as P
from trace_analyzer.questions.critical.analysis import critical
from trace_analyzer.questions.export import perfetto
from trace_analyzer.questions.gaps.analysis import gaps

def phase(name, t):
    d = dict(line.split(":", 1) for line in open("/proc/self/status"))
    rss, hwm = (int(d[k].split()[0]) // 1024 for k in ("VmRSS", "VmHWM"))
    print(f"| {name} | {time.perf_counter() - t:.2f} | {rss:,} | {hwm:,} |", flush=True)
    return time.perf_counter()

path = sys.argv[1]
t = time.perf_counter()
try:  # as the command loads it: a Kineto trace's args read as they are written (LATER)
    from trace_analyzer.model.schema import LATER as ARGS
except ImportError:
    ARGS = True
profile = P.load(path, args=ARGS)
t = phase(f"load, args={ARGS}", t)
g = gaps(profile)
t = phase("gaps", t)
c = critical(profile)
t = phase("critical path", t)
with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "out.json"
    if hasattr(perfetto, "document"):  # made as it is written
        doc = perfetto.document(profile, g, source=path, critical=c)
        t = phase("document: tracks laid out, flows decided", t)
        perfetto.write(doc, out)
        t = phase("records made and written, a batch at a time", t)
    else:
        whole = perfetto.build(profile, g, source=path, critical=c)
        t = phase("document built (every record a dict)", t)
        perfetto.write(whole, out)
        t = phase("written (one orjson.dumps)", t)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--traceana-root", type=Path, default=REPO)
    a = ap.parse_args()
    print(f"{a.trace} ({a.trace.stat().st_size / 1e6:,.1f} MB), {a.traceana_root.name}")
    print("| phase | seconds | resident MiB after | peak MiB so far |")
    print("|---|---:|---:|---:|", flush=True)
    # run in the checkout: `python -c` puts the working directory first on the path
    subprocess.run([sys.executable, "-c", PHASES, str(a.trace)], check=True, cwd=a.traceana_root)


if __name__ == "__main__":
    main()
