"""Every analysis accepts any events table the Neuron Explorer readers can produce, and every
renderer accepts every result: the twin of test_analyses_properties.py for Explorer exports.

Generated SystemProfileEvents tables (schema 7.4.0, docs/neuron-formats.md §2.1, written with
conftest's write_parquet in the fixtures' ``explorer/parquet/`` layout, and the same rows as
a legacy ``explorer/json/system_profile.json``, §2.2): 0..N framework ops, runtime
``nrta_execute_schedule``/``kbl_exec_wait`` calls and hardware ``nc_exec_running``
executions on 1..4 NeuronCores (LNC=1 or 2), linked by flow ids, by ``exec_id``/
``nrt_sequence_id`` only, or not at all; executions with no runtime call, runtime calls with
no execution, ops with no device work, zero-length and overlapping executions,
host-to-device copies, ``cc_running`` collectives, an optional ProfilerStep.

Checked: no exception anywhere; JSON output round-trips; and the invariants a user relies on
(docs/gaps.md, docs/graph.md), each against what the generator wrote, never against
traceana's own numbers: per lane, per device and for the summary, idle is the time in the
listed gaps, busy is the union of the executions, leading and trailing idle run up to the
first and from the last busy instant (conftest.check_busy_and_idle; busy + idle + leading +
trailing = window holds by construction of gaps.py, so it is not checked); every hardware
execution is one chain row whether linked or not, executions keyed to an op reach that op,
executions per lane, op calls.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import (
    check_busy_and_idle,
    every_analysis,
    render_all,
    run_cli,
    write_metadata,
    write_parquet,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import trace_analyzer as ta
from trace_analyzer.questions.diff.analysis import diff_runs
from trace_analyzer.questions.gaps.analysis import gaps_runs
from trace_analyzer.render import RENDERERS, View

T0 = 1_793_620_800_000_000_000  # epoch ns (docs/neuron-formats.md §4.4)
INST, PID, MAIN_TID, WORKER_TID = "i-0123456789abcdef0", 4242, 4242, 4250
PROC = f"{INST}/PID:{PID}"
OPS = ("aten::mul", "aten::add", "aten::rsqrt", "aten::mean")
SEQ_XU = 3  # nrt_sequence_id = (3 << 48) | n, as observed (§3.5)
ANY = object()  # an execution whose op the generator does not decide (time containment may link it)
SHAPES = ("full", "full", "exec_id_only", "runtime_only", "bare", "collective", "op_alone",
          "runtime_alone", "transfer")


@dataclass
class Made:
    """What the generator wrote: the rows, and what a user may expect of them."""

    rows: list[dict] = field(default_factory=list)
    # one per hardware execution event: lane, device, start, end, expected op (str, None, ANY)
    hw: list[dict] = field(default_factory=list)
    op_calls: Counter = field(default_factory=Counter)  # framework_op rows by name
    keyed_units: int = 0  # executions carrying an exec_id: one logical execution each
    seq_calls: list[tuple[int, int, int]] = field(default_factory=list)  # (nc, start, end)
    step: tuple[int, int, int] | None = None  # (N, start, end)
    lnc: int = 1  # physical cores per logical NeuronCore
    split: bool = False
    metadata: bool = True
    drop: tuple[str, ...] = ()

    def lanes(self) -> Counter:
        return Counter(h["lane"] for h in self.hw)


class Ids:
    def __init__(self):
        self.rt, self.fw = 101, 2**62 + 1_000

    def runtime(self) -> int:
        self.rt += 1
        return self.rt

    def framework(self) -> int:
        self.fw += 1
        return self.fw


def ns(t: int) -> int:
    return T0 + t


@st.composite
def exports(draw) -> Made:
    """An Explorer SystemProfileEvents table laid out as one host thread dispatching units."""
    m = Made(split=draw(st.booleans()), metadata=draw(st.booleans()),
             drop=draw(st.sampled_from([(), (), ("worker_gid",), ("duration_ns",)])))
    ids = Ids()
    n_cores = draw(st.integers(1, 4))
    lnc = m.lnc = draw(st.sampled_from([1, 1, 2]))
    pcore_null = lnc == 1 and draw(st.booleans())  # lane falls back to NC<n>:<n>
    n_units, with_step = draw(st.integers(0, 12)), draw(st.booleans())
    # zero-length about one time in five (docs/gaps.md: a 0 ns execution is a busy instant)
    duration = st.tuples(st.integers(0, 4), st.integers(1, 8_000)).map(lambda z: z[0] and z[1])
    t = 0  # host time on the main thread; units follow one another there, as dispatch does

    def row(name, source, start, end, **kw) -> dict:
        r = dict(name=name, trace_event_source=source, start_ts=ns(start), end_ts=ns(end),
                 instance_id=INST, process_id=PID, **{"thread_id": MAIN_TID, **kw})
        if "extra" in kw:
            r["extra_attributes_json"] = json.dumps(r.pop("extra"), separators=(",", ":"))
        r["id"] = ids.framework() if source == "framework" else ids.runtime()
        m.rows.append(r)
        return r

    def framework(name, start, end, **kw) -> dict:
        return row(f"{name} [trace.json]", "framework", start, end, **kw)

    def runtime(name, nc, start, end, seq=None, exec_id=None, flows=None, tid=MAIN_TID):
        extra = {"model_id": 605291374318702}
        if seq is not None:
            extra["nrt_sequence_id"] = seq
            m.seq_calls.append((nc, start, end))
        if exec_id is not None:
            extra["exec_id"] = exec_id
        return row(name, "neuron_rt", start, end, nc_idx=nc, worker_gid=0, thread_id=tid,
                   framework_stream_id="0" if seq is not None else None,
                   flow_id=flows, extra=extra)

    def hardware(name, nc, start, end, op, exec_id=None, flows=None, edges=False) -> None:
        for pcore in ([nc] if lnc == 1 else [2 * nc, 2 * nc + 1]):
            extra = {"model_id": 605291374318702, "model_name": "neff_395760075800974_vnc_0.neff"}
            if exec_id is not None:
                extra["exec_id"] = exec_id
            core = None if pcore_null else pcore
            if core is not None:
                extra["device_core_idx"] = core
            common = dict(nc_idx=nc, pcore_idx=core, worker_gid=0, thread_id=WORKER_TID)
            if edges:  # zero-length companions at the execution's edges (kind "other")
                row("nc_model_switch", "neuron_hw", start, start, **common, extra=extra)
            row(name, "neuron_hw", start, end, **common, flow_id=flows, extra=extra)
            if edges:
                row("timestamp_sync_point", "neuron_hw", end, end, **common,
                    extra={"exec_id": exec_id, "nc_timestamp_ns": end + 1_542_032_702})
            m.hw.append(dict(lane=f"{PROC}/neuron_hw/NC{nc}:{pcore if core is not None else nc}",
                             device=f"{PROC}/neuron_hw/NC{nc}", nc=nc, start=ns(start),
                             end=ns(end), name=name, op=op, keyed=exec_id is not None,
                             enclosed=False))

    for k in range(n_units):
        t += draw(st.integers(0, 2_000))
        shape = draw(st.sampled_from(SHAPES))
        nc = draw(st.integers(0, n_cores - 1))
        op = draw(st.sampled_from(OPS))
        seq, exec_id = (SEQ_XU << 48) | (41 + k), 57 + k
        op_dur = draw(duration)
        hw0 = t + draw(st.integers(0, 3_000))  # often overlaps earlier executions on the core
        hw1 = hw0 + draw(duration)
        edges = draw(st.booleans())
        with_op = (shape in ("full", "exec_id_only")
                   or (shape == "runtime_alone" and draw(st.booleans())))
        flows = shape in ("full", "runtime_only", "runtime_alone")
        if shape == "op_alone" or with_op:
            framework(op, t, t + op_dur, flow_id=[str(seq)])
            m.op_calls[op] += 1
            if op_dur >= 2 and draw(st.booleans()):  # PrivateUse1 dispatch: same name, nested
                framework(op, t + 1, t + op_dur - 1)
            if with_op:  # the Stream-lane driver event carries the sequence id
                framework(op, t + 1, max(hw1, t + 1) + 500, thread_id=0, framework_stream_id="0",
                          pcore_idx=0, worker_gid=0, flow_id=[str(seq)],
                          extra={"category": "privateuse1_driver", "nrt_sequence_id": seq})
        if shape in ("full", "exec_id_only", "runtime_only", "runtime_alone"):
            s0 = t + 1
            runtime("nrta_execute_schedule", nc, s0, s0 + draw(duration), seq=seq,
                    flows=[str(seq)] if flows else None)
        if shape in ("full", "exec_id_only", "runtime_only"):
            expected = op if with_op else None
            runtime("kbl_exec_wait", nc, min(hw0, t + 2), hw1 + 300, seq=seq, exec_id=exec_id,
                    flows=[str(seq), str(exec_id)] if flows else None, tid=WORKER_TID)
            hardware("nc_exec_running", nc, hw0, hw1, expected, exec_id=exec_id,
                     flows=[str(exec_id)] if flows else None, edges=edges)
            m.keyed_units += 1
        if shape in ("bare", "collective"):  # no flow, no exec_id: only time can link it
            hardware("nc_exec_running" if shape == "bare" else "cc_running", nc, hw0, hw1, ANY,
                     edges=edges and shape == "bare")
        if shape == "transfer":  # host-to-device copy (docs/neuron-formats.md §2.1, §3.3)
            c1 = t + draw(duration)
            runtime("nrt_tensor_write", nc, t, c1, tid=WORKER_TID)
            row("dmem_buf_copyin", "neuron_rt", t, c1, nc_idx=nc, thread_id=WORKER_TID,
                extra={"size": 2, "offset": 0, "mem_type": "device"})
        t += op_dur + 1  # the next unit starts after this op on the host thread

    # An execution no runtime call with a sequence id encloses on its core reaches no op (the
    # time rule needs one, docs/graph.md); otherwise the generator leaves its op open.
    for h in m.hw:
        if h["op"] is ANY:
            h["enclosed"] = any(c == h["nc"] and ns(s) <= h["start"] <= ns(e)
                                for c, s, e in m.seq_calls)
            h["op"] = ANY if h["enclosed"] else None
    if with_step:
        n = draw(st.integers(1, 5))
        s = draw(st.integers(-2_000, max(t, 0)))
        m.step = (n, ns(s), ns(s + draw(st.integers(1, t + 5_000))))
        framework(f"ProfilerStep#{n}", s, m.step[2] - T0, flow_id=None)
    random.Random(draw(st.integers(0, 2**32))).shuffle(m.rows)  # row order is no contract
    return m


def write_export(folder: Path, made: Made) -> Path:
    """Write the Parquet export as the fixtures lay it out; return the run folder."""
    out = folder / "explorer" / "parquet"
    if made.split and len(made.rows) > 1:
        half = len(made.rows) // 2
        write_parquet(out / "SystemProfileEvents_0.parquet", made.rows[:half], drop=made.drop)
        write_parquet(out / "SystemProfileEvents_1.parquet", made.rows[half:], drop=made.drop)
    else:
        write_parquet(out / "SystemProfileEvents.parquet", made.rows, drop=made.drop)
    if made.metadata:
        write_metadata(out, "7.4.0")
    return folder


def write_legacy_json(folder: Path, made: Made) -> Path:
    """Write the same rows as a legacy JSON export, extra attributes flattened (§2.2)."""
    out = []
    for r in made.rows:
        ev = {"name": r["name"], "timestamp": r["start_ts"],
              "duration": r["end_ts"] - r["start_ts"],
              "id": r["id"], "instance_id": INST, "process_id": str(PID),
              "thread_id": r["thread_id"], "trace_event_source": r["trace_event_source"]}
        for key in ("nc_idx", "pcore_idx", "worker_gid", "flow_id", "framework_stream_id"):
            if r.get(key) is not None:
                ev[key] = r[key]
        if r.get("nc_idx") is not None:
            ev["lnc_idx"] = str(r["nc_idx"])
        ev.update({k: v for k, v in json.loads(r.get("extra_attributes_json") or "{}").items()
                   if k not in ev})
        out.append(ev)
    path = folder / "explorer" / "json" / "system_profile.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"system_profile_metadata": {"ntff_version": 5},
                                "trace_event": out}))
    return path


def empty_ish(folder: Path) -> Path:
    """One op and a runtime call that never reached the hardware: nothing to be idle on."""
    write_parquet(folder / "explorer" / "parquet" / "SystemProfileEvents.parquet", [
        dict(id=2**62 + 1, name="aten::add [trace.json]", start_ts=T0, end_ts=T0 + 5_000,
             trace_event_source="framework", instance_id=INST, process_id=PID, thread_id=MAIN_TID),
        dict(id=7, name="nrta_execute_schedule", start_ts=T0 + 1_000, end_ts=T0 + 2_000,
             trace_event_source="neuron_rt", instance_id=INST, process_id=PID,
             thread_id=MAIN_TID, nc_idx=0)])
    return folder


# --- the invariants -----------------------------------------------------------------------


def check_non_negative(table: list[dict]) -> None:
    for r in table:
        for c in ("busy_ns", "idle_ns", "leading_ns", "trailing_ns", "window_ns", "gap_count",
                  "executions"):
            assert r[c] >= 0, (c, r)


def in_gaps(made: Made) -> list[dict]:
    """The executions the gaps tables count under the default window (the hardware span): all
    of them, zero-length ones at the window's edges included (test_zero_length_execution_at_
    window_edge_is_counted; they were once left out)."""
    return list(made.hw)


def kind(h: dict) -> str:
    """An execution's kind (docs/gaps.md, "The device's states"): a collective communicates,
    the rest computes."""
    return "communication" if h["name"] == "cc_running" else "compute"


def check_gaps(run: dict, made: Made, min_gap: int, windowed: bool) -> None:
    import sys; [print("DBG", windowed, run["window"], made.step, d, [(h["start"], h["end"], h["name"], h["device"][-3:]) for h in made.hw], file=sys.stderr) for d in run["devices"] if d["idle_ns"] < 0]
    """The gaps result of one run against the generator's executions."""
    s = run["summary"]
    if not made.hw:
        assert s["executions"] == s["gap_count"] == s["busy_ns"] == s["idle_ns"] == 0, s
    assert all(v >= 0 for k, v in s.items() if k.endswith("_ns") and isinstance(v, int)), s
    # the causes add up to the idle in the gaps: the idle, but at the devices' edges
    in_gaps_idle = sum(g["idle_ns"] for g in run["device_gaps"]) if min_gap == 0 else None
    assert sum(s["idle_by_cause_ns"].values()) in (in_gaps_idle, None) or min_gap, s
    assert sum(s["idle_by_cause_ns"].values()) <= s["idle_ns"], s
    check_non_negative(run["lanes"])
    check_non_negative(run["devices"])
    w = run["window"]
    gaps = list(run["gaps"]) + list(run["device_gaps"])
    for g in gaps:
        assert g["duration_ns"] >= max(min_gap, 1), g
        assert g["duration_ns"] == g["end_ns"] - g["start_ns"], g
        assert w["start_ns"] <= g["start_ns"] < g["end_ns"] <= w["end_ns"], (g, w)
    if windowed:  # the ProfilerStep's span, to the end of the work it launched, if later
        _, start, end = made.step
        assert w["start_ns"] == start and w["end_ns"] >= end, (w, made.step)
        assert w["end_ns"] in {end, *(h["end"] for h in made.hw)}, w
        end = w["end_ns"]
    elif made.hw:  # the default window: the span of every hardware execution
        start, end = min(h["start"] for h in made.hw), max(h["end"] for h in made.hw)
    else:
        return
    assert (w["start_ns"], w["end_ns"]) == (start, end)
    counted = in_gaps(made)
    # (a) idle = the listed gaps, (b) busy = the union, (c) leading and trailing, per lane,
    # per device (the generator's NC<lnc>) and for the summary
    check_busy_and_idle(run, [(h["lane"], h["device"], h["start"], h["end"], kind(h))
                              for h in counted], start, end, min_gap)
    if windowed:
        return
    assert s["executions"] == len(counted)  # the collectives too
    assert s["lanes"] == len(made.lanes())
    assert s["devices"] == len({h["device"] for h in made.hw})
    assert s["window_ns"] == (end - start) * s["devices"]


