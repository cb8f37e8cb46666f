"""Write a synthetic multi-rank Kineto run: one trace per rank, a planted straggler and slow link.

    .venv/bin/python bench/gen_ranks.py /tmp/ranks-8 --ranks 8
    .venv/bin/python bench/gen_ranks.py /tmp/ranks-256 --ranks 256 --kernels 2000 --steps 4

Each rank writes ``rank-<r>.json`` (``--gzip``: ``.json.gz``) as torch.profiler does on one
GPU: ``distributedInfo`` (backend, rank, world_size, pg_count, pg_config with each process
group's pg_name, pg_desc, backend_config, pg_size and ranks; nccl_version), ProfilerStep#N on
the main thread, and per step ``--kernels`` compute kernels (an ``aten::mm`` cpu_op, its
``cudaLaunchKernel`` with a correlation id, the kernel on stream 7 of GPU ``r % 8``), then the
step's communication, each a ``record_param_comms`` cpu_op and its NCCL kernel on stream 20
with the args real Kineto writes on both (HTA's nccl_parser_config/nccl_data and TraceLens's
mi300_resnet spell them: ``Collective name``, ``In msg nelems``, ``Out msg nelems``, ``Group
size``, ``dtype``, ``In split size``, ``Out split size``, ``Process Group Name``, ``Process Group
Description``, ``Process Group Ranks``):

- an all-reduce in the rank's tensor-parallel pair (``tp``: ranks 2k, 2k+1), then a
  send/recv to its pair (``ncclDevKernel_SendRecv``), then an all-reduce in its data-parallel
  group (the ranks of its parity), then four world all-reduces (gradient buckets);
- a collective ends on every member of its group at one instant: the last member's arrival
  plus the collective's own time (per group kind; the slow pair's send/recv ``--slow-link``
  times longer);
- every rank's step starts at one instant (the world all-reduce before it synchronised them),
  but the straggler's, ``--late-us`` later, and it computes ``--extra-us`` more per step;
- each rank's clock reads its own offset ahead (``--skew-us``: rank r's clock is r times
  that ahead; 0 by default, one host).

Beside the traces, ``truth.json``: the straggler, its late start and extra compute (ns), the
slow pair and its factor, each rank's clock offset (ns, after rank 0's), the process groups.
The same arguments give the same bytes. Results: docs/benchmarks.md ("Ranks, a rank at a
time").
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

BASE_NS = 1_717_000_000_000_000_000
T0_NS = 1_000_000_000  # ts in µs after baseTimeNanoseconds, 10 integer digits: exact in a float
KERNEL_NS = 9_000  # one compute kernel
LAUNCH_NS = 2_000  # a launch call; the host runs ahead of the GPU
GAP_NS = 1_000  # between kernels on the GPU
STEP_GAP_NS = 50_000  # between a step's last collective and the next step's start
COMM_NS = {"tp": 20_000, "p2p": 10_000, "dp": 30_000, "world": 40_000}
NELEMS = {"tp": 1 << 20, "p2p": 1 << 18, "dp": 1 << 22, "world": 1 << 23}
NCCL = {
    "allreduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "send": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
    "recv": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
}
WORLD_BUCKETS = 4
GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_tn"


def groups(n: int) -> dict[str, dict]:
    """The process groups of ``n`` ranks: the world, tensor-parallel pairs, data-parallel
    groups (one per parity), by pg_name."""
    out = {"0": {"pg_desc": "default_pg", "ranks": list(range(n)), "kind": "world"}}
    for k in range(n // 2):
        out[str(1 + k)] = {"pg_desc": f"tp_{k}", "ranks": [2 * k, 2 * k + 1], "kind": "tp"}
    for p in range(2):
        name = str(1 + n // 2 + p)
        out[name] = {"pg_desc": f"dp_{p}", "ranks": list(range(p, n, 2)), "kind": "dp"}
    return out


def group_of(pgs: dict[str, dict], kind: str, rank: int) -> str:
    return next(k for k, g in pgs.items() if g["kind"] == kind and rank in g["ranks"])


def us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def event(cat: str, name: str, pid: int, tid: int, ts: int, dur: int, args: dict) -> str:
    head = f'{{"ph": "X", "cat": "{cat}", "name": {json.dumps(name)}, "pid": {pid}, '
    return head + f'"tid": {tid}, "ts": {us(ts)}, "dur": {us(dur)}, "args": {json.dumps(args)}}}'


def comm_args(pgs: dict[str, dict], pg: str, coll: str, kind: str) -> dict:
    g = pgs[pg]
    n = NELEMS[kind]
    return {
        "Collective name": coll, "In msg nelems": n, "Out msg nelems": n,
        "Group size": len(g["ranks"]), "dtype": "BFloat16", "In split size": "[]",
        "Out split size": "[]", "Process Group Name": pg, "Process Group Description": g["pg_desc"],
        "Process Group Ranks": json.dumps(g["ranks"]).replace(",", ", ").replace(",  ", ", "),
    }  # fmt: skip


class Ranks:
    """The run being simulated: each rank's events, its GPU's and its host's cursors."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a, self.n = a, a.ranks
        self.pgs = groups(self.n)
        self.events: list[list[str]] = [[] for _ in range(self.n)]
        self.corr = [0] * self.n
        self.skew = [r * round(a.skew_us * 1000) for r in range(self.n)]

    def emit(self, r: int, cat: str, name: str, pid: int, tid: int, ts: int, dur: int,
             args: dict) -> None:  # fmt: skip
        self.events[r].append(event(cat, name, pid, tid, ts + self.skew[r], dur, args))

    def launch(self, r: int, host: int, op: str, op_args: dict) -> int:
        """An op and its launch at ``host`` on rank r: return the correlation id."""
        self.corr[r] += 1
        c = self.corr[r]
        self.emit(r, "cpu_op", op, 10_000 + r, 10_000 + r, host, LAUNCH_NS + 500, op_args)
        self.emit(r, "cuda_runtime", "cudaLaunchKernel", 10_000 + r, 10_000 + r, host + 200,
                  LAUNCH_NS, {"correlation": c})  # fmt: skip
        return c

    def compute(self, r: int, host: int, gpu: int, count: int, extra: int) -> tuple[int, int]:
        """``count`` kernels launched from ``host`` on, the first ``extra`` ns longer; return
        the host and GPU cursors after."""
        for i in range(count):
            c = self.launch(r, host, "aten::mm", {"External id": c_ext(r, self.corr[r])})
            start = max(gpu, host + LAUNCH_NS)
            k = KERNEL_NS + (extra if i == 0 else 0)
            self.emit(r, "kernel", GEMM, r % 8, 7, start, k,
                      {"device": r % 8, "stream": 7, "correlation": c})  # fmt: skip
            host, gpu = host + LAUNCH_NS + 500, start + k + GAP_NS
        return host, gpu

    def step(self, s: int, start: int) -> int:
        """Step ``s`` on every rank from ``start`` (host); return when its last collective ends."""
        host = [
            start + (self.a.late_us * 1000 if r == self.a.straggler else 0) for r in range(self.n)
        ]
        gpu, first = list(host), list(host)
        plan = [("tp", "allreduce"), ("p2p", "send"), ("dp", "allreduce")]
        plan += [("world", "allreduce")] * WORLD_BUCKETS
        per = max(1, self.a.kernels // len(plan))
        for j, (kind, coll) in enumerate(plan):
            for r in range(self.n):
                late = r == self.a.straggler and j == 0
                extra = self.a.extra_us * 1000 if late else 0
                host[r], gpu[r] = self.compute(r, host[r], gpu[r], per, extra)
            self.collective(kind, coll, host, gpu)
        for r in range(self.n):  # the step's span on the host: from its start to its last launch
            pid = 10_000 + r
            self.emit(r, "user_annotation", f"ProfilerStep#{s}", pid, pid, first[r],
                      host[r] - first[r], {})  # fmt: skip
        return max(gpu)

    def collective(self, kind: str, coll: str, host: list[int], gpu: list[int]) -> None:
        """One collective on every rank's group of ``kind``: each member's kernel from its
        arrival to the group's common end."""
        arrive = [max(gpu[r], host[r] + LAUNCH_NS) for r in range(self.n)]
        for r in range(self.n):
            pg = group_of(self.pgs, "tp" if kind == "p2p" else kind, r)
            members = self.pgs[pg]["ranks"]
            dur = COMM_NS[kind]
            if kind == "p2p" and sorted(members) == sorted(self.a.slow_pair):
                dur *= self.a.slow_link
            end = max(arrive[m] for m in members) + dur
            name = coll if kind != "p2p" else ("send" if r == members[0] else "recv")
            args = comm_args(self.pgs, pg, name, "tp" if kind == "p2p" else kind)
            c = self.launch(r, host[r], "record_param_comms", {**args, "Rank": r})
            self.emit(r, "kernel", NCCL[name], r % 8, 20, arrive[r], end - arrive[r],
                      {**args, "device": r % 8, "stream": 20, "correlation": c})  # fmt: skip
            host[r], gpu[r] = host[r] + LAUNCH_NS + 500, end + GAP_NS

    def truth(self, ends: list[int]) -> dict:
        a = self.a
        return {
            "ranks": self.n, "steps": list(range(1, a.steps + 1)), "straggler": a.straggler,
            "late_start_ns": a.late_us * 1000, "extra_compute_ns": a.extra_us * 1000,
            "slow_pair": list(a.slow_pair), "slow_link_factor": a.slow_link,
            "clock_offsets_ns": {str(r): self.skew[r] - self.skew[0] for r in range(self.n)},
            "process_groups": {k: {"desc": g["pg_desc"], "ranks": g["ranks"]}
                               for k, g in self.pgs.items()},
            "step_ends_ns": ends,
        }  # fmt: skip


def c_ext(r: int, c: int) -> int:
    return r * 10_000_000 + c


def header(sim: Ranks, r: int) -> dict:
    pg_config = [
        {"pg_name": k, "pg_desc": g["pg_desc"], "backend_config": "cuda:nccl",
         "pg_size": len(g["ranks"]), "ranks": g["ranks"]}
        for k, g in sim.pgs.items() if r in g["ranks"]
    ]  # fmt: skip
    info = {"backend": "nccl", "rank": r, "world_size": sim.n, "pg_count": len(pg_config),
            "pg_config": pg_config, "nccl_version": "2.21.5"}  # fmt: skip
    return {"schemaVersion": 1, "deviceProperties": [], "distributedInfo": info}


def write(folder: Path, sim: Ranks, gz: bool) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for r in range(sim.n):
        head = json.dumps(header(sim, r))[:-1]
        tail = (
            f'"traceName": "rank-{r}", "displayTimeUnit": "ms", "baseTimeNanoseconds": {BASE_NS}}}'
        )
        text = head + ', "traceEvents": [\n' + ",\n".join(sim.events[r]) + "\n], " + tail
        path = folder / f"rank-{r}.json{'.gz' if gz else ''}"
        data = text.encode()
        path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
        out.append(path)
        sim.events[r] = []
    return out


def generate(a: argparse.Namespace) -> dict:
    """Write the run ``a`` describes; return its truth (also written as truth.json)."""
    sim = Ranks(a)
    start, ends = T0_NS, []
    for s in range(1, a.steps + 1):
        end = sim.step(s, start)
        ends.append(end)
        start = end + STEP_GAP_NS
    truth = sim.truth(ends)
    write(a.out, sim, a.gzip)
    (a.out / "truth.json").write_text(json.dumps(truth, indent=1))
    return truth


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", type=Path, help="the run's folder")
    p.add_argument("--ranks", type=int, default=8, help="ranks (even)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--kernels", type=int, default=70, help="compute kernels per rank and step")
    p.add_argument("--straggler", type=int, default=3)
    p.add_argument("--late-us", type=int, default=250, help="the straggler's late start")
    p.add_argument("--extra-us", type=int, default=0, help="the straggler's extra compute/step")
    p.add_argument("--slow-pair", type=lambda t: tuple(map(int, t.split(","))), default=(4, 5))
    p.add_argument("--slow-link", type=int, default=20, help="the slow pair's send/recv factor")
    p.add_argument("--skew-us", type=float, default=0.0, help="rank r's clock r times this ahead")
    p.add_argument("--gzip", action="store_true")
    return p


if __name__ == "__main__":
    args = parser().parse_args()
    if args.ranks % 2 or args.ranks < 2:
        raise SystemExit("--ranks must be even")
    truth = generate(args)
    size = sum(f.stat().st_size for f in args.out.glob("rank-*"))
    print(f"{args.out}: {args.ranks} ranks, {size / 1e6:.1f} MB, straggler {truth['straggler']}")
