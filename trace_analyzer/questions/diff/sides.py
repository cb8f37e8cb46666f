"""The sides ``traceana diff`` compares: runs as samples, from traces or from saved summaries.

A side is one or more runs (``Sample``): each run's compared metrics (``COMPARED``) and its
ops (calls, device µs, idle before). A run comes from a loaded profile (``sample_of``),
from a ``traceana gaps --format json`` document, or from a summary that ``traceana
baseline save`` wrote (``summary_doc``); ``read_summary`` reads either document back and
refuses a malformed one with one line naming the file (docs/diff.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from trace_analyzer._version import __version__
from trace_analyzer.errors import InputError
from trace_analyzer.loading.profile import Profile
from trace_analyzer.questions.diff.shape import shape_of
from trace_analyzer.questions.gaps.analysis import CAUSES, GapsResult, gaps
from trace_analyzer.questions.gaps.gate import GAP_STATS
from trace_analyzer.questions.gaps.host_summary import step_lengths
from trace_analyzer.questions.ops.analysis import ops

KIND = "traceana-baseline"  # the ``kind`` of a summary file
SUMMARY_VERSION = 1
TRACE, GAPS_JSON, BASELINE = "trace", "gaps JSON", "baseline"

# Compared metrics (name -> what, with its unit); device_time is the devices' busy time.
COMPARED = {
    "device_time": "device time (busy, µs)",
    "idle_pct": "idle % of the window",
    "idle_us": "idle in gaps (µs)",
    "window_us": "window (µs)",
    "step_time_us": "step time (mean ProfilerStep, µs)",
    "self_cpu_us": "ops' self CPU time (µs)",
    "executions": "hardware executions",
    "gap_count": "gaps",
    "gap_p50_us": "median gap (µs)",
    "gap_p90_us": "p90 gap (µs)",
    "gap_p99_us": "p99 gap (µs)",
    "gap_max_us": "longest gap (µs)",
    **{f"idle_{c}_us": f"idle from {c} (µs)" for c in CAUSES},
    # the device's other states (docs/gaps.md): a gaps JSON or baseline older than them
    # has none, and compares nothing on them
    "exposed_communication_us": "exposed communication: collectives, no compute (µs)",
    "memory_us": "copies and sets alone (µs)",
}
# Metrics a baseline file may lack (written before they were measured).
OPTIONAL = ("exposed_communication_us", "memory_us", "self_cpu_us")
# What a run that records host activity only has (docs/diff.md, "Host-only runs"); with
# --step N, window_us is that step's span there too. The rest is measured on hardware.
HOST_METRICS = ("step_time_us", "self_cpu_us", "window_us")
OP_SCHEMA = {
    "name": pl.String,
    "calls": pl.Int64,
    "device_us": pl.Float64,
    "idle_before_us": pl.Float64,
    "self_cpu_us": pl.Float64,
}


def us(ns: float | None) -> float | None:
    """Return ``ns`` in µs (three decimals); None stays None."""
    return None if ns is None else round(ns / 1000, 3)


def summary_metrics(s: Mapping[str, Any], window_ns: int | None) -> dict[str, float | None]:
    """Return the compared metrics of one run from its gaps summary ``s`` and its window's
    length. A run with no hardware executions has none but ``executions`` (0); a run with
    executions and no gaps has gap statistics of 0 (no gap is longer). Step time is not in
    a gaps summary: None here (``sample_of`` adds it)."""
    if not s["executions"]:
        return {**dict.fromkeys(COMPARED), "executions": 0}
    out: dict[str, float | None] = {
        "device_time": us(s["busy_ns"]),
        "idle_pct": s["idle_pct"],
        "idle_us": us(s["idle_ns"]),
        "window_us": us(window_ns),
        "step_time_us": None,
        "executions": s["executions"],
        "gap_count": s["gap_count"],
        **{name: us(s[name.replace("_us", "_ns")]) for name in GAP_STATS},
    }
    if not s["gap_count"]:
        out.update(dict.fromkeys(GAP_STATS, 0.0))
    out.update({f"idle_{c}_us": us(ns) for c, ns in s["idle_by_cause_ns"].items()})
    out.update({name: us(s.get(name.replace("_us", "_ns"))) for name in OPTIONAL})
    return out


def step_time_ns(events: pl.DataFrame) -> float | None:
    """Return the mean length of the run's ProfilerStep#N spans (each step from its first
    start to its last end, as ``--step`` measures it: ``host_summary.step_lengths``); None
    without steps."""
    steps = step_lengths(events)
    return None if steps.is_empty() else float(steps["duration_ns"].mean())  # type: ignore[arg-type]


@dataclass(frozen=True)
class Sample:
    """One run of a side: where it came from (``root``; ``source``: trace, gaps JSON or
    baseline), its compared metrics (``COMPARED``, None where undefined) and its ops
    (``OP_SCHEMA``; a gaps JSON lists only the ops with idle before them, without calls or
    device time); ``next_fix``: where asked for, its ``traceana critical`` verdict;
    ``shape``: what it recorded (``shape.shape_of``), None where its source does not say."""

    root: str
    source: str
    metrics: Mapping[str, float | None]
    ops: pl.DataFrame
    next_fix: str | None = None  # the run's critical-path verdict (docs/critical-path.md)
    shape: Mapping[str, str] | None = None  # platform, ranks, devices, steps (shape.py)

    @property
    def host_only(self) -> bool:
        """True for a run with no hardware execution that records host work: a step time
        or ops with self CPU time (``HOST_METRICS``)."""
        m = self.metrics
        return not m["executions"] and any(m.get(k) is not None for k in HOST_METRICS)


@dataclass(frozen=True)
class Side:
    """What one side of a diff is: the path the user gave (``label``) and its runs."""

    label: str
    samples: tuple[Sample, ...]

    @property
    def op_inventory(self) -> bool:
        """True when every run lists all its ops with calls and device time: no gaps JSON, or
        a gaps JSON of a host-only run (its host summary lists every op, calls, self CPU)."""
        return all(s.source != GAPS_JSON or s.host_only for s in self.samples)

    @property
    def host_only(self) -> bool:
        """True when every run of the side records host activity only (``Sample.host_only``)."""
        return bool(self.samples) and all(s.host_only for s in self.samples)

    @property
    def sources(self) -> str:
        """The kinds of sources of the runs, e.g. ``trace`` or ``gaps JSON``."""
        return ", ".join(sorted({s.source for s in self.samples}))


def op_table(op_stats: pl.DataFrame, idle: pl.DataFrame) -> pl.DataFrame:
    """Return per op its calls, device µs and self CPU µs (``op_stats``: an ops table) with
    the idle before it (``idle``: ``GapsResult.ops``; null where no gap came before it)."""
    df = op_stats.select(
        pl.col(c).cast(OP_SCHEMA[c]) for c in ("name", "calls", "device_us", "self_cpu_us")
    )
    if idle.height:
        idle_us = idle.select(name="op", idle_before_us=pl.col("idle_before_ns") / 1000)
        return df.join(idle_us, on="name", how="full", coalesce=True)
    return df.with_columns(idle_before_us=pl.lit(None, pl.Float64))


def sample_of(
    profile: Profile, g: GapsResult, root: str | None = None, *, fix: bool = False
) -> Sample:
    """Return one run as a sample: its gaps ``g`` (computed with the diff's options), its
    ops, its mean step time and its ops' self CPU time; with ``fix``, its next fix
    (``next_fix``). A run with no hardware execution has these host metrics alone (and with
    ``--step N`` the step's span as its window: ``HOST_METRICS``)."""
    metrics = summary_metrics(g.summary, g.window.duration_ns if g.window else None)
    metrics["step_time_us"] = us(step_time_ns(profile.events))
    op_stats = ops(profile).table
    self_cpu = float(op_stats["self_cpu_us"].sum()) if op_stats.height else 0.0
    # none measured (no ops, or ops of no duration): nothing to compare, not "unchanged"
    metrics["self_cpu_us"] = round(self_cpu, 3) if self_cpu > 0 else None
    if not metrics["executions"] and g.window is not None:  # --step N: the step's span
        metrics["window_us"] = us(g.window.duration_ns)
    table = op_table(op_stats, g.ops)
    label = profile.name if root is None else root
    fixed = next_fix(profile) if fix else None
    return Sample(label, TRACE, metrics, table, fixed, shape_of(profile, g))


def side_of(label: str, pairs: list[tuple[Profile, GapsResult]], *, head: bool = False) -> Side:
    """Return the side ``label`` of loaded runs with their gaps; a ``head`` side's first run
    with its next fix (``next_fix``)."""
    return Side(
        label, tuple(sample_of(p, g, fix=head and i == 0) for i, (p, g) in enumerate(pairs))
    )


def next_fix(profile: Profile) -> str | None:
    """The run's ``traceana critical`` verdict where a fix replayed there saves time, else
    None (docs/diff.md, "Next on head")."""
    from trace_analyzer.questions.critical.analysis import next_fix as verdict_of

    return verdict_of(profile)


@dataclass(frozen=True)
class Saved:
    """A summary document read back: its runs and the options they were measured with."""

    samples: tuple[Sample, ...]
    step: int | None
    min_gap_ns: int


def summary_doc(side: Side, *, step: int | None, min_gap_ns: int, version: str) -> dict[str, Any]:
    """Return the summary file ``traceana baseline save`` writes for ``side``: per run the
    compared metrics and per op calls, device µs and idle before (no gap rows)."""
    return {
        "kind": KIND,
        "schema_version": SUMMARY_VERSION,
        "traceana": version,
        "source": side.label,
        "options": {"step": step, "min_gap_ns": min_gap_ns},
        "runs": [
            {
                "root": s.root,
                "source": s.source,
                "metrics": dict(s.metrics),
                **({"shape": dict(s.shape)} if s.shape is not None else {}),
                "ops": s.ops.with_columns(
                    pl.col("device_us", "idle_before_us", "self_cpu_us").round(3)
                )
                .sort("name")
                .to_dicts(),
            }
            for s in side.samples
        ],
    }


def baseline(
    profiles: Sequence[Profile],
    *,
    label: str | None = None,
    step: int | None = None,
    min_gap_ns: int = 0,
) -> dict[str, Any]:
    """Return the summary ``traceana baseline save`` writes of ``profiles`` (one side, its
    runs), to diff against later without their traces: per run the metrics diff compares, per
    op its calls, device µs and idle before. ``label``: the side's name (default: the first
    run's root); ``step``, ``min_gap_ns``: as ``gaps`` measures each run."""
    pairs = [(p, gaps(p, step=step, min_gap_ns=min_gap_ns)) for p in profiles]
    name = label if label is not None else str(profiles[0].root) if profiles else ""
    return summary_doc(side_of(name, pairs), step=step, min_gap_ns=min_gap_ns, version=__version__)


def looks_like_summary(head: bytes) -> bool:
    """True when the first bytes of a JSON file are those of traceana's own JSON (a gaps
    output or a summary file: ``schema_version``), not a trace's (Kineto: ``schemaVersion``,
    ``traceEvents``)."""
    text = head.lstrip()
    return text.startswith(b"{") and b'"schema_version"' in text and b'"traceEvents"' not in text


def read_summary(doc: object, path: str) -> Saved:
    """Return the runs of a parsed summary document (``baseline save``'s or ``gaps --format
    json``'s); InputError naming ``path`` when it is neither or is malformed."""
    check = _Checker(path)
    check.that(isinstance(doc, dict), "not a JSON object")
    assert isinstance(doc, dict)
    if doc.get("kind") == KIND:
        return _read_baseline(doc, check)
    runs = doc.get("runs")
    if "schema_version" in doc and isinstance(runs, list) and runs:
        if all(isinstance(r, dict) and "summary" in r for r in runs):
            return _read_gaps_json(doc, check)
    raise InputError(
        path,
        "neither a `traceana gaps --format json` output nor a `traceana baseline save` file "
        "(no runs with a summary)",
    )


class _Checker:
    """Validation that raises one InputError naming the file and the faulty field."""

    def __init__(self, path: str):
        self.path = path

    def that(self, ok: bool, what: str) -> None:
        if not ok:
            raise InputError(self.path, f"malformed summary: {what}")

    def number(self, v: object, where: str, *, null: bool = True) -> float | None:
        ok = (v is None and null) or (isinstance(v, int | float) and not isinstance(v, bool))
        self.that(ok, f"{where} is {v!r}, not a number")
        return v  # type: ignore[return-value]

    def field(self, d: Mapping[str, Any], key: str, where: str) -> Any:
        self.that(key in d, f"{where} has no {key!r}")
        return d[key]


SUMMARY_KEYS = ("busy_ns", "idle_ns", "executions", "gap_count", "idle_pct")


def _read_gaps_json(doc: dict[str, Any], check: _Checker) -> Saved:
    min_gap = check.number(doc.get("min_gap_ns", 0), "min_gap_ns", null=False)
    samples, steps = [], set()
    for i, run in enumerate(doc["runs"]):
        where = f"runs[{i}]"
        s = check.field(run, "summary", where)
        check.that(isinstance(s, dict), f"{where}.summary is not an object")
        for key in (*SUMMARY_KEYS, *(n.replace("_us", "_ns") for n in GAP_STATS)):
            check.number(check.field(s, key, f"{where}.summary"), f"{where}.summary.{key}")
        causes = check.field(s, "idle_by_cause_ns", f"{where}.summary")
        check.that(isinstance(causes, dict), f"{where}.summary.idle_by_cause_ns is not an object")
        for c, ns in causes.items():
            check.number(ns, f"{where}.summary.idle_by_cause_ns.{c}", null=False)
        window = run.get("window")
        length = None
        if window is not None:
            check.that(isinstance(window, dict), f"{where}.window is not an object")
            length = check.number(check.field(window, "duration_ns", where), f"{where}.window")
            steps.add(_step_of(str(window.get("origin")), check, where))
        metrics = summary_metrics(s, None if length is None else int(length))
        table = _idle_ops(run, check, where)
        host = run.get("host")
        if host is not None:  # a run that records host activity (gaps' host summary)
            check.that(isinstance(host, dict), f"{where}.host is not an object")
            table = _host_metrics(host, metrics, table, check, f"{where}.host")
            if not metrics["executions"] and length is not None:  # --step N: its span
                metrics["window_us"] = us(length)
        samples.append(Sample(str(run.get("root")), GAPS_JSON, metrics, table))
    check.that(len(steps) <= 1, "its runs were measured over different windows")
    step = steps.pop() if steps else None
    return Saved(tuple(samples), step, int(min_gap or 0))


def _host_metrics(
    host: Mapping[str, Any],
    metrics: dict[str, float | None],
    idle_ops: pl.DataFrame,
    check: _Checker,
    where: str,
) -> pl.DataFrame:
    """Set the host metrics of a gaps JSON run from its host summary, as ``sample_of`` measures
    them on the trace: the mean of its steps' lengths and its ops' self CPU time (undefined
    when 0). Return its ops: a host-only run's are the host summary's (calls, self CPU µs)."""
    steps = check.field(host, "steps", where)
    check.that(isinstance(steps, list), f"{where}.steps is not a list")
    lengths = []
    for j, st in enumerate(steps):
        check.that(isinstance(st, dict), f"{where}.steps[{j}] is not an object")
        ns = check.number(check.field(st, "duration_ns", f"{where}.steps[{j}]"),
                          f"{where}.steps[{j}].duration_ns", null=False)  # fmt: skip
        lengths.append(float(ns))  # type: ignore[arg-type]
    metrics["step_time_us"] = us(sum(lengths) / len(lengths)) if lengths else None
    self_cpu = check.number(host.get("self_cpu_us"), f"{where}.self_cpu_us")
    metrics["self_cpu_us"] = round(self_cpu, 3) if self_cpu else None
    if metrics["executions"]:
        return idle_ops
    rows = check.field(host, "ops", where)
    check.that(isinstance(rows, list), f"{where}.ops is not a list")
    out = []
    for j, o in enumerate(rows):
        here = f"{where}.ops[{j}]"
        check.that(isinstance(o, dict) and isinstance(o.get("name"), str), f"{here} has no name")
        calls = check.number(o.get("calls"), f"{here}.calls")
        self_cpu = check.number(o.get("self_cpu_us"), f"{here}.self_cpu_us")
        out.append({"name": o["name"], "calls": calls, "device_us": None, "idle_before_us": None,
                    "self_cpu_us": self_cpu})  # fmt: skip
    return pl.DataFrame(out, schema=OP_SCHEMA, strict=False)


def _step_of(origin: str, check: _Checker, where: str) -> int | None:
    """The ``--step`` a gaps window was measured with (None: the hardware span)."""
    if origin == "hardware span":
        return None
    step = origin.removeprefix("ProfilerStep#")
    check.that(
        step.isdigit(), f"{where}.window is {origin!r}: diff compares the hardware span or a step"
    )
    return int(step)


def _idle_ops(run: Mapping[str, Any], check: _Checker, where: str) -> pl.DataFrame:
    """The ops of a gaps JSON run: the idle before each (no calls, no device time)."""
    rows = run.get("ops", [])
    check.that(isinstance(rows, list), f"{where}.ops is not a list")
    out = []
    for j, o in enumerate(rows):
        here = f"{where}.ops[{j}]"
        check.that(isinstance(o, dict) and isinstance(o.get("op"), str), f"{here} has no op name")
        idle = check.number(o.get("idle_before_ns"), f"{here}.idle_before_ns", null=False)
        out.append({"name": o["op"], "calls": None, "device_us": None, "idle_before_us": us(idle),
                    "self_cpu_us": None})  # fmt: skip
    return pl.DataFrame(out, schema=OP_SCHEMA)


def _read_baseline(doc: dict[str, Any], check: _Checker) -> Saved:
    version = doc.get("schema_version")
    check.that(
        isinstance(version, int) and 1 <= version <= SUMMARY_VERSION,
        f"schema_version {version!r} (this traceana reads 1 to {SUMMARY_VERSION})",
    )
    options = check.field(doc, "options", "the file")
    check.that(isinstance(options, dict), "options is not an object")
    step = check.number(options.get("step"), "options.step")
    min_gap = check.number(options.get("min_gap_ns", 0), "options.min_gap_ns", null=False)
    runs = check.field(doc, "runs", "the file")
    check.that(isinstance(runs, list) and bool(runs), "runs is not a list of runs")
    samples = []
    for i, run in enumerate(runs):
        where = f"runs[{i}]"
        check.that(isinstance(run, dict), f"{where} is not an object")
        got = check.field(run, "metrics", where)
        check.that(isinstance(got, dict), f"{where}.metrics is not an object")
        metrics = {}
        for name in COMPARED:
            if name not in OPTIONAL and (
                not name.startswith("idle_") or name in ("idle_pct", "idle_us")
            ):
                check.field(got, name, f"{where}.metrics")
            metrics[name] = check.number(got.get(name), f"{where}.metrics.{name}")
        source = run.get("source", BASELINE)
        check.that(source in (TRACE, GAPS_JSON, BASELINE), f"{where}.source is {source!r}")
        table = _saved_ops(check.field(run, "ops", where), check, where)
        samples.append(Sample(str(run.get("root")), BASELINE if source == TRACE else source,
                              metrics, table, shape=_saved_shape(run, check, where)))  # fmt: skip
    return Saved(tuple(samples), None if step is None else int(step), int(min_gap or 0))


def _saved_shape(run: Mapping[str, Any], check: _Checker, where: str) -> dict[str, str] | None:
    """A saved run's ``shape`` (shape.py), None in a file written before shapes were saved."""
    got = run.get("shape")
    if got is None:
        return None
    check.that(isinstance(got, dict), f"{where}.shape is not an object")
    for key, value in got.items():
        check.that(isinstance(value, str), f"{where}.shape.{key} is {value!r}, not text")
    return dict(got)


def _saved_ops(rows: object, check: _Checker, where: str) -> pl.DataFrame:
    check.that(isinstance(rows, list), f"{where}.ops is not a list")
    assert isinstance(rows, list)
    out = []
    for j, o in enumerate(rows):
        here = f"{where}.ops[{j}]"
        check.that(isinstance(o, dict) and isinstance(o.get("name"), str), f"{here} has no name")
        row = {"name": o["name"]}
        for key in ("calls", "device_us", "idle_before_us", "self_cpu_us"):  # self CPU: optional
            row[key] = check.number(o.get(key), f"{here}.{key}")
        check.that(row["calls"] is None or float(row["calls"]).is_integer(), f"{here}.calls")
        out.append(row)
    return pl.DataFrame(out, schema=OP_SCHEMA, strict=False)