def check_chain(run: dict, made: Made) -> None:
    """Every hardware execution is one chain row, linked or not; keyed ones reach their op."""
    rows, cov = run["rows"], run["coverage"]
    assert len(rows) == len(made.hw) == cov["hardware_executions"]
    assert len({r["hw_event_id"] for r in rows}) == len(rows)  # exactly once
    assert cov["linked"] + cov["unlinked"] == len(made.hw)
    assert (sorted((r["lane"], r["hw_name"], r["hw_start_ns"], r["hw_end_ns"]) for r in rows)
            == sorted((h["lane"], h["name"], h["start"], h["end"]) for h in made.hw))
    # Match rows to the generator by (lane, start, end, op); ANY executions take what is left.
    got = Counter((r["lane"], r["hw_start_ns"], r["hw_end_ns"], r["op"]) for r in rows)
    for h in made.hw:
        if h["op"] is not ANY:
            key = (h["lane"], h["start"], h["end"], h["op"])
            assert got[key] > 0, (h, sorted(got))
            got[key] -= 1
    assert cov["linked"] >= sum(1 for h in made.hw if isinstance(h["op"], str))
    assert cov["unlinked"] >= sum(1 for h in made.hw if h["op"] is None)
    for r in rows:
        assert r["hw_duration_us"] is None or r["hw_duration_us"] >= 0, r


