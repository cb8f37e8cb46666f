"""Write a synthetic Kineto trace of about a given size, for timing `traceana gaps`.

    .venv/bin/python bench/gen_kineto.py 10 /tmp/trace-10mb.json
    .venv/bin/python bench/gen_kineto.py 100 /tmp/trace-100mb.json.gz --gzip

The trace looks like one rank of a torch.profiler capture: ProfilerStep#N annotations on the
main thread, each holding nested cpu_ops (aten::linear > aten::addmm, ...) with External id,
Input Dims and Input type args; cudaLaunchKernel runtime calls with a correlation id; kernels
on 4 streams of GPU 0 with Kineto's kernel args (grid, block, registers, occupancy, ...);
some cudaMemcpyAsync calls with their gpu_memcpy; and the ac2g s/f flow pair of every launch,
its id equal to the runtime call's correlation. Times are µs after baseTimeNanoseconds with
3 decimals, one event per line, as Kineto writes them. The same arguments give the same bytes
(seeded generator). SIZE_MB is the uncompressed size; generation stops at the first step
boundary past it. Results: docs/benchmarks.md.
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
    """ns after BASE_NS as Kineto's µs with 3 decimals."""
    return f"{ns / 1000:.3f}"


def dumps(args: dict) -> str:
    return json.dumps(args, separators=(", ", ": "))


class Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.t = 1_000_000  # host clock, ns after base
        self.ext = 1
        self.corr = 1
        self.ev_idx = 0
        self.seq = 0
        self.stream_free = dict.fromkeys(STREAMS, 0)  # ns when each stream's last op ends
        self.events = 0

    def x(self, cat: str, name: str, pid: int, tid: int, ts: int, dur: int, args: dict) -> str:
        self.events += 1
        return (f'{{"ph": "X", "cat": "{cat}", "name": {json.dumps(name)}, "pid": {pid}, '
                f'"tid": {tid}, "ts": {us(ts)}, "dur": {us(dur)}, "args": {dumps(args)}}},')

    def flow(self, ph: str, cid: int, pid: int, tid: int, ts: int) -> str:
        self.events += 1
        bp = ', "bp": "e"' if ph == "f" else ""
        return (f'{{"ph": "{ph}", "id": {cid}, "pid": {pid}, "tid": {tid}, "ts": {us(ts)}, '
                f'"cat": "ac2g", "name": "ac2g"{bp}}},')

    def cpu_op(self, name: str, ts: int, dur: int, dims: list, types: list, ext: int) -> str:
        self.ev_idx += 1
        return self.x("cpu_op", name, HOST_PID, HOST_TID, ts, dur, {
            "External id": ext, "Record function id": 0, "Ev Idx": self.ev_idx,
            "Input Dims": dims, "Input type": types, "Sequence number": self.seq,
            "Fwd thread id": 0})

    def launch(self, name: str, ext: int, ts: int, stream: int, device_dur: int,
               memcpy_bytes: int | None) -> list[str]:
        """A runtime call at ts, its device op on stream, and the ac2g flow pair."""
        r, corr = self.rng, self.corr
        self.corr += 1
        rt_dur = r.randint(3_000, 9_000)
        rt_name = "cudaMemcpyAsync" if memcpy_bytes else "cudaLaunchKernel"
        cbid = 51 if memcpy_bytes else 211
        lines = [self.x("cuda_runtime", rt_name, HOST_PID, HOST_TID, ts, rt_dur,
                        {"External id": ext, "cbid": cbid, "correlation": corr}),
                 self.flow("s", corr, HOST_PID, HOST_TID, ts)]
        # device op starts after the launch latency, or when the stream frees up
        start = max(ts + r.randint(4_000, 15_000), self.stream_free[stream] + r.randint(500, 3_000))
        if r.random() < 0.05:  # now and then the stream idles a while (host-bound stretch)
            start += r.randint(20_000, 200_000)
        self.stream_free[stream] = start + device_dur
        if memcpy_bytes:
            args = {"External id": ext, "device": GPU, "context": 1, "stream": stream,
                    "correlation": corr, "bytes": memcpy_bytes,
                    "memory bandwidth (GB/s)": round(memcpy_bytes / device_dur, 6)}
            lines.append(self.x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", GPU, stream,
                                start, device_dur, args))
        else:
            grid = [r.choice((64, 128, 256, 1024)), r.choice((1, 2, 16)), 1]
            args = {"External id": ext, "queued": 0, "device": GPU, "context": 1,
                    "stream": stream, "correlation": corr,
                    "registers per thread": r.choice((32, 64, 128, 255)),
                    "shared memory": r.choice((0, 8192, 49152)),
                    "blocks per SM": round(grid[0] * grid[1] / 132, 6),
                    "warps per SM": round(grid[0] * grid[1] * 4 / 132, 6),
                    "grid": grid, "block": [r.choice((128, 256, 512)), 1, 1],
                    "est. achieved occupancy %": r.randint(0, 100)}
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
        self.events += 1
        head = (f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{n}", '
                f'"pid": {HOST_PID}, "tid": {HOST_TID}, "ts": {us(step_start)}, '
                f'"dur": {us(self.t - step_start)}, "args": {{"External id": {ext}, '
                f'"Record function id": 0, "Ev Idx": {self.ev_idx}}}}},')
        # the next step starts when the GPU has caught up (the optimizer step syncs)
        self.t = max(self.t, max(self.stream_free.values())) + r.randint(10_000, 50_000)
        return [head] + body


