"""Write a synthetic Kineto trace of about a given size, for timing `traceana gaps`.

    .venv/bin/python bench/gen_kineto.py 10 /tmp/trace-10mb.json
    .venv/bin/python bench/gen_kineto.py 100 /tmp/trace-100mb.json.gz --gzip

The trace looks like one rank of a torch.profiler capture: ProfilerStep#N annotations on the
main thread, each holding nested cpu_ops (aten::linear > aten::addmm, ...) with External id,
Sequence number, Input type and Input Dims args; cudaLaunchKernel runtime calls with a
correlation id; kernels on 4 streams of GPU 0 with Kineto's kernel args (grid, block,
registers, occupancy, ...); some cudaMemcpyAsync calls with their gpu_memcpy; and the ac2g s/f
flow pair of every launch, its id equal to the runtime call's correlation.

The layout is the one libkineto's ChromeTraceLogger wrote in 2024 (the kind of HTA's test
traces nccl_parser_config/nccl_data, triton_example and amd_trace): the file opens with a
newline; each record is a newline, `  {`, its lines, a newline and `  },`. An X event is
`"ph", "cat", "name", "pid", "tid"` on one line, `"ts", "dur"` on the next, then
`"args": {`, the args on one line indented by 6 (the External id, then the op's metadata, with
the 6-space gaps Kineto leaves where its metadata templates had line breaks: older Kineto,
e.g. critical_path/alexnet, kept those breaks), and `    }`. A flow is two lines (`"ph", "id",
"pid", "tid", "ts"`, then `"cat", "name"` and, on the f end, `"bp": "e"`). After the events come
the process and thread metadata (process_name, process_labels, process_sort_index,
thread_name, thread_sort_index), the profiler's Trace span, the Iteration Start and Record
Window End instant events, `  ],`, "traceName", "displayTimeUnit", "baseTimeNanoseconds" and
a `}` with no newline after it. Times are µs after baseTimeNanoseconds with 3 decimals,
written from integer ns as Kineto does, plus a constant so that they have the 13 integer
digits of real traces. Unlike Kineto, which writes all CPU ops first and then the CUPTI
buffers, the events come in program order within each step (an op, its runtime call, the
s flow, the kernel, the f flow). The same arguments give the same bytes (seeded generator). SIZE_MB is the
uncompressed size; generation stops at the first step boundary past it. Results:
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from pathlib import Path

HOST_PID = 2417
HOST_TID = 2417
GPU = 0
STREAMS = (7, 13, 17, 21)
BASE_NS = 1_717_000_000_000_000_000
# The profiler start, in ns after BASE_NS. Kineto's ts are relative to baseTimeNanoseconds yet
# have 13 integer digits in µs (its clocks differ); this gives the synthetic ts the same width.
T0_NS = 4_203_669_603_018_756

# (outer op, [(inner op, kernel, input dims, input types)])
MODULES = [
    ("aten::linear", [
        ("aten::addmm", "ampere_sgemm_128x64_tn", [[32, 1024], [1024, 4096], []],
         ["float", "float", "Scalar"]),
    ]),
    ("aten::layer_norm", [
        ("aten::native_layer_norm",
         "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
         "(int, float, float const*, float const*, float const*, float*, float*, float*)",
         [[32, 4096], [], [4096], [4096], []], ["float", "", "float", "float", "Scalar"]),
    ]),
    ("aten::gelu", [
        ("aten::gelu",
         "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl"
         "(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::"
         "{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >"
         "(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)"
         "::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
         "{lambda(float)#1}, at::detail::Array<char*, 2>)",
         [[32, 4096], []], ["float", "String"]),
    ]),
    ("aten::dropout", [
        ("aten::native_dropout",
         "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, "
         "unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<float const, unsigned int>, "
         "at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<bool, "
         "unsigned int>, unsigned int, float, at::PhiloxCudaState)",
         [[32, 4096], [], []], ["float", "Scalar", "Scalar"]),
    ]),
    ("aten::add_", [
        ("aten::add_",
         "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
         "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
         "at::detail::Array<char*, 3>)",
         [[32, 4096], [32, 4096], []], ["float", "float", "Scalar"]),
    ]),
    ("aten::softmax", [
        ("aten::_softmax",
         "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, "
         "false>(float*, float const*, int, int, int, bool const*, int, bool)",
         [[32, 16, 128, 128], [], []], ["float", "Scalar", "Scalar"]),
    ]),
]


def us(ns: int) -> str:
    """ns as Kineto's µs with 3 decimals ({ns / 1000}.{ns % 1000:03})."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def ts_us(ns: int) -> str:
    """A time, ns after the profiler start, as Kineto's ts (µs after baseTimeNanoseconds)."""
    return us(T0_NS + ns)