def check_ops(run: dict, made: Made) -> None:
    by_name = {r["name"]: r for r in run["rows"]}
    calls = {n: r["calls"] for n, r in by_name.items() if r["calls"]}
    assert calls == dict(made.op_calls)
    # One logical execution per exec_id (both physical cores with LNC=2); an execution with
    # no key is its own, or shares the runtime call that encloses it with others (docs/graph.md).
    alone = sum(1 for h in made.hw if not h["keyed"] and not h["enclosed"])
    enclosed = sum(1 for h in made.hw if h["enclosed"])
    low = made.keyed_units + alone + (1 if enclosed else 0)
    assert low <= run["executions"] <= made.keyed_units + alone + enclosed, run["executions"]
    assert (run["executions"] == 0) == (not made.hw)
    for r in run["rows"]:
        assert r["calls"] >= 0 and r["executions"] >= 0 and r["device_us"] >= 0, r
    for name in {h["op"] for h in made.hw if isinstance(h["op"], str)}:
        assert by_name[name]["executions"] >= 1, (name, by_name.get(name))
    if any(h["op"] is None for h in made.hw):
        assert by_name["(unlinked)"]["executions"] >= 1


def describe(made: Made) -> None:
    """Label the example for --hypothesis-show-statistics: is the generator reaching the cases?"""
    event(f"hardware executions: {min(len(made.hw), 6)}{'+' if len(made.hw) > 5 else ''}")
    event(f"LNC={made.lnc}, cores {len({h['device'] for h in made.hw})}")
    for what, hit in (
        ("linked to an op by keys", any(isinstance(h["op"], str) for h in made.hw)),
        ("keyed to a runtime call only", any(h["keyed"] and h["op"] is None for h in made.hw)),
        ("no key, enclosed by a runtime call", any(h["enclosed"] for h in made.hw)),
        ("no key, nothing encloses it", any(not h["keyed"] and h["op"] is None for h in made.hw)),
        ("zero-length execution", any(h["start"] == h["end"] for h in made.hw)),
        ("overlap on a lane", any(a is not b and a["lane"] == b["lane"] and a["start"] < b["end"]
                                  and b["start"] < a["end"] for a in made.hw for b in made.hw)),
        ("zero-length execution at the window edge", any(
            h["start"] == h["end"] and h["start"] in (min(x["start"] for x in made.hw),
                                                     max(x["end"] for x in made.hw))
            for h in made.hw)),
        ("ProfilerStep", made.step is not None),
    ):
        if hit:
            event(what)


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                      HealthCheck.too_slow])