HEADER = """{
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132,
      "sharedMemPerBlockOptin": 232448
    }
  ],
  "cupti_version": 22,
  "cuda_runtime_version": 12040,
  "cuda_driver_version": 12040,
  "trace_id": "BENCH0000000000000000000000000000",
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1, "pg_count": 1, "pg_config": [], "nccl_version": "2.20.5"},
  "traceEvents": [
"""


def footer(events: int, end_ns: int) -> str:
    meta = [
        f'{{"name": "process_name", "ph": "M", "ts": 0.000, "pid": {HOST_PID}, "tid": 0, '
        f'"args": {{"name": "python3"}}}},',
        f'{{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": {HOST_PID}, '
        f'"tid": {HOST_TID}, "args": {{"name": "thread {HOST_TID} (python3)"}}}},',
        f'{{"name": "process_name", "ph": "M", "ts": 0.000, "pid": {GPU}, "tid": 0, '
        f'"args": {{"name": "python3"}}}},',
        f'{{"name": "process_labels", "ph": "M", "ts": 0.000, "pid": {GPU}, "tid": 0, '
        f'"args": {{"labels": "GPU {GPU}"}}}},',
    ] + [
        f'{{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": {GPU}, "tid": {s}, '
        f'"args": {{"name": "stream {s} "}}}},' for s in STREAMS
    ]
    last = (f'{{"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", '
            f'"ts": {us(end_ns)}}}')
    return ("\n".join("  " + m for m in meta) + "\n  " + last + "\n  ],\n"
            '  "traceName": "bench.pt.trace.json",\n'
            '  "displayTimeUnit": "ms",\n'
            f'  "baseTimeNanoseconds": {BASE_NS}\n}}\n')


def write(out: Path, size_mb: float, seed: int = 0, gz: bool = False,
          modules_per_step: int = 200) -> tuple[int, int]:
    """Write the trace; return (uncompressed bytes, trace events)."""
    target = int(size_mb * 1_000_000)
    g = Gen(seed)
    opener = (lambda p: gzip.open(p, "wt", encoding="utf-8", compresslevel=6)) if gz else (
        lambda p: open(p, "w", encoding="utf-8"))
    written = 0
    with opener(out) as f:
        f.write(HEADER)
        written += len(HEADER)
        n = 0
        while written < target:
            chunk = "".join("  " + line + "\n" for line in g.step(n, modules_per_step))
            f.write(chunk)
            written += len(chunk.encode())
            n += 1
        tail = footer(g.events, g.t)
        f.write(tail)
        written += len(tail)
    return written, g.events + 9  # + 8 metadata records + the instant event


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