# ChromeTraceLogger::handleActivity's record, with the args block it builds when there are args.
X_EVENT = ('\n  {{\n    "ph": "X", "cat": "{}", "name": {}, "pid": {}, "tid": {},'
           '\n    "ts": {}, "dur": {},\n    "args": {{\n      {}\n    }}\n  }},')
# ChromeTraceLogger::handleLink: only the flow end names its binding point.
FLOW = ('\n  {{\n    "ph": "{}", "id": {}, "pid": {}, "tid": {}, "ts": {},'
        '\n    "cat": "ac2g", "name": "ac2g"{}\n  }},')
GAP = ",      "  # where Kineto's metadata templates had a line break (it strips the \n)


def jlist(v: list) -> str:
    return json.dumps(v)  # [[32, 1024], [1024, 4096], []], as Kineto writes lists


class Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.t = 1_000_000  # host clock, ns after the profiler start
        self.ext = 1
        self.corr = 1
        self.ev_idx = 0
        self.seq = 0
        self.stream_free = dict.fromkeys(STREAMS, 0)  # ns when each stream's last op ends
        self.events = 0
        self.names: dict[str, str] = {}  # name -> its JSON string

    def x(self, cat: str, name: str, pid: int, tid: int, ts: int, dur: int, args: str) -> str:
        self.events += 1
        q = self.names.get(name)
        if q is None:
            q = self.names[name] = json.dumps(name)
        return X_EVENT.format(cat, q, pid, tid, ts_us(ts), us(dur), args)

    def flow(self, ph: str, cid: int, pid: int, tid: int, ts: int) -> str:
        self.events += 1
        return FLOW.format(ph, cid, pid, tid, ts_us(ts), ', "bp": "e"' if ph == "f" else "")

    def cpu_op(self, name: str, ts: int, dur: int, dims: list, types: list, ext: int) -> str:
        self.ev_idx += 1
        # torch's order: Sequence number and Fwd thread id (ops with autograd), Record
        # function id, the inputs, Ev Idx; the External id is glued on by Kineto, no space.
        return self.x("cpu_op", name, HOST_PID, HOST_TID, ts, dur,
                      f'"External id": {ext},"Sequence number": {self.seq}, "Fwd thread id": 0, '
                      f'"Record function id": 0, "Input type": {jlist(types)}, '
                      f'"Input Dims": {jlist(dims)}, "Ev Idx": {self.ev_idx}')

    def launch(self, name: str, ext: int, ts: int, stream: int, device_dur: int,
               memcpy_bytes: int | None) -> list[str]:
        """A runtime call at ts, its device op on stream, and the ac2g flow pair."""
        r, corr = self.rng, self.corr
        self.corr += 1
        rt_dur = r.randint(3_000, 9_000)
        rt_name = "cudaMemcpyAsync" if memcpy_bytes else "cudaLaunchKernel"
        cbid = 41 if memcpy_bytes else 211
        lines = [self.x("cuda_runtime", rt_name, HOST_PID, HOST_TID, ts, rt_dur,
                        f'"External id": {ext}{GAP}"cbid": {cbid}, "correlation": {corr}'),
                 self.flow("s", corr, HOST_PID, HOST_TID, ts)]
        # device op starts after the launch latency, or when the stream frees up
        start = max(ts + r.randint(4_000, 15_000), self.stream_free[stream] + r.randint(500, 3_000))
        if r.random() < 0.05:  # now and then the stream idles a while (host-bound stretch)
            start += r.randint(20_000, 200_000)
        self.stream_free[stream] = start + device_dur
        if memcpy_bytes:
            args = (f'"External id": {ext}{GAP}"device": {GPU}, "context": 1{GAP}'
                    f'"stream": {stream}, "correlation": {corr}{GAP}"bytes": {memcpy_bytes}, '
                    f'"memory bandwidth (GB/s)": {memcpy_bytes / device_dur!r}')
            lines.append(self.x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", GPU, stream,
                                start, device_dur, args))
        else:
            grid = [r.choice((64, 128, 256, 1024)), r.choice((1, 2, 16)), 1]
            regs = r.choice((32, 64, 128, 255))
            shmem = r.choice((0, 8192, 49152))
            block = r.choice((128, 256, 512))
            occupancy = r.randint(0, 100)
            blocks = grid[0] * grid[1]
            args = (f'"External id": {ext}{GAP}"queued": 0, "device": {GPU}, "context": 1{GAP}'
                    f'"stream": {stream}, "correlation": {corr}{GAP}'
                    f'"registers per thread": {regs}{GAP}"shared memory": {shmem}{GAP}'
                    f'"blocks per SM": {blocks / 132:.6f}{GAP}'
                    f'"warps per SM": {blocks * 4 / 132:.6f}{GAP}'
                    f'"grid": [{grid[0]}, {grid[1]}, 1]{GAP}"block": [{block}, 1, 1]{GAP}'
                    f'"est. achieved occupancy %": {occupancy}')
            lines.append(self.x("kernel", name, GPU, stream, start, device_dur, args))
        lines.append(self.flow("f", corr, GPU, stream, start))
        return lines

    def step(self, n: int, modules: int) -> list[str]:
        """One ProfilerStep#n: `modules` module calls on the main thread."""
        r = self.rng
        step_start = self.t
        self.t += r.randint(2_000, 10_000)
        body: list[str] = []
        for m in range(modules):
            outer, inner = MODULES[r.randrange(len(MODULES))]
            stream = STREAMS[0] if r.random() < 0.7 else r.choice(STREAMS[1:])
            outer_ext, outer_start = self.ext, self.t
            self.ext += 1
            self.seq += 1
            self.t += r.randint(1_000, 4_000)
            children: list[str] = []
            if r.random() < 0.08:  # a host-to-device copy before the op
                ext, ts = self.ext, self.t
                self.ext += 1
                nbytes = r.choice((4096, 65536, 1 << 20, 16 << 20))
                children += self.launch("", ext, ts, stream, 2_000 + nbytes // 20, nbytes)
                self.t += r.randint(6_000, 12_000)
            for name, kernel, dims, types in inner:
                ext, ts = self.ext, self.t
                self.ext += 1
                self.t += r.randint(2_000, 6_000)
                launches = self.launch(kernel, ext, self.t, stream, r.randint(3_000, 400_000), None)
                self.t += r.randint(5_000, 12_000)
                children.append(self.cpu_op(name, ts, self.t - ts, dims, types, ext))
                children += launches
                self.t += r.randint(1_000, 3_000)
            self.t += r.randint(1_000, 5_000)
            body.append(self.cpu_op(outer, outer_start, self.t - outer_start, inner[0][2],
                                    inner[0][3], outer_ext))
            body += children
        self.t += r.randint(5_000, 30_000)
        ext = self.ext
        self.ext += 1
        head = self.x("user_annotation", f"ProfilerStep#{n}", HOST_PID, HOST_TID, step_start,
                      self.t - step_start,
                      f'"External id": {ext},"Record function id": 0, "Ev Idx": {self.ev_idx}')
        # the next step starts when the GPU has caught up (the optimizer step syncs)
        self.t = max(self.t, max(self.stream_free.values())) + r.randint(10_000, 50_000)
        return [head] + body


# handleTraceStart: the file opens with a newline; deviceProperties as torch formats them.
HEADER = """
{
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472
    }
  ],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1, "pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 1, "ranks": [0]}], "nccl_version": "2.20.5"},
  "cupti_version": 22,
  "cuda_runtime_version": 12040,
  "cuda_driver_version": 12040,
  "trace_id": "BENCH0000000000000000000000000000",
  "traceEvents": ["""

META = ('\n  {{\n    "name": "{}", "ph": "M", "ts": {}, "pid": {}, "tid": {},'
        '\n    "args": {{\n      "{}": {}\n    }}\n  }},')
FOOTER_RECORDS = 20  # the records footer() writes


def footer(end_ns: int) -> str:
    """Metadata, the profiler span, its iteration marker, Record Window End, the tail."""
    t0 = ts_us(0)
    meta = []
    # handleDeviceInfo, for the host process then the GPU
    for pid, label, sort in ((HOST_PID, "CPU", HOST_PID), (GPU, f"GPU {GPU}", 5_000_000 + GPU)):
        meta += [META.format("process_name", t0, pid, 0, "name", '"python3"'),
                 META.format("process_labels", t0, pid, 0, "labels", f'"{label}"'),
                 META.format("process_sort_index", t0, pid, 0, "sort_index", sort)]
    # handleResourceInfo, for each stream then the host thread
    for pid, tid, name in ([(GPU, s, f"stream {s} ") for s in STREAMS]
                           + [(HOST_PID, HOST_TID, f"thread {HOST_TID} (python3)")]):
        meta += [META.format("thread_name", t0, pid, tid, "name", f'"{name}"'),
                 META.format("thread_sort_index", t0, pid, tid, "sort_index", tid)]
    # handleTraceSpan + addIterationMarker, then finalizeTrace
    return ("".join(meta)
            + f'\n  {{\n    "ph": "X", "cat": "Trace", "ts": {t0}, "dur": {us(end_ns)},'
              '\n    "pid": "Spans", "tid": "PyTorch Profiler",'
              '\n    "name": "PyTorch Profiler (0)",'
              '\n    "args": {\n      "Op count": 0\n    }\n  },'
            + f'\n  {{\n    "name": "process_sort_index", "ph": "M", "ts": {t0},'
              '\n    "pid": "Spans", "tid": 0,'
              '\n    "args": {\n      "sort_index": 536870912\n    }\n  },'
            + '\n  {\n    "name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",'
              f'\n    "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": {t0}\n  }},'
            + '\n  {\n    "name": "Record Window End", "ph": "i", "s": "g",'
              f'\n    "pid": "", "tid": "", "ts": {ts_us(end_ns)}\n  }}\n  ],'
            + '\n  "traceName": "bench.pt.trace.json",'
              '\n  "displayTimeUnit": "ms",'
              f'\n  "baseTimeNanoseconds": {BASE_NS}\n}}')


def write(out: Path, size_mb: float, seed: int = 0, gz: bool = False,
          modules_per_step: int = 200) -> tuple[int, int]:
    """Write the trace; return (uncompressed bytes, trace events)."""
    target = int(size_mb * 1_000_000)
    g = Gen(seed)
    opener = (lambda p: gzip.open(p, "wt", encoding="ascii", compresslevel=6)) if gz else (
        lambda p: open(p, "w", encoding="ascii", newline="\n"))
    written = 0
    with opener(out) as f:
        f.write(HEADER)
        written += len(HEADER)
        n = 0
        while written < target:
            chunk = "".join(g.step(n, modules_per_step))
            f.write(chunk)
            written += len(chunk)  # all ASCII (json.dumps escapes the names)
            n += 1
        tail = footer(g.t)
        f.write(tail)
        written += len(tail)
    return written, g.events + FOOTER_RECORDS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("size_mb", type=float, help="uncompressed size to reach, in MB (10^6 bytes)")
    ap.add_argument("out", type=Path)
    ap.add_argument("--gzip", action="store_true", help="gzip the output (name it .json.gz)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modules-per-step", type=int, default=200,
                    help="module calls per ProfilerStep (one kernel launch each, 8%% with a copy)")
    args = ap.parse_args()
    size, events = write(args.out, args.size_mb, args.seed, args.gzip, args.modules_per_step)
    print(f"{args.out}: {size / 1e6:.1f} MB uncompressed, {events} records", file=sys.stderr)


if __name__ == "__main__":
    main()