@settings(max_examples=25, **SETTINGS)
@given(made=exports(), min_gap=st.sampled_from([0, 1, 5_000]),
       by=st.sampled_from(["device", "lane", "op"]), empty_is_base=st.booleans())
def test_every_analysis_and_renderer_accepts_any_explorer_export(tmp_path_factory, made, min_gap,
                                                                 by, empty_is_base):
    describe(made)
    folder = write_export(tmp_path_factory.mktemp("x"), made)
    other = empty_ish(tmp_path_factory.mktemp("e"))
    p, e = ta.load(folder), ta.load(other)
    assert p.events.height == len(made.rows)
    analysed = every_analysis(p, folder, min_gap)
    render_all(analysed)
    for renderer in RENDERERS.values():  # the --by and --top of the text reports
        assert isinstance(renderer(analysed["gaps"], options=View(by=by, top=3)), str)
    results = {kind: r.to_json() for kind, r in analysed.items()}
    # against an empty-ish run (ops "added" with it as base, "removed" as head)
    render_all({"diff": diff_runs(
        ta.diff(e, p, base_label="empty", head_label="head") if empty_is_base
        else ta.diff(p, e, base_label="base", head_label="empty"))})
    if made.step:  # the ProfilerStep's window instead of the hardware span
        by_step = gaps_runs([ta.gaps(p, step=made.step[0], min_gap_ns=min_gap)], str(folder),
                            min_gap_ns=min_gap)
        render_all({"gaps": by_step})
        check_gaps(by_step.to_json()["runs"][0], made, min_gap, windowed=True)

    (run,) = results["info"]["runs"]
    assert run["events"] == len(made.rows)
    assert run["hardware_lanes"] == len(made.lanes())
    assert run["lanes_by_kind"].get("hardware", []) == sorted(made.lanes())
    assert run["links"]["hardware_executions"] == len(made.hw)
    check_gaps(results["gaps"]["runs"][0], made, min_gap, windowed=False)
    check_chain(results["chain"]["runs"][0], made)
    check_ops(results["ops"]["runs"][0], made)
    (same,) = results["diff"]["runs"]
    # a run against itself is unchanged; with no hardware executions it is compared on the host
    # where it records host time (a step, ops: issue 39), else there is nothing to compare,
    # which the verdict says (never "better" or "unchanged")
    executions = results["gaps"]["runs"][0]["summary"]["executions"]
    host = same["host_only"]
    assert not host or (not executions and (made.step or sum(made.op_calls.values())))
    expected = "unchanged" if executions or host else "inconclusive"
    assert same["verdict"] == expected, same["verdict_text"]
    assert all(m["delta"] in (0, None) for m in same["metrics"]), same["metrics"]
    assert not same["added"] and not same["removed"]

    # The legacy JSON export of the same rows reads to the same events and the same numbers.
    j = ta.load(write_legacy_json(tmp_path_factory.mktemp("j"), made))
    assert j.events.height == len(made.rows)
    j_gaps = ta.gaps(j, min_gap_ns=min_gap).to_json()
    check_gaps(j_gaps, made, min_gap, windowed=False)
    check_chain(ta.chains(j).to_json(), made)
    assert j_gaps["summary"] == results["gaps"]["runs"][0]["summary"]


