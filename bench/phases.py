"""Where `traceana gaps` spends its time on one Kineto trace: each phase timed in one process.

    .venv/bin/python bench/phases.py /tmp/k100.json

Makes the library calls the command makes, one phase at a time, and prints each phase's
seconds and the peak resident memory so far (VmHWM). The scan is timed alone first, then the
whole load again (so the load row includes a second scan). Results: docs/benchmarks.md.
"""

import sys
import time

T=time.perf_counter()
from trace_analyzer.inputs.discover import discover
from trace_analyzer.loading import profile as P
from trace_analyzer.questions.gaps.analysis import gaps, gaps_runs
from trace_analyzer.readers import kineto
from trace_analyzer.render import RENDERERS
from trace_analyzer.render.json import render
from trace_analyzer.render.view import View


def rss():
    d = dict(l.split(":",1) for l in open("/proc/self/status"))
    return int(d["VmHWM"].split()[0])//1024
print(f"import {time.perf_counter()-T:.2f}")
path = sys.argv[1]
run = discover(path)[0]; src = run.sources[0]
t=time.perf_counter(); meta, raw = kineto.scan(src.path); ts=time.perf_counter()-t; print(f"scan (blocks -> raw table) {ts:.2f}  peak {rss()} MB")
t=time.perf_counter(); r = kineto._result(src, meta, raw, 0); print(f"label/flows/steps {time.perf_counter()-t:.2f}  peak {rss()} MB")
del raw, r
t=time.perf_counter(); (p,) = P.read_parts(run); tr=time.perf_counter()-t; print(f"whole load again (scan+label+dedup+sort) {tr:.2f}  peak {rss()} MB")
t=time.perf_counter(); e = P.link(p.events); tl=time.perf_counter()-t; print(f"link {tl:.2f} = {tl/ts:.2f}x scan  peak {rss()} MB")
t=time.perf_counter(); g = gaps(p); print(f"gaps {time.perf_counter()-t:.2f}  peak {rss()} MB  ({g.gaps.height} lane gaps, {g.device_gaps.height} device gaps)")
t=time.perf_counter(); res = gaps_runs([g], path); s = render(res); print(f"json render {time.perf_counter()-t:.2f}  ({len(s)/1e6:.0f} MB)  peak {rss()} MB")
t=time.perf_counter(); s = RENDERERS["table"](res, options=View(by="device", top=10)); print(f"table render {time.perf_counter()-t:.2f}")
