"""Write a synthetic Neuron Explorer Parquet export of about EVENTS rows, for timing `traceana gaps`.

    .venv/bin/python bench/gen_parquet.py 1000000 /tmp/neuron-1m
    .venv/bin/python bench/gen_parquet.py 10000000 /tmp/neuron-10m --cores 8 --lnc 1
    .venv/bin/traceana gaps /tmp/neuron-10m --format json -o /tmp/gaps.json

From Python (bench runners, tests): ``write(out_dir, events, seed=0) -> rows written``.

The export looks like fixtures/make_fixtures.py's (schema 7.4.0, docs/neuron-formats.md §2.1), for a
multi-process eager training job: one process (rank) per logical NeuronCore, each running
STEPS x ProfilerStep#N, each step one pass over a layer template repeated (linear/addmm,
layer_norm, gelu, add, mul, softmax). Every leaf op is laid out as the RMSNorm fixture does
it, with the same offsets:

  framework TID:<pid>   [parent op >] leaf cpu_op (flow_id [seq]) > privateuse1_runtime dispatch
  framework Stream:0    privateuse1_driver (flow_id [seq], nrt_sequence_id, neff_cache_key)
  neuron_rt NC:<r>      nrta_execute_schedule (main thread, flow_id [seq]); worker thread:
                        [nrt_tensor_write > dmem_buf_copyin,] nrt_model_submit, kbl_exec_pre,
                        kbl_exec_wait (flow_id [seq, exec_id]), kbl_exec_post
  neuron_hw NC<r>:<p>   per physical core: [nc_model_switch,] nc_exec_running (flow_id
                        [exec_id]), timestamp_sync_point

so the chain is exec_id -> nrt_sequence_id -> Stream event -> op, as in the fixture. Each op is
dispatched a random (seeded) delay after the previous execution ends, as in eager mode: mostly
a few us, sometimes tens or hundreds of us (host-bound), sometimes up to 8 us before it ends
(a runtime gap); the first op of a step copies its input to the device first (nrt_tensor_write:
a transfer gap), and a step boundary adds 0.08-0.6 ms. Every gap between executions is
positive, so each hardware lane has ``ops - 1`` gaps. Options: --cores (processes, one logical
NeuronCore each, default 4), --lnc (physical cores per logical core, default 2), --seed.

Layout under OUT_DIR (as a fixture folder, without trace.json):
  i-0123456789abcdef0_pid_<pid>/20261102_120000_000/  placeholders: ntrace.pb, trace_info.pb,
      profile_nc_<r>_session_0.ntff (one folder per rank)
  explorer/parquet/  SystemProfileEvents.parquet, or _0, _1, ... parts of about --rows-per-file
      rows each (time-ordered within a part), SystemProfileMetadata, Metadata, SchemaFields
  truth.json         what was written: rows, executions, gaps, idle time, per-name counts

Same arguments, same bytes. Generation is vectorised (numpy + polars) and done one part at a
time, so memory stays near one part's size: 10 M rows take about 20 s and 1.3 GB (2 cores).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]


def _fixtures():
    """fixtures/make_fixtures.py, for its constants, column schema and small tables."""
    spec = importlib.util.spec_from_file_location("_make_fixtures", REPO / "fixtures" / "make_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, mod)     # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return sys.modules[spec.name]


fx = _fixtures()
BASE_NS, INSTANCE, SESSION_DIR = fx.BASE_NS, fx.INSTANCE, fx.SESSION_DIR
EVENT_SCHEMA = fx.EVENT_SCHEMA
RT_OFF, RT_DUR, SCHED_OFF, SCHED_DUR, DRIVER_OFF = fx.RT_OFF, fx.RT_DUR, fx.SCHED_OFF, fx.SCHED_DUR, fx.DRIVER_OFF
SUBMIT_GAP, SUBMIT_DUR, PRE_GAP, PRE_DUR, HW_LATENCY = (fx.SUBMIT_GAP, fx.SUBMIT_DUR, fx.PRE_GAP,
                                                       fx.PRE_DUR, fx.HW_LATENCY)
WAIT_GAP, WAIT_TAIL, POST_GAP, POST_DUR, COPY_TAIL = fx.WAIT_GAP, fx.WAIT_TAIL, fx.POST_GAP, fx.POST_DUR, fx.COPY_TAIL
FIRST_OP_DELAY, STEP_TAIL, DEVICE_CLOCK_OFFSET = fx.FIRST_OP_DELAY, fx.STEP_TAIL, fx.DEVICE_CLOCK_OFFSET
FRAMEWORK_ID0, RUNTIME_ID0, SEQ_XU, SEQ0, EXEC0 = fx.FRAMEWORK_ID0, fx.RUNTIME_ID0, fx.SEQ_XU, fx.SEQ0, fx.EXEC0

PID0, STREAM = 4242, 0
CHILD_OFF, PARENT_TAIL = 3_250, 2_875                 # parent op start -> leaf start; leaf end -> parent end
# cpu_op start -> hardware start when nothing waits: dispatch, schedule, submit, pre, latency.
HW_OFF = RT_OFF + SCHED_OFF + SCHED_DUR + SUBMIT_GAP + SUBMIT_DUR + PRE_GAP + PRE_DUR + HW_LATENCY
# Host delay bounds (ns after the previous execution's end). Below -MIN_DELAY the next op's
# worker events would overlap the previous op's; a step's first op needs room for the step
# annotation's tail and head.
MIN_DELAY = 8_000
STEP_DELAY = (FIRST_OP_DELAY + STEP_TAIL + CHILD_OFF + 20_000, 600_000)
BF16 = "c10::BFloat16"

# The layer template: (leaf op, parent op or None, device us, self CPU us, input dims, types, concrete).
LAYER = [
    ("aten::native_layer_norm", "aten::layer_norm", 80, 22, [[8, 1024, 4096], [4096], [4096], [4096], []],
     [BF16, "ScalarList", BF16, BF16, "Scalar"], ["", "[4096]", "", "", "1e-05"]),
    ("aten::addmm", "aten::linear", 410, 27, [[12288], [8192, 4096], [4096, 12288], [], []],
     [BF16, BF16, BF16, "Scalar", "Scalar"], ["", "", "", "1", "1"]),
    ("aten::_softmax", "aten::softmax", 150, 18, [[8, 32, 1024, 1024], [], []],
     [BF16, "Scalar", "Scalar"], ["", "-1", "False"]),
    ("aten::addmm", "aten::linear", 180, 25, [[4096], [8192, 4096], [4096, 4096], [], []],
     [BF16, BF16, BF16, "Scalar", "Scalar"], ["", "", "", "1", "1"]),
    ("aten::add", None, 60, 16, [[8, 1024, 4096], [8, 1024, 4096], []], [BF16, BF16, "Scalar"], ["", "", "1"]),
    ("aten::native_layer_norm", "aten::layer_norm", 80, 22, [[8, 1024, 4096], [4096], [4096], [4096], []],
     [BF16, "ScalarList", BF16, BF16, "Scalar"], ["", "[4096]", "", "", "1e-05"]),
    ("aten::addmm", "aten::linear", 540, 27, [[16384], [8192, 4096], [4096, 16384], [], []],
     [BF16, BF16, BF16, "Scalar", "Scalar"], ["", "", "", "1", "1"]),
    ("aten::gelu", None, 120, 17, [[8, 1024, 16384], []], [BF16, "String"], ["", "'tanh'"]),
    ("aten::addmm", "aten::linear", 520, 27, [[4096], [8192, 16384], [16384, 4096], [], []],
     [BF16, BF16, BF16, "Scalar", "Scalar"], ["", "", "", "1", "1"]),
    ("aten::mul", None, 55, 20, [[8, 1024, 4096], []], [BF16, "Scalar"], ["", "0.5"]),
    ("aten::add", None, 60, 16, [[8, 1024, 4096], [8, 1024, 4096], []], [BF16, BF16, "Scalar"], ["", "", "1"]),
]


def _kinds() -> pl.DataFrame:
    """One row per distinct (op, shapes) of the template: names, NEFF, model id, args JSON."""
    rows, seen = [], {}
    for i, (leaf, parent, dev, cpu, dims, types, concrete) in enumerate(LAYER):
        key = fx.cache_key(fx.Op(leaf, cpu * 1000, dev * 1000, dims=dims, types=types, concrete=concrete))
        if key not in seen:
            digest = hashlib.sha256(f"bench|{key}".encode()).hexdigest()
            seen[key] = (int(digest[16:29], 16) % 10**15, f"neff_{int(digest[:16], 16)}_vnc_0.neff")
        model_id, neff = seen[key]
        # cpu_op args after "External id" and "Sequence number", in torch 2.13's key order.
        args = json.dumps({"Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": concrete,
                           "Input type": types, "Input Dims": dims}, separators=(",", ":"))[1:]
        rows.append({"kind": i, "leaf": leaf, "parent": parent, "dev_us": dev, "cpu_us": cpu,
                     "model_id": model_id, "neff": neff, "cache_key": key, "args_tail": args})
    return pl.DataFrame(rows)


def _ops(ranks: int, steps: int, seed: int) -> pl.DataFrame:
    """One row per leaf op with a device execution, every time of its chain laid out (ns)."""
    per_step = len(LAYER)
    kinds = _kinds()
    frames = []
    for r in range(ranks):
        rng = np.random.default_rng([seed, r])
        n = steps * per_step
        pos = np.arange(n) % per_step
        first = pos == 0
        dev_mean = kinds["dev_us"].to_numpy()[pos] * 1000
        dev = np.maximum(20_000, rng.normal(dev_mean, dev_mean * 0.04)).astype(np.int64)
        cpu = (kinds["cpu_us"].to_numpy()[pos] * 1000 + rng.integers(-2_000, 4_000, n)).astype(np.int64)
        # Host delay after the previous execution: mostly small, sometimes host-bound, some
        # dispatched early (runtime gap), long at a step boundary.
        u = rng.random(n)
        delay = np.where(u < 0.15, rng.integers(-MIN_DELAY, -RT_OFF, n),
                         np.where(u < 0.80, rng.integers(0, 6_000, n),
                                  np.where(u < 0.97, rng.integers(6_000, 80_000, n),
                                           rng.integers(80_000, 400_000, n))))
        delay = np.where(first, rng.integers(*STEP_DELAY, n), delay)
        copy = first | (rng.random(n) < 0.01)
        copy_ns = np.where(copy, np.where(first, rng.integers(150_000, 400_000, n),
                                          rng.integers(30_000, 120_000, n)), 0)
        lead = HW_OFF + np.where(copy, copy_ns + COPY_TAIL, 0)   # cpu_op start -> hardware start
        gap = delay + lead                                       # > 0: the host waits, eager mode
        start0 = BASE_NS + 1_000_000 + r * 3_125
        hw1 = start0 + np.cumsum(gap + dev)
        hw0 = hw1 - dev
        frames.append(pl.DataFrame({
            "rank": np.full(n, r, np.int64), "op": np.arange(n, dtype=np.int64),
            "step": np.arange(n, dtype=np.int64) // per_step, "kind": pos.astype(np.int64),
            "first": first, "c0": hw0 - lead, "cpu_ns": cpu,
            "hw0": hw0, "hw1": hw1, "copy_ns": copy_ns.astype(np.int64), "gap_ns": gap.astype(np.int64)}))
    ops = pl.concat(frames).join(kinds.select("kind", "parent", "model_id"), on="kind", how="left",
                                 maintain_order="left")
    has_parent = pl.col("parent").is_not_null().cast(pl.Int64)
    # Kineto External ids per process: step annotation, parent op, leaf op, in that order.
    used = pl.col("first").cast(pl.Int64) + has_parent + 1
    ext0 = (used.cum_sum() - used).over("rank") + 1
    return ops.with_columns(
        pid=PID0 + pl.col("rank") * 17,
        ext_step=ext0,
        ext_parent=ext0 + pl.col("first").cast(pl.Int64),
        ext_leaf=ext0 + pl.col("first").cast(pl.Int64) + has_parent,
        seq=(SEQ_XU << 48) | (SEQ0 + pl.col("op")),
        exec_id=EXEC0 + pl.col("op"),
        seq_nr=17 + pl.col("op"),
        # nc_model_switch when the NEFF differs from the previous execution's on the core.
        switch=pl.col("model_id").shift(1).over("rank").ne_missing(pl.col("model_id")),
    ).drop("parent", "model_id")


def _lit_json(*parts) -> pl.Expr:
    """A JSON string from literal text and integer/string expressions, in order."""
    return pl.concat_str([p if isinstance(p, pl.Expr) else pl.lit(p) for p in parts])


def _rows(ops: pl.DataFrame, lnc: int) -> pl.DataFrame:
    """The SystemProfileEvents rows of some ops, in the fixture's order, without ids."""
    kinds = _kinds()
    o = ops.join(kinds.select("kind", "leaf", "parent", "model_id", "neff", "cache_key", "args_tail"),
               on="kind", how="left", maintain_order="left")
    o = o.with_columns(
        tid=pl.col("pid"), wtid=pl.col("pid") + 8, nc=pl.col("rank"), wgid=pl.col("rank"),
        rt0=pl.col("c0") + RT_OFF, seq_s=pl.col("seq").cast(pl.String), exec_s=pl.col("exec_id").cast(pl.String),
        copy=pl.col("copy_ns") > 0)
    o = o.with_columns(s0=pl.col("rt0") + SCHED_OFF, sub0=pl.col("rt0") + SCHED_OFF + SCHED_DUR + SUBMIT_GAP
                       + pl.when("copy").then(pl.col("copy_ns") + COPY_TAIL).otherwise(0),
                       w0=pl.col("rt0") + SCHED_OFF + SCHED_DUR + SUBMIT_GAP,
                       post0=pl.col("hw1") + WAIT_TAIL + POST_GAP)
    none_i, none_s = pl.lit(None, pl.Int64), pl.lit(None, pl.String)
    none_flow = pl.lit(None, pl.List(pl.String))
    fw = pl.lit("framework")
    seq_model = _lit_json('{"nrt_sequence_id":', pl.col("seq_s"), ',"model_id":', pl.col("model_id").cast(pl.String))

    def row(df, order, name, start, end, source, thread, nc=none_i, pcore=none_i, wgid=none_i,
            flow=none_flow, stream=none_s, extra=pl.lit("{}")):
        return df.select(
            _order=pl.lit(order, pl.Int8), name=name, start_ts=start, end_ts=end,
            trace_event_source=pl.lit(source) if isinstance(source, str) else source,
            process_id=pl.col("pid"), thread_id=thread, nc_idx=nc, pcore_idx=pcore, worker_gid=wgid,
            flow_id=flow, framework_stream_id=stream, extra_attributes_json=extra)

    suffix = pl.lit(" [trace.json]")
    steps = o.group_by("rank", "step").agg(
        pl.col("pid").first(), pl.col("ext_step").first(),
        start=pl.when(pl.col("parent").is_not_null()).then(pl.col("c0") - CHILD_OFF).otherwise(pl.col("c0"))
        .filter(pl.col("first")).first() - FIRST_OP_DELAY,
        end=pl.col("hw1").max() + STEP_TAIL,
    ).sort("rank", "step")
    parents = o.filter(pl.col("parent").is_not_null())
    copies = o.filter("copy")
    parts = [
        row(steps, 0, pl.concat_str(pl.lit("ProfilerStep#"), (pl.col("step") + 1).cast(pl.String), suffix),
            pl.col("start"), pl.col("end"), "framework", pl.col("pid"),
            extra=_lit_json('{"category":"user_annotation","External id":', pl.col("ext_step").cast(pl.String),
                            ',"Record function id":0}')),
        row(parents, 1, pl.concat_str("parent", suffix), pl.col("c0") - CHILD_OFF,
            pl.col("c0") + pl.col("cpu_ns") + PARENT_TAIL, "framework", pl.col("tid"),
            extra=_lit_json('{"category":"cpu_op","External id":', pl.col("ext_parent").cast(pl.String),
                            ',"Sequence number":', pl.col("seq_nr").cast(pl.String), ",", pl.col("args_tail"))),
        row(o, 2, pl.concat_str("leaf", suffix), pl.col("c0"), pl.col("c0") + pl.col("cpu_ns"), "framework",
            pl.col("tid"), flow=pl.concat_list("seq_s"),
            extra=_lit_json('{"category":"cpu_op","External id":', pl.col("ext_leaf").cast(pl.String),
                            ',"Sequence number":', pl.col("seq_nr").cast(pl.String), ",", pl.col("args_tail"))),
        row(o, 3, pl.concat_str("leaf", suffix), pl.col("rt0"), pl.col("rt0") + RT_DUR, "framework",
            pl.col("tid"), extra=_lit_json('{"category":"privateuse1_runtime","correlation":',
                                           pl.col("ext_leaf").cast(pl.String), "}")),
        row(o, 4, pl.lit("nrta_execute_schedule"), pl.col("s0"), pl.col("s0") + SCHED_DUR, "neuron_rt",
            pl.col("tid"), nc=pl.col("nc"), wgid=pl.col("wgid"), flow=pl.concat_list("seq_s"),
            stream=pl.lit(str(STREAM)), extra=_lit_json(seq_model, "}")),
        row(o, 5, pl.concat_str("leaf", suffix), pl.col("rt0") + DRIVER_OFF, pl.col("post0") + POST_DUR,
            "framework", pl.lit(STREAM, pl.Int64), pcore=pl.lit(0, pl.Int64), wgid=pl.col("wgid"),
            flow=pl.concat_list("seq_s"), stream=pl.lit(str(STREAM)),
            extra=_lit_json('{"category":"privateuse1_driver","correlation":', pl.col("ext_leaf").cast(pl.String),
                            ',"nrt_sequence_id":', pl.col("seq_s"), ',"neff_cache_key":"', pl.col("cache_key"), '"}')),
        row(copies, 6, pl.lit("nrt_tensor_write"), pl.col("w0"), pl.col("w0") + pl.col("copy_ns"), "neuron_rt",
            pl.col("wtid"), nc=pl.col("nc"), wgid=pl.col("wgid"),
            extra=_lit_json('{"size":', (pl.col("copy_ns") * 64).cast(pl.String), ',"tensor_id":',
                            (4900392441224765051 + pl.col("op")).cast(pl.String), "}")),
        row(copies, 7, pl.lit("dmem_buf_copyin"), pl.col("w0") + 2_625, pl.col("w0") + pl.col("copy_ns") - 3_000,
            "neuron_rt", pl.col("wtid"), nc=pl.col("nc"), wgid=pl.col("wgid"),
            extra=_lit_json('{"size":', (pl.col("copy_ns") * 64).cast(pl.String),
                            ',"offset":0,"mem_type":"device"}')),
        row(o, 8, pl.lit("nrt_model_submit"), pl.col("sub0"), pl.col("sub0") + SUBMIT_DUR, "neuron_rt",
            pl.col("wtid"), nc=pl.col("nc"), wgid=pl.col("wgid"), stream=pl.lit(str(STREAM)),
            extra=_lit_json(seq_model, "}")),
        row(o, 9, pl.lit("kbl_exec_pre"), pl.col("sub0") + SUBMIT_DUR + PRE_GAP,
            pl.col("sub0") + SUBMIT_DUR + PRE_GAP + PRE_DUR, "neuron_rt", pl.col("wtid"), nc=pl.col("nc"),
            wgid=pl.col("wgid"), stream=pl.lit(str(STREAM)), extra=_lit_json(seq_model, "}")),
        row(o, 10, pl.lit("kbl_exec_wait"), pl.col("sub0") + SUBMIT_DUR + PRE_GAP + PRE_DUR + WAIT_GAP,
            pl.col("hw1") + WAIT_TAIL, "neuron_rt", pl.col("wtid"), nc=pl.col("nc"), wgid=pl.col("wgid"),
            flow=pl.concat_list("seq_s", "exec_s"), stream=pl.lit(str(STREAM)),
            extra=_lit_json(seq_model, ',"exec_id":', pl.col("exec_s"), "}")),
        row(o, 11, pl.lit("kbl_exec_post"), pl.col("post0"), pl.col("post0") + POST_DUR, "neuron_rt",
            pl.col("wtid"), nc=pl.col("nc"), wgid=pl.col("wgid"), stream=pl.lit(str(STREAM)),
            extra=_lit_json(seq_model, ',"exec_id":', pl.col("exec_s"), "}")),
    ]
    for p in range(lnc):
        hw = o.with_columns(pcore=(pl.col("rank") * lnc + p) % 8)
        common = dict(thread=pl.col("wtid"), nc=pl.col("nc"), pcore=pl.col("pcore"), wgid=pl.col("wgid"))
        parts += [
            row(hw.filter("switch"), 12, pl.lit("nc_model_switch"), pl.col("hw0"), pl.col("hw0"), "neuron_hw",
                **common, extra=_lit_json('{"device_core_idx":', pl.col("pcore").cast(pl.String), ',"model_id":',
                                          pl.col("model_id").cast(pl.String), ',"exec_id":', pl.col("exec_s"), "}")),
            row(hw, 13, pl.lit("nc_exec_running"), pl.col("hw0"), pl.col("hw1"), "neuron_hw", **common,
                flow=pl.concat_list("exec_s"),
                extra=_lit_json('{"exec_id":', pl.col("exec_s"), ',"model_id":', pl.col("model_id").cast(pl.String),
                                ',"model_name":"', pl.col("neff"), '","device_core_idx":',
                                pl.col("pcore").cast(pl.String), ',"nc_start_timestamp_ns":',
                                (pl.col("hw0") - BASE_NS + DEVICE_CLOCK_OFFSET).cast(pl.String),
                                ',"nc_stop_timestamp_ns":',
                                (pl.col("hw1") - BASE_NS + DEVICE_CLOCK_OFFSET).cast(pl.String), "}")),
            row(hw, 14, pl.lit("timestamp_sync_point"), pl.col("hw1"), pl.col("hw1"), "neuron_hw", **common,
                extra=_lit_json('{"exec_id":', pl.col("exec_s"), ',"nc_timestamp_ns":',
                                (pl.col("hw1") - BASE_NS + DEVICE_CLOCK_OFFSET).cast(pl.String),
                                ',"cpu_timestamp_ns":', pl.col("hw1").cast(pl.String), "}")),
        ]
    out = pl.concat(parts)
    # The fixture's row order: start, longer first, framework before runtime/hardware on ties.
    return out.sort(pl.col("start_ts"), -pl.col("end_ts"), pl.col("trace_event_source") != "framework",
                    "_order", maintain_order=True)