@settings(max_examples=5, **SETTINGS)
@given(made=exports())
def test_cli_accepts_any_explorer_export(tmp_path_factory, made):
    folder = write_export(tmp_path_factory.mktemp("c"), made)
    code, out, err = run_cli("gaps", folder, "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["summary"]["executions"] == len(in_gaps(made))
    code, out, err = run_cli("info", folder)
    assert code == 0, err
    assert "Traceback" not in err


# --- known bugs, recorded (see the report of the issue 9 property test) ----------------------


def _hw(i: int, start: int, end: int, pcore: int = 0) -> dict:
    return dict(id=i, name="nc_exec_running", start_ts=T0 + start, end_ts=T0 + end,
                trace_event_source="neuron_hw", instance_id=INST, process_id=PID,
                thread_id=WORKER_TID, nc_idx=0, pcore_idx=pcore)


@pytest.mark.parametrize("rows", [
    [_hw(1, 0, 0)],                        # the only execution: window of 0 ns, 0 executions
    [_hw(1, 0, 100), _hw(2, 0, 0, 1)],     # at the window start on another core
    [_hw(1, 0, 100), _hw(2, 100, 100, 1)],  # at the window end on another core
], ids=["alone", "at-start", "at-end"])
def test_zero_length_execution_at_window_edge_is_counted(tmp_path, rows):
    write_parquet(tmp_path / "SystemProfileEvents.parquet", rows)
    g = ta.gaps(ta.load(tmp_path))
    assert g.summary["executions"] == len(rows)
    assert g.lanes["executions"].to_list() == [1] * g.lanes.height


def test_step_window_without_hardware_adds_up(tmp_path):
    write_parquet(tmp_path / "SystemProfileEvents.parquet", [
        dict(id=1, name="ProfilerStep#1 [trace.json]", start_ts=T0, end_ts=T0 + 1_000,
             trace_event_source="framework", instance_id=INST, process_id=PID, thread_id=MAIN_TID)])
    g = ta.gaps(ta.load(tmp_path), step=1)
    assert (g.window.start_ns, g.window.end_ns) == (T0, T0 + 1_000)  # still reported
    s = g.summary
    assert all(s[k] == 0 for k in ("busy_ns", "idle_ns", "leading_ns", "trailing_ns",
                                   "window_ns", "executions", "gap_count", "devices")), s