def _with_ids(rows: pl.DataFrame, fw0: int, rt0: int) -> pl.DataFrame:
    """Explorer ids: 2^62 + n for framework rows, small increasing numbers for the rest."""
    is_fw = pl.col("trace_event_source") == "framework"
    fw_n, rt_n = is_fw.cast(pl.Int64).cum_sum() - 1, (~is_fw).cast(pl.Int64).cum_sum() - 1
    return rows.with_columns(
        id=pl.when(is_fw).then(fw0 + fw_n).otherwise(rt0 + rt_n),
        duration_ns=pl.col("end_ts") - pl.col("start_ts"),
        instance_id=pl.lit(INSTANCE),
    ).select([pl.col(c).cast(t) for c, t in EVENT_SCHEMA.items()])


def rows_per_step(lnc: int) -> float:
    """About how many rows one rank writes per step."""
    parents = sum(parent is not None for _, parent, *_ in LAYER)
    # 8 host/runtime rows per op, 3 hardware rows per physical core (switch, running, sync),
    # the parent ops, ProfilerStep, and the copies (first op + 1 % of the others, 2 rows each).
    return len(LAYER) * (8 + 3 * lnc) + parents + 1 + 2 * (1 + 0.01 * (len(LAYER) - 1))


def write(out_dir, events: int, seed: int = 0, *, cores: int = 4, lnc: int = 2,
          rows_per_file: int = 2_000_000) -> int:
    """Write the export under ``out_dir``; return the rows written. truth.json records the rest."""
    if not 1 <= cores <= 8 or lnc not in (1, 2):
        raise ValueError("cores must be 1..8 and lnc 1 or 2")
    out = Path(out_dir)
    pq = out / "explorer" / "parquet"
    shutil.rmtree(pq, ignore_errors=True)
    pq.mkdir(parents=True)
    per_step = rows_per_step(lnc) * cores
    steps = max(1, round(events / per_step))
    ops = _ops(cores, steps, seed)
    steps_per_part = max(1, round(rows_per_file / per_step))
    n_parts = -(-steps // steps_per_part)
    total, counts, fw_n, rt_n = 0, {}, 0, 0
    first_ts, last_ts, hw_first, hw_last = None, None, None, None
    for i in range(n_parts):
        part = ops.filter(pl.col("step").is_between(i * steps_per_part, (i + 1) * steps_per_part - 1))
        rows = _with_ids(_rows(part, lnc), FRAMEWORK_ID0 + fw_n, RUNTIME_ID0 + rt_n)
        is_fw = rows["trace_event_source"] == "framework"
        fw_n, rt_n = fw_n + int(is_fw.sum()), rt_n + int((~is_fw).sum())
        name = "SystemProfileEvents.parquet" if n_parts == 1 else f"SystemProfileEvents_{i}.parquet"
        rows.write_parquet(pq / name, compression="zstd", compression_level=1)  # level 1: 2-3x faster to write
        total += rows.height
        for event, c in rows["name"].value_counts().iter_rows():
            event = "ProfilerStep#N [trace.json]" if event.startswith("ProfilerStep#") else event
            counts[event] = counts.get(event, 0) + c
        hw = rows.filter(pl.col("trace_event_source") == "neuron_hw")
        first_ts = min(x for x in (first_ts, rows["start_ts"].min()) if x is not None)
        last_ts = max(x for x in (last_ts, rows["end_ts"].max()) if x is not None)
        hw_first = min(x for x in (hw_first, hw["start_ts"].min()) if x is not None)
        hw_last = max(x for x in (hw_last, hw["end_ts"].max()) if x is not None)
        del rows, hw, part
    _small_tables(pq, cores, lnc, first_ts, last_ts, hw_first, hw_last)
    _capture_folders(out, cores)
    per_rank = steps * len(LAYER)
    gaps = ops.filter(pl.col("op") > 0)
    truth = {
        "generator": "bench/gen_parquet.py", "seed": seed, "events_asked": events, "rows": total,
        "files": sorted(p.name for p in pq.iterdir()), "ranks": cores, "lnc": lnc, "steps": steps,
        "ops": ops.height, "executions": ops.height * lnc, "hardware_lanes": cores * lnc,
        "devices": cores, "gaps": cores * lnc * (per_rank - 1), "device_gaps": cores * (per_rank - 1),
        "device_idle_ns": int(gaps["gap_ns"].sum()),
        "transfers": int((ops["copy_ns"] > 0).sum()),
        "hardware_span_ns": [hw_first, hw_last],
        "names": dict(sorted(counts.items())),
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return total


def _small_tables(pq: Path, cores: int, lnc: int, first, last, hw_first, hw_last) -> None:
    ts = fx.ts_text
    pl.DataFrame({"first_ts": [ts(first)], "last_ts": [ts(last)], "first_ts_ns": [str(first)],
                  "last_ts_ns": [str(last)], "ntff_version": [5], "hbm_capacity_bytes": [25_769_803_776]},
                 schema={"first_ts": pl.Utf8, "last_ts": pl.Utf8, "first_ts_ns": pl.Utf8, "last_ts_ns": pl.Utf8,
                         "ntff_version": pl.Int64, "hbm_capacity_bytes": pl.Int64}
                 ).write_parquet(pq / "SystemProfileMetadata.parquet")
    pl.DataFrame({"profile_schema_version": [fx.SCHEMA_VERSION], "ntff_version": [5],
                  "num_physical_cores": [cores * lnc], "vnc_enabled": [lnc > 1],
                  "first_hw_timestamp": [hw_first], "last_hw_timestamp": [hw_last],
                  "first_ts": [ts(first)], "last_ts": [ts(last)], "instance_type": ["trn2.48xlarge"],
                  "neuroncore_idx": [0], "profile_name": ["gen_parquet"]},
                 schema_overrides={"ntff_version": pl.Int32}).write_parquet(pq / "Metadata.parquet")
    fx.write_schema_fields(pq / "SchemaFields.parquet")


def _capture_folders(out: Path, cores: int) -> None:
    """One placeholder session folder per rank (no trace.json: the export holds the framework rows)."""
    for r in range(cores):
        session = out / f"{INSTANCE}_pid_{PID0 + r * 17}" / SESSION_DIR
        shutil.rmtree(session.parent, ignore_errors=True)
        session.mkdir(parents=True)
        for name in ("ntrace.pb", "trace_info.pb"):
            (session / name).write_bytes(fx.PLACEHOLDER_PB)
        (session / f"profile_nc_{r}_session_0.ntff").write_bytes(b"placeholder: not a real NTFF\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("events", type=int, help="about how many SystemProfileEvents rows")
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cores", type=int, default=4, help="logical NeuronCores = processes (1-8, default 4)")
    ap.add_argument("--lnc", type=int, default=2, choices=(1, 2), help="physical cores per logical core")
    ap.add_argument("--rows-per-file", type=int, default=2_000_000,
                    help="split SystemProfileEvents into parts of about this many rows")
    a = ap.parse_args()
    t0 = time.perf_counter()
    n = write(a.out_dir, a.events, a.seed, cores=a.cores, lnc=a.lnc, rows_per_file=a.rows_per_file)
    truth = json.loads((a.out_dir / "truth.json").read_text())
    print(f"wrote {a.out_dir}: {n:,} rows in {len(truth['files']) - 3} file(s), {truth['executions']:,} "
          f"executions, {truth['gaps']:,} lane gaps, {time.perf_counter() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
